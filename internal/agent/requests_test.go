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
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ergon-dev/ergon/internal/agentspec"
	"github.com/ergon-dev/ergon/test/fakellm"
)

// summarizeTool is a Scene tool whose Scene takes one param, text.
var summarizeTool = agentspec.CallTool{Name: "summarize", Description: "Summarize a text.", Kind: agentspec.RequestScene,
	Scene: "summarizer", Parameters: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},` +
		`"required":["text"],"additionalProperties":false}`)}

// handedOver runs an attempt that must end with tool calls for the controller and returns
// the checkpoint that lists them.
func handedOver(t *testing.T, r *Runner) *Checkpoint {
	t.Helper()
	log := &progressLog{}
	r.Progress = log
	_, tr, err := r.Run(context.Background())
	f, _ := err.(*Failure)
	wantFailure(t, f, agentspec.ReasonToolCallsPending, "waits for")
	if f.ExitCode != ExitPending || tr.Outcome != agentspec.ReasonToolCallsPending {
		t.Fatalf("exit code %d, outcome %s", f.ExitCode, tr.Outcome)
	}
	prog, raw := log.lastCheckpoint(t)
	if prog.Reset {
		t.Fatal("handing calls over reset the checkpoint")
	}
	cp, rerr := ReadCheckpoint(raw)
	if rerr != nil || cp.Pending == nil {
		t.Fatalf("checkpoint %+v, %v: want pending requests", cp, rerr)
	}
	if got := agentspec.PendingOf(raw); got == nil || len(got.Calls) != len(cp.Pending.Calls) {
		t.Fatalf("agentspec.PendingOf reads %+v", got)
	}
	return cp
}

// resumed runs the next attempt from cp with the controller's results.
func resumed(t *testing.T, h *harness, cp *Checkpoint, results ...agentspec.ToolResult) (string, *Transcript, *Failure) {
	t.Helper()
	next := *h.runner
	next.Resume, next.Attempt = cp, cp.Pending.Attempt+1
	next.Results = &agentspec.Results{Attempt: cp.Pending.Attempt, Results: results}
	next.Progress = &progressLog{}
	out, tr, err := next.Run(context.Background())
	f, _ := err.(*Failure)
	return out, tr, f
}

func TestASceneToolCallGoesToTheControllerAndItsOutputReachesTheModel(t *testing.T) {
	script := fakellm.Script{Rules: []fakellm.Rule{
		{Match: fakellm.Match{LastRole: "user"}, Reply: fakellm.Reply{ToolCalls: []fakellm.ToolCall{
			{Name: "summarize", Arguments: `{"text":"a long report"}`},
			{Name: "summarize", Arguments: `{"txt":"misspelt"}`},
			{Name: "list_files", Arguments: `{"path":"."}`},
		}}},
		{Match: fakellm.Match{LastContains: "SHORT SUMMARY"}, Reply: fakellm.Reply{Content: "done: SHORT SUMMARY"}},
	}}
	h := newHarness(t, script, Spec{Tools: []string{"list_files"}, Workspace: t.TempDir(),
		CallTools: []agentspec.CallTool{summarizeTool}})
	h.runner.Tools.Workspace = h.runner.Spec.Workspace
	if err := os.WriteFile(filepath.Join(h.runner.Spec.Workspace, "notes.txt"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	h.runner.Attempt = 1
	cp := handedOver(t, h.runner)
	calls := cp.Pending.Calls
	if cp.Pending.Attempt != 1 || len(calls) != 1 || calls[0].Tool != "summarize" || calls[0].Kind != agentspec.RequestScene ||
		calls[0].Arguments != `{"text":"a long report"}` || calls[0].NeedsApproval() {
		t.Fatalf("pending = %+v", cp.Pending)
	}
	// The turn's other calls ran: the list and the refused arguments are in the conversation.
	var tools []string
	for _, m := range cp.Conversation {
		if m.Role == RoleTool {
			tools = append(tools, m.Content)
		}
	}
	if len(tools) != 2 || !strings.Contains(strings.Join(tools, "\n"), "invalid arguments") ||
		!strings.Contains(strings.Join(tools, "\n"), "notes.txt") {
		t.Fatalf("the turn's other results = %q", tools)
	}
	if len(h.llm.Requests()) != 1 {
		t.Fatalf("%d model calls before the hand-over, want 1", len(h.llm.Requests()))
	}
	var offered []map[string]any
	_ = json.Unmarshal(h.llm.Requests()[0].Tools, &offered)
	if !strings.Contains(string(h.llm.Requests()[0].Tools), `"required":["text"]`) || len(offered) != 2 {
		t.Fatalf("the tools offered to the model = %s", h.llm.Requests()[0].Tools)
	}

	out, tr, f := resumed(t, h, cp, agentspec.ToolResult{ID: calls[0].ID, Content: "SHORT SUMMARY", ChildRun: "r-summarizer-1"})
	if f != nil {
		t.Fatalf("the resumed attempt failed: %v", f)
	}
	if out != "done: SHORT SUMMARY" {
		t.Fatalf("output %q", out)
	}
	reqs := h.llm.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model calls in all, want 2: no turn asked again", len(reqs))
	}
	last := reqs[1].Messages
	if n := len(last); last[n-1].Role != "tool" || last[n-1].ToolCallID != calls[0].ID || last[n-1].Content != "SHORT SUMMARY" {
		t.Fatalf("the second request ends with %+v", last[n-1])
	}
	js := transcriptJSON(t, tr)
	for _, want := range []string{`waits for the controller: a child Run of its Scene`, `"childRun":"r-summarizer-1"`,
		`ran as child Run r-summarizer-1`} {
		if !strings.Contains(js, want) {
			t.Errorf("the transcript lacks %s:\n%s", want, js)
		}
	}
}

func approvalHarness(t *testing.T) *harness {
	script := fakellm.Script{Rules: []fakellm.Rule{
		{Match: fakellm.Match{LastRole: "user"}, Reply: fakellm.Reply{ToolCalls: []fakellm.ToolCall{
			{Name: "list_files", Arguments: `{"path":"."}`}}}},
		{Match: fakellm.Match{LastRole: "tool"}, Reply: fakellm.Reply{Content: "finished"}},
	}}
	h := newHarness(t, script, Spec{Tools: []string{"list_files"}, Approve: []string{"list_files"}, Workspace: t.TempDir()})
	h.runner.Tools.Workspace = h.runner.Spec.Workspace
	if err := os.WriteFile(filepath.Join(h.runner.Spec.Workspace, "secret-plans.txt"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	h.runner.Attempt = 3
	return h
}

func TestAnApprovedCallRunsInTheNextAttempt(t *testing.T) {
	h := approvalHarness(t)
	cp := handedOver(t, h.runner)
	c := cp.Pending.Calls[0]
	if cp.Pending.Attempt != 3 || c.Kind != agentspec.RequestApproval || !c.NeedsApproval() {
		t.Fatalf("pending = %+v", cp.Pending)
	}
	for _, m := range cp.Conversation {
		if m.Role == RoleTool {
			t.Fatalf("the call ran before its approval: %+v", m)
		}
	}
	out, tr, f := resumed(t, h, cp, agentspec.ToolResult{ID: c.ID,
		Approval: &agentspec.Approval{Approved: true, By: "alice", Gate: "g-1"}})
	if f != nil || out != "finished" {
		t.Fatalf("resumed: %q, %v", out, f)
	}
	reqs := h.llm.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model calls, want 2", len(reqs))
	}
	last := reqs[1].Messages[len(reqs[1].Messages)-1]
	if last.Role != "tool" || !strings.Contains(last.Content, "secret-plans.txt") {
		t.Fatalf("the approved call's result = %+v", last)
	}
	js := transcriptJSON(t, tr)
	for _, want := range []string{`was approved by alice (Gate g-1)`, `"approval":{"approved":true,"by":"alice","gate":"g-1"}`} {
		if !strings.Contains(js, want) {
			t.Errorf("the transcript lacks %s:\n%s", want, js)
		}
	}
}

func TestARejectedCallReturnsTheRejectionToTheModel(t *testing.T) {
	h := approvalHarness(t)
	cp := handedOver(t, h.runner)
	c := cp.Pending.Calls[0]
	out, tr, f := resumed(t, h, cp, agentspec.ToolResult{ID: c.ID, Error: true,
		Content:  "the call was rejected by bob: not today",
		Approval: &agentspec.Approval{By: "bob", Comment: "not today", Gate: "g-1"}})
	if f != nil || out != "finished" {
		t.Fatalf("resumed: %q, %v", out, f)
	}
	last := h.llm.Requests()[1].Messages
	got := last[len(last)-1]
	if got.Content != "the call was rejected by bob: not today" {
		t.Fatalf("the model got %+v", got)
	}
	js := transcriptJSON(t, tr)
	if strings.Contains(js, "secret-plans.txt") {
		t.Fatal("the rejected call ran")
	}
	if !strings.Contains(js, "was rejected by bob (Gate g-1): not today") {
		t.Fatalf("the transcript does not say who rejected:\n%s", js)
	}
}

func TestAResumeWithoutResultsHandsTheCallsOverAgain(t *testing.T) {
	h := approvalHarness(t)
	cp := handedOver(t, h.runner)
	next := *h.runner
	next.Resume, next.Attempt = cp, 4
	again := handedOver(t, &next)
	if again.Pending.Attempt != 4 || again.Pending.Calls[0].ID != cp.Pending.Calls[0].ID || again.Requests != 1 {
		t.Fatalf("handed over again: %+v (requests %d)", again.Pending, again.Requests)
	}
	if len(h.llm.Requests()) != 1 {
		t.Fatalf("%d model calls, want 1", len(h.llm.Requests()))
	}
}

func TestRequestsAreBoundedPerTurn(t *testing.T) {
	var calls []fakellm.ToolCall
	for range agentspec.MaxRequestsPerTurn + 2 {
		calls = append(calls, fakellm.ToolCall{Name: "summarize", Arguments: `{"text":"t"}`})
	}
	h := newHarness(t, fakellm.Script{Rules: []fakellm.Rule{{Reply: fakellm.Reply{ToolCalls: calls}}}},
		Spec{CallTools: []agentspec.CallTool{summarizeTool}})
	cp := handedOver(t, h.runner)
	if len(cp.Pending.Calls) != agentspec.MaxRequestsPerTurn {
		t.Fatalf("%d requests, want %d", len(cp.Pending.Calls), agentspec.MaxRequestsPerTurn)
	}
	refused := 0
	for _, m := range cp.Conversation {
		if m.Role == RoleTool && strings.Contains(m.Content, "may wait for the controller") {
			refused++
		}
	}
	if refused != 2 {
		t.Fatalf("%d calls refused, want 2", refused)
	}
}

func TestCallToolsAreChecked(t *testing.T) {
	for _, tc := range []struct {
		spec Spec
		want string
	}{
		{Spec{CallTools: []agentspec.CallTool{{Name: "http_fetch", Kind: agentspec.RequestScene}}}, "built-in"},
		{Spec{CallTools: []agentspec.CallTool{{Name: "x", Kind: "teleport"}}}, `kind "teleport"`},
		{Spec{CallTools: []agentspec.CallTool{{Name: "x", Kind: agentspec.RequestScene, Parameters: json.RawMessage(`{"type":7}`)}}},
			"parameters"},
		{Spec{Approve: []string{"shell"}}, `approve: "shell"`},
	} {
		tc.spec.Model, tc.spec.Prompt, tc.spec.MaxTurns = ModelConfig{BaseURL: "http://x/v1", Model: "m"}, "p", 1
		if err := CheckSpec(&tc.spec); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("CheckSpec(%+v) = %v, want %q", tc.spec, err, tc.want)
		}
	}
}
