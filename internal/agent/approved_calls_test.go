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
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ergon-dev/ergon/internal/agentspec"
	"github.com/ergon-dev/ergon/test/fakellm"
)

// mcpApprovalHarness is an agent whose MCP server offers search, which needs approval, and
// close_issue, which does not; the model calls both in its first turn.
func mcpApprovalHarness(t *testing.T) (*harness, *mcpServer) {
	m := newMCPServer(t)
	script := fakellm.Script{Rules: []fakellm.Rule{
		{Match: fakellm.Match{LastRole: "user"}, Reply: fakellm.Reply{ToolCalls: []fakellm.ToolCall{
			{Name: "search", Arguments: `{"query":"crash"}`},
			{Name: "close_issue", Arguments: `{"id":7}`},
		}}},
		{Match: fakellm.Match{LastRole: "tool"}, Reply: fakellm.Reply{Content: "finished"}},
	}}
	spec := mcpSpec(m.url, []string{"127.0.0.1"}, "search", "close_issue")
	spec.Approve = []string{"search"}
	h := newHarness(t, script, spec)
	h.runner.Tools.HTTP = NewHTTPClient(nil, spec.HTTP.AllowHosts)
	h.runner.Attempt = 1
	return h, m
}

func TestAnApprovedMCPCallReachesTheServerOnce(t *testing.T) {
	h, m := mcpApprovalHarness(t)
	cp := handedOver(t, h.runner)
	c := cp.Pending.Calls
	if len(c) != 1 || c[0].Tool != "search" || c[0].Kind != agentspec.RequestApproval || c[0].Arguments != `{"query":"crash"}` {
		t.Fatalf("pending = %+v", cp.Pending)
	}
	if got := m.called(); !slices.Equal(got, []string{`close_issue {"id":7}`}) {
		t.Fatalf("before the approval the server saw %q; want only the call that needs none", got)
	}
	out, tr, f := resumed(t, h, cp, agentspec.ToolResult{ID: c[0].ID,
		Approval: &agentspec.Approval{Approved: true, By: "alice", Gate: "g-1"}})
	if f != nil || out != "finished" {
		t.Fatalf("resumed: %q, %v", out, f)
	}
	if got := m.called(); len(got) != 2 || got[1] != `search {"query":"crash"}` {
		t.Fatalf("the server saw %q; want the approved call once", got)
	}
	reqs := h.llm.Requests()
	last := reqs[len(reqs)-1].Messages
	if len(reqs) != 2 || last[len(last)-1].ToolCallID != c[0].ID || !strings.Contains(last[len(last)-1].Content, "found 2 issues for crash") {
		t.Fatalf("%d model calls; the last message %+v", len(reqs), last[len(last)-1])
	}
	if js := transcriptJSON(t, tr); !strings.Contains(js, "was approved by alice (Gate g-1)") {
		t.Errorf("the transcript does not say who approved:\n%s", js)
	}
}

func TestARejectedMCPCallNeverReachesTheServer(t *testing.T) {
	h, m := mcpApprovalHarness(t)
	cp := handedOver(t, h.runner)
	c := cp.Pending.Calls[0]
	out, _, f := resumed(t, h, cp, agentspec.ToolResult{ID: c.ID, Error: true,
		Content:  "the call was rejected by bob: not on Fridays",
		Approval: &agentspec.Approval{By: "bob", Comment: "not on Fridays", Gate: "g-1"}})
	if f != nil || out != "finished" {
		t.Fatalf("resumed: %q, %v", out, f)
	}
	for _, call := range m.called() {
		if strings.HasPrefix(call, "search") {
			t.Fatalf("the rejected call reached the server: %q", m.called())
		}
	}
	last := h.llm.Requests()[1].Messages
	if got := last[len(last)-1]; got.ToolCallID != c.ID || got.Content != "the call was rejected by bob: not on Fridays" {
		t.Fatalf("the model got %+v", got)
	}
}

func TestApproveNamesATool(t *testing.T) {
	spec := Spec{Model: ModelConfig{BaseURL: "http://x/v1", Model: "m"}, Prompt: "p", MaxTurns: 1,
		MCP: []MCPServer{{URL: "http://a/mcp", Allow: []string{"search"}}}, Approve: []string{"search"}}
	if err := CheckSpec(&spec); err != nil {
		t.Fatalf("approval of an MCP server's tool: %v", err)
	}
	spec.Approve = []string{"delete_all"}
	if err := CheckSpec(&spec); err == nil || !strings.Contains(err.Error(), `approve: "delete_all" is not one of the step's built-in or MCP tools`) {
		t.Fatalf("approval of a tool nobody offers: %v", err)
	}
}

// blockingMCPServer offers deploy, which counts its calls and returns only once release is
// closed (or its request ends).
type blockingMCPServer struct {
	url     string
	mu      sync.Mutex
	calls   int
	started chan struct{}
	release chan struct{}
}

