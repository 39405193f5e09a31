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
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestMCPHandlerServesTheScriptsTools(t *testing.T) {
	srv := httptest.NewServer(MCPHandler([]MCPTool{{Name: "status", Result: "all green"}, {Name: "broken", Result: "no", IsError: true}}))
	defer srv.Close()
	ctx := context.Background()
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v1"}, nil)
	sess, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sess.Close() }()
	list, err := sess.ListTools(ctx, nil)
	if err != nil || len(list.Tools) != 2 {
		t.Fatalf("tools %v, %v", list, err)
	}
	for name, want := range map[string]struct {
		text    string
		isError bool
	}{"status": {`all green {"sprint":43}`, false}, "broken": {`no {"sprint":43}`, true}} {
		res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{"sprint": 43}})
		if err != nil {
			t.Fatal(err)
		}
		if text := res.Content[0].(*mcp.TextContent).Text; text != want.text || res.IsError != want.isError {
			t.Errorf("%s: %q (isError %v); want %q (%v)", name, text, res.IsError, want.text, want.isError)
		}
	}
}
