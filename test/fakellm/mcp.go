/*
Copyright 2026 The Ergon Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package fakellm

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MCPTool is a tool of the fake MCP server a script may add (served at /mcp by the command):
// a call answers with Result followed by the call's arguments, marked as an error when
// IsError is set. With Elicit, the call first asks the client's person its question (MCP
// elicitation) and answers with Result followed by the action and the values given; an
// elicitation that fails makes the call's result an error that says why.
type MCPTool struct {
	Name        string  `json:"name"`
	Description string  `json:"description,omitempty"`
	Result      string  `json:"result"`
	IsError     bool    `json:"isError,omitempty"`
	Elicit      *Elicit `json:"elicit,omitempty"`
}

// Elicit is the question of an MCPTool: a message and the schema of the values it asks for.
type Elicit struct {
	Message string         `json:"message"`
	Schema  map[string]any `json:"schema,omitempty"`
}

// MCPHandler serves tools as an MCP server over the streamable HTTP transport, built with the
// official Go SDK.
func MCPHandler(tools []MCPTool) http.Handler {
	s := mcp.NewServer(&mcp.Implementation{Name: "fakellm", Version: "v1"}, nil)
	for _, t := range tools {
		s.AddTool(&mcp.Tool{Name: t.Name, Description: t.Description, InputSchema: map[string]any{"type": "object"}},
			func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				if e := t.Elicit; e != nil {
					res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: e.Message, RequestedSchema: e.Schema})
					if err != nil {
						return &mcp.CallToolResult{IsError: true,
							Content: []mcp.Content{&mcp.TextContent{Text: "the question failed: " + err.Error()}}}, nil
					}
					content, _ := json.Marshal(res.Content) // values the SDK decoded from JSON
					return &mcp.CallToolResult{IsError: t.IsError,
						Content: []mcp.Content{&mcp.TextContent{Text: t.Result + " " + res.Action + " " + string(content)}}}, nil
				}
				return &mcp.CallToolResult{IsError: t.IsError,
					Content: []mcp.Content{&mcp.TextContent{Text: t.Result + " " + string(req.Params.Arguments)}}}, nil
			})
	}
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
}