func newBlockingMCPServer(t *testing.T) *blockingMCPServer {
	t.Helper()
	b := &blockingMCPServer{started: make(chan struct{}, 8), release: make(chan struct{})}
	s := mcp.NewServer(&mcp.Implementation{Name: "deployer", Version: "v1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "deploy", Description: "Deploy to production."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			b.mu.Lock()
			b.calls++
			b.mu.Unlock()
			b.started <- struct{}{}
			select {
			case <-ctx.Done():
			case <-b.release:
			case <-time.After(10 * time.Second):
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "deployed"}}}, nil, nil
		})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(func() {
		close(b.release)
		srv.Close()
	})
	b.url = srv.URL + "/mcp"
	return b
}

func (b *blockingMCPServer) count() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.calls
}

func TestAnApprovedCallIsNotRunAgainAfterTheAttemptThatStartedItIsKilled(t *testing.T) {
	b := newBlockingMCPServer(t)
	script := fakellm.Script{Rules: []fakellm.Rule{
		{Match: fakellm.Match{LastRole: "user"}, Reply: fakellm.Reply{ToolCalls: []fakellm.ToolCall{{Name: "deploy", Arguments: `{}`}}}},
		{Match: fakellm.Match{LastRole: "tool"}, Reply: fakellm.Reply{Content: "finished"}},
	}}
	spec := Spec{MCP: []MCPServer{{URL: b.url, Allow: []string{"deploy"}}}, HTTP: HTTPConfig{AllowHosts: []string{"127.0.0.1"}},
		Approve: []string{"deploy"}}
	h := newHarness(t, script, spec)
	h.runner.Tools.HTTP = NewHTTPClient(nil, spec.HTTP.AllowHosts)
	h.runner.Attempt = 1
	cp := handedOver(t, h.runner)
	call := cp.Pending.Calls[0]
	approved := &agentspec.Results{Attempt: 1, Results: []agentspec.ToolResult{{ID: call.ID,
		Approval: &agentspec.Approval{Approved: true, By: "alice", Gate: "g-1"}}}}

	// Attempt 2 runs the approved call and is killed while the call runs.
	second := *h.runner
	log := &progressLog{}
	second.Resume, second.Attempt, second.Results, second.Progress = cp, 2, approved, log
	ctx, kill := context.WithCancel(context.Background())
	go func() {
		<-b.started
		kill()
	}()
	_, _, err := second.Run(ctx)
	kill()
	f, _ := err.(*Failure)
	wantFailure(t, f, ReasonCancelled, "stopped")
	if b.count() != 1 {
		t.Fatalf("the server saw %d calls, want 1", b.count())
	}
	// What the controller keeps from attempt 2's log: the checkpoint that marks the call started.
	_, raw := log.lastCheckpoint(t)
	kept, rerr := ReadCheckpoint(raw)
	if rerr != nil || kept.Pending == nil || kept.Pending.Attempt != 1 || !slices.Equal(kept.Started, []string{call.ID}) {
		t.Fatalf("the checkpoint kept from attempt 2: %+v, %v", kept, rerr)
	}

	// Attempt 3 resumes from it, with the same results: the call is not run again, and the
	// model is told its outcome is unknown.
	third := *h.runner
	third.Resume, third.Attempt, third.Results, third.Progress = kept, 3, approved, &progressLog{}
	out, tr, err := third.Run(context.Background())
	if err != nil || out != "finished" {
		t.Fatalf("attempt 3: %q, %v", out, err)
	}
	if b.count() != 1 {
		t.Fatalf("the server saw %d calls after attempt 3, want 1: the approved call ran again", b.count())
	}
	reqs := h.llm.Requests()
	last := reqs[len(reqs)-1].Messages
	if len(reqs) != 2 || last[len(last)-1].ToolCallID != call.ID || last[len(last)-1].Content != outcomeUnknown {
		t.Fatalf("%d model calls; the model got %+v", len(reqs), last[len(last)-1])
	}
	if js := transcriptJSON(t, tr); !strings.Contains(js, "was started by an earlier attempt") {
		t.Errorf("the transcript does not note the call not run again:\n%s", js)
	}
}

func TestAnApprovedCallThatFinishedIsNotMarkedStarted(t *testing.T) {
	h := approvalHarness(t)
	cp := handedOver(t, h.runner)
	next := *h.runner
	log := &progressLog{}
	next.Resume, next.Attempt, next.Progress = cp, cp.Pending.Attempt+1, log
	next.Results = &agentspec.Results{Attempt: cp.Pending.Attempt, Results: []agentspec.ToolResult{{ID: cp.Pending.Calls[0].ID,
		Approval: &agentspec.Approval{Approved: true, By: "alice", Gate: "g-1"}}}}
	if out, _, err := next.Run(context.Background()); err != nil || out != "finished" {
		t.Fatalf("resumed: %q, %v", out, err)
	}
	// Two checkpoints: the one that marks the call started, then the one after its result.
	frames := strings.Count(log.buf.String(), "ERGON PROGRESS")
	_, raw := log.lastCheckpoint(t)
	last, err := ReadCheckpoint(raw)
	if err != nil || frames != 2 || last.Pending != nil || len(last.Started) != 0 {
		t.Fatalf("%d progress lines; the last checkpoint %+v, %v", frames, last, err)
	}
}
