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

package planner

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/agentspec"
	"github.com/ergon-dev/ergon/internal/compile"
	"github.com/ergon-dev/ergon/internal/naming"
)

const askingURL = "http://mcp.tools:8080/mcp"

func elicitStep(t *testing.T) *compile.Step {
	t.Helper()
	spec := ergonv1alpha1.SceneSpec{
		Models: map[string]ergonv1alpha1.ModelSpec{"default": {BaseURL: "http://llm/v1", Model: "m"}},
		Steps: []ergonv1alpha1.Step{{Name: "deploy", Agent: &ergonv1alpha1.AgentStep{Prompt: "deploy", Tools: []ergonv1alpha1.AgentTool{
			{MCP: &ergonv1alpha1.MCPTool{URL: "http://other:8080/mcp", Allow: []string{"search"}}},
			{MCP: &ergonv1alpha1.MCPTool{URL: askingURL, Allow: []string{"deploy"}}, Ask: &ergonv1alpha1.AskHuman{
				Approvers: &ergonv1alpha1.Approvers{Groups: []string{"ops"}}, Timeout: &metav1.Duration{Duration: 20 * time.Minute}}},
		}}}},
	}
	scene, errs := compile.Compile(&spec)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	return scene.Steps["deploy"]
}

func TestElicitGate(t *testing.T) {
	step := elicitStep(t)
	schema := json.RawMessage(`{"type":"object","properties":{"region":{"type":"string","enum":["eu","us"]}}}`)
	for _, c := range []struct {
		name string
		ask  agentspec.Ask
		err  string
	}{
		{name: "a question of the server that may ask", ask: agentspec.Ask{ID: "e1", Server: askingURL, Message: "Which region?", Schema: schema}},
		{name: "a server that may not ask", err: "no MCP server of the step at http://other:8080/mcp may ask",
			ask: agentspec.Ask{ID: "e1", Server: "http://other:8080/mcp", Message: "Which region?", Schema: schema}},
		{name: "a server the step does not use", err: "no MCP server",
			ask: agentspec.Ask{ID: "e1", Server: "http://evil/mcp", Message: "Which region?", Schema: schema}},
		{name: "no message", err: "message is empty",
			ask: agentspec.Ask{ID: "e1", Server: askingURL, Message: " ", Schema: schema}},
		{name: "an id the runtime never gives", err: "id",
			ask: agentspec.Ask{ID: strings.Repeat("x", 40), Server: askingURL, Message: "Which region?", Schema: schema}},
		{name: "a schema no form holds", err: "not one a person can be asked with",
			ask: agentspec.Ask{ID: "e1", Server: askingURL, Message: "Which region?", Schema: json.RawMessage(`{"type":"object","if":{}}`)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			req, err := ElicitGate("r1", step, 3, c.ask)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want one with %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if req.ToolCall != "elicit/3/e1" || req.Name != naming.ToolCallName("r1", "deploy", "elicit/3/e1") || !req.Elicit {
				t.Errorf("request = %+v", req)
			}
			if req.Tool == nil || string(req.Tool.MCP.URL) != askingURL {
				t.Errorf("the Gate's tool = %+v, want the server that asks", req.Tool)
			}
			if req.Message != "The MCP server "+askingURL+" asks: Which region?" || string(req.Input.Raw) != string(schema) {
				t.Errorf("message %q, input %s", req.Message, req.Input.Raw)
			}
		})
	}
}

func TestElicitAnswer(t *testing.T) {
	step := elicitStep(t)
	tool := &step.Spec.Agent.Tools[1]
	for _, c := range []struct {
		name string
		gate GateState
		want string // the answer as JSON; "" for none yet
	}{
		{name: "undecided", gate: GateState{}},
		{name: "answered", gate: GateState{Decided: true, Option: "approve", DecidedBy: "alice", Values: `{"region":"eu"}`},
			want: `{"action":"accept","content":{"region":"eu"},"by":"alice"}`},
		{name: "answered with nothing to give", gate: GateState{Decided: true, Option: "approve", DecidedBy: "alice"},
			want: `{"action":"accept","content":{},"by":"alice"}`},
		{name: "declined", gate: GateState{Decided: true, Option: "reject", DecidedBy: "bob", Comment: "not now"},
			want: `{"action":"decline","by":"bob","why":"not now"}`},
		{name: "timed out", gate: GateState{Decided: true, TimedOut: true, DecidedBy: "timeout", Option: "reject"},
			want: `{"action":"cancel","why":"nobody answered within 20m0s"}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, ok := ElicitAnswer(tool, c.gate)
			if !ok {
				if c.want != "" {
					t.Fatalf("no answer, want %s", c.want)
				}
				return
			}
			got, _ := json.Marshal(a)
			if string(got) != c.want {
				t.Errorf("answer = %s, want %s", got, c.want)
			}
		})
	}
	// Without a timeout of its own, an MCP server's question waits 10 minutes.
	if d := AskTimeout(&ergonv1alpha1.AgentTool{MCP: &ergonv1alpha1.MCPTool{URL: askingURL}, Ask: &ergonv1alpha1.AskHuman{}}); d != 10*time.Minute {
		t.Errorf("default = %s", d)
	}
}
