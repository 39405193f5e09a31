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

// message is the controller's result for a chat step's reply: a person's message.
func message(t *testing.T, id string, m agentspec.Message) agentspec.ToolResult {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return agentspec.ToolResult{ID: id, Content: string(b)}
}

func TestAConversationWaitsForEachMessageAndEndsWithTheLastReply(t *testing.T) {
	script := fakellm.Script{Rules: []fakellm.Rule{
		{Match: fakellm.Match{LastContains: "Help the user"}, Reply: fakellm.Reply{Content: "How can I help?"}},
		{Match: fakellm.Match{LastContains: "deploy v2"}, Reply: fakellm.Reply{Content: "Deploying v2. Anything else?"}},
		{Match: fakellm.Match{LastContains: "and v3"}, Reply: fakellm.Reply{Content: "v3 too, done."}},
	}}
	h := newHarness(t, script, Spec{Prompt: "Help the user.", Conversation: &agentspec.Conversation{MaxMessages: 2}})
	h.runner.Attempt = 1
	cp := handedOver(t, h.runner)
	if calls := cp.Pending.Calls; len(calls) != 1 || calls[0].Kind != agentspec.RequestMessage ||
		calls[0].Tool != agentspec.ToolConversation || !strings.Contains(calls[0].Arguments, "How can I help?") {
		t.Fatalf("the first reply is handed over for a message: %+v", cp.Pending)
	}

	h.runner.Attempt = 2
	h.runner.Resume, h.runner.Results = cp, &agentspec.Results{Attempt: 1, Results: []agentspec.ToolResult{
		message(t, cp.Pending.Calls[0].ID, agentspec.Message{Text: "please deploy v2", From: "alice"})}}
	cp2 := handedOver(t, h.runner)
	if !strings.Contains(cp2.Pending.Calls[0].Arguments, "Deploying v2") {
		t.Fatalf("the second reply: %+v", cp2.Pending)
	}
	var from []string
	for _, e := range cp2.Entries {
		if e.Role == RoleUser && e.From != "" {
			from = append(from, e.From+": "+e.Content)
		}
	}
	if len(from) != 1 || from[0] != "alice: please deploy v2" {
		t.Fatalf("the message is kept with who wrote it: %q", from)
	}

	// The second message is the last one maxMessages allows: the next reply is the output.
	out, tr, f := resumed(t, h, cp2, message(t, cp2.Pending.Calls[0].ID, agentspec.Message{Text: "and v3", From: "bob"}))
	if f != nil || out != "v3 too, done." {
		t.Fatalf("output %q, failure %v", out, f)
	}
	if n := len(h.llm.Requests()); n != 3 {
		t.Fatalf("%d model calls, want 3: no turn is asked twice", n)
	}
	if tr.Outcome != "Succeeded" {
		t.Fatalf("outcome %s", tr.Outcome)
	}
}

func TestAConversationEndsWhenAPersonEndsItOrNobodyWrites(t *testing.T) {
	for _, res := range []agentspec.ToolResult{
		{Content: `{"end": true, "from": "alice", "why": "alice ended the conversation"}`},
		{Content: "error: nobody wrote within 24h0m0s", Error: true},
	} {
		script := fakellm.Script{Rules: []fakellm.Rule{{Reply: fakellm.Reply{Content: "Shall I go on?"}}}}
		h := newHarness(t, script, Spec{Prompt: "Help.", Conversation: &agentspec.Conversation{MaxMessages: 5}})
		h.runner.Attempt = 1
		cp := handedOver(t, h.runner)
		res.ID = cp.Pending.Calls[0].ID
		out, tr, f := resumed(t, h, cp, res)
		if f != nil || out != "Shall I go on?" {
			t.Fatalf("%s: output %q, failure %v", res.Content, out, f)
		}
		if len(h.llm.Requests()) != 1 {
			t.Fatalf("%s: the model was asked again", res.Content)
		}
		if last := tr.Entries[len(tr.Entries)-1]; last.Role != RoleNote || !strings.Contains(last.Content, "the conversation ended") {
			t.Fatalf("%s: last entry %+v", res.Content, last)
		}
	}
}
