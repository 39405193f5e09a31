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
	"encoding/json"
	"strings"
	"testing"

	"github.com/ergon-dev/ergon/internal/agentspec"
	"github.com/ergon-dev/ergon/test/fakellm"
)

// lintTool is a container tool whose arguments name a path.
var lintTool = agentspec.CallTool{Name: "lint", Description: "Lint a directory.", Kind: agentspec.RequestContainer,
	Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)}

func TestAContainerToolCallGoesToTheControllerAndItsPodsOutputReachesTheModel(t *testing.T) {
	script := fakellm.Script{Rules: []fakellm.Rule{
		{Match: fakellm.Match{LastRole: "user"}, Reply: fakellm.Reply{ToolCalls: []fakellm.ToolCall{
			{Name: "lint", Arguments: `{"path":"./cmd"}`},
			{Name: "lint", Arguments: `{"dir":"./cmd"}`},
		}}},
		{Match: fakellm.Match{LastContains: "2 FINDINGS"}, Reply: fakellm.Reply{Content: "fixed: 2 FINDINGS"}},
	}}
	h := newHarness(t, script, Spec{CallTools: []agentspec.CallTool{lintTool}})
	h.runner.Attempt = 1
	cp := handedOver(t, h.runner)
	calls := cp.Pending.Calls
	if len(calls) != 1 || calls[0].Tool != "lint" || calls[0].Kind != agentspec.RequestContainer ||
		calls[0].Arguments != `{"path":"./cmd"}` || calls[0].NeedsApproval() {
		t.Fatalf("pending = %+v", cp.Pending)
	}
	// The call whose arguments do not fit the schema went back to the model at once.
	var refused []string
	for _, m := range cp.Conversation {
		if m.Role == RoleTool {
			refused = append(refused, m.Content)
		}
	}
	if len(refused) != 1 || !strings.Contains(refused[0], "invalid arguments") {
		t.Fatalf("the turn's other results = %q", refused)
	}
	if !strings.Contains(string(h.llm.Requests()[0].Tools), `"name":"lint"`) {
		t.Fatalf("the tools offered to the model = %s", h.llm.Requests()[0].Tools)
	}

	out, tr, f := resumed(t, h, cp, agentspec.ToolResult{ID: calls[0].ID, Content: "2 FINDINGS", ToolPod: "r-work-0123456789"})
	if f != nil {
		t.Fatalf("the resumed attempt failed: %v", f)
	}
	if out != "fixed: 2 FINDINGS" {
		t.Fatalf("output %q", out)
	}
	reqs := h.llm.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model calls in all, want 2: no turn asked again", len(reqs))
	}
	last := reqs[1].Messages
	if n := len(last); last[n-1].Role != "tool" || last[n-1].ToolCallID != calls[0].ID || last[n-1].Content != "2 FINDINGS" {
		t.Fatalf("the second request ends with %+v", last[n-1])
	}
	js := transcriptJSON(t, tr)
	for _, want := range []string{`waits for the controller: a one-shot pod of its container`, `"toolPod":"r-work-0123456789"`,
		`ran as tool pod r-work-0123456789`} {
		if !strings.Contains(js, want) {
			t.Errorf("the transcript lacks %s:\n%s", want, js)
		}
	}
}

func TestAFailedContainerToolCallReachesTheModelAsAnError(t *testing.T) {
	script := fakellm.Script{Rules: []fakellm.Rule{
		{Match: fakellm.Match{LastRole: "user"}, Reply: fakellm.Reply{ToolCalls: []fakellm.ToolCall{
			{Name: "lint", Arguments: `{"path":"."}`}}}},
		{Match: fakellm.Match{LastContains: "exit code 2"}, Reply: fakellm.Reply{Content: "the linter failed"}},
	}}
	h := newHarness(t, script, Spec{CallTools: []agentspec.CallTool{lintTool}})
	h.runner.Attempt = 1
	cp := handedOver(t, h.runner)
	out, tr, f := resumed(t, h, cp, agentspec.ToolResult{ID: cp.Pending.Calls[0].ID, Error: true,
		Content: "error: the tool pod p failed (exit code 2)", ToolPod: "p"})
	if f != nil || out != "the linter failed" {
		t.Fatalf("output %q, failure %v", out, f)
	}
	if !strings.Contains(transcriptJSON(t, tr), `"error":true`) {
		t.Fatalf("the transcript does not mark the result an error")
	}
}

func TestASpecWithAnUnknownCallToolKindIsRefused(t *testing.T) {
	bad := lintTool
	bad.Kind = "teleport"
	if errs := checkCallTools(&Spec{CallTools: []agentspec.CallTool{lintTool}}); len(errs) != 0 {
		t.Fatalf("a container tool is refused: %v", errs)
	}
	if errs := checkCallTools(&Spec{CallTools: []agentspec.CallTool{bad}}); len(errs) != 1 ||
		!strings.Contains(errs[0].Error(), `kind "teleport" is not supported`) {
		t.Fatalf("errs = %v", errs)
	}
}
