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

package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Tool is a function the model may call. Adding a tool is one file that calls registerTool in
// its init.
type Tool struct {
	Name        string
	Description string
	// Parameters is the JSON Schema of the arguments; calls are validated against it before
	// Call runs.
	Parameters map[string]any
	// NeedsWorkspace is true for tools that exist only for steps bound to a Workspace.
	NeedsWorkspace bool
	Call           func(ctx context.Context, env *ToolEnv, args json.RawMessage) (string, error)
	// Waits is added to a call's timeout: the time a call may wait for people (the tools of
	// an MCP server that may ask questions; elicit.go).
	Waits time.Duration

	schema *jsonschema.Schema
}

// ToolEnv is what tools may use.
type ToolEnv struct {
	// Workspace is the directory the filesystem and shell tools are confined to.
	Workspace string
	// HTTP is the client of http_fetch, with the address guard in its dialer.
	HTTP *http.Client
	// Timeout bounds one call; MaxResult caps what a call returns to the model.
	Timeout   time.Duration
	MaxResult int
	// Redactor removes secret values from results, before they are capped; nil removes none.
	Redactor *Redactor
	// Env is the environment the shell tool gives commands: no secrets.
	Env []string
	// Memory names the Scene's memory the remember tool proposes writes to; empty: none.
	Memory string
}

// Defaults of a tool call.
const (
	DefaultToolTimeout = 30 * time.Second
	DefaultToolResult  = 64 << 10
)

var registry = map[string]*Tool{}

// jsonSchema reads a tool's parameter schema written as JSON.
func jsonSchema(s string) map[string]any {
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		panic(err)
	}
	return m
}

func registerTool(t *Tool) {
	b, err := json.Marshal(t.Parameters)
	if err != nil {
		panic(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		panic(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(t.Name+".json", doc); err != nil {
		panic(err)
	}
	t.schema = c.MustCompile(t.Name + ".json")
	registry[t.Name] = t
}

// call validates the arguments and runs the tool within its timeout. An error is meant for
// the model: it goes back as the tool's result. The result is redacted before it is capped at
// env.MaxResult: capping first could cut a secret in two and leave a part no redactor finds.
func (t *Tool) call(ctx context.Context, env *ToolEnv, args string) (string, error) {
	if args == "" {
		args = "{}"
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(args)))
	if err != nil {
		return "", fmt.Errorf("the arguments are not JSON: %v", err)
	}
	if t.schema != nil { // nil for an MCP tool whose schema only its server can check
		if err := t.schema.Validate(v); err != nil {
			return "", fmt.Errorf("invalid arguments: %v", err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, env.Timeout+t.Waits)
	defer cancel()
	out, err := t.Call(ctx, env, json.RawMessage(args))
	if err == nil && ctx.Err() != nil {
		err = fmt.Errorf("the call ran past its timeout of %s", env.Timeout+t.Waits)
	}
	return capString(env.Redactor.String(out), env.MaxResult), err
}

// capString cuts s to at most n bytes and says so.
func capString(s string, n int) string {
	if n <= 0 || len(s) <= n {
		return s
	}
	return s[:n] + fmt.Sprintf("\n[truncated: %d of %d bytes shown]", n, len(s))
}
