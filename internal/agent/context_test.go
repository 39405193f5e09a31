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
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ergon-dev/ergon/test/fakellm"
)

// conversation builds a conversation: the pinned opening, then per turn an assistant message
// calling calls tools, each answered with a result of size bytes.
func conversation(turns, calls, size int) []Message {
	conv := []Message{
		{Role: RoleSystem, Content: "You are an agent.", Pinned: true},
		{Role: RoleUser, Content: "Do the task.", Pinned: true},
	}
	for turn := 1; turn <= turns; turn++ {
		a := Message{Role: RoleAssistant, Turn: turn}
		for c := range calls {
			a.ToolCalls = append(a.ToolCalls, ToolCallRecord{ID: fmt.Sprintf("call_%d_%d", turn, c), Name: "read_file",
				Arguments: `{"path":"big"}`})
		}
		conv = append(conv, a)
		for _, tc := range a.ToolCalls {
			conv = append(conv, Message{Role: RoleTool, Turn: turn, ToolCallID: tc.ID, Tool: tc.Name,
				Content: strings.Repeat("x", size)})
		}
	}
	return conv
}

func sizeOf(conv []Message) int64 {
	var n int64
	for i := range conv {
		n += conv[i].size()
	}
	return n
}

// checkConversation holds what the policy promises whatever it trimmed: the pinned messages
// first and whole, every tool result after its call and every call with its result, every
// message either whole or a stub.
func checkConversation(t testing.TB, before, after []Message) {
	t.Helper()
	pinned := 0
	for _, m := range before {
		if m.Pinned {
			pinned++
		}
	}
	for i := range pinned {
		if after[i].Content != before[i].Content || !after[i].Pinned {
			t.Fatalf("pinned message %d changed: %+v", i, after[i])
		}
	}
	open := map[string]bool{}
	for i, m := range after[pinned:] {
		switch m.Role {
		case RoleTool:
			if !open[m.ToolCallID] {
				t.Fatalf("message %d: the tool result %s has no call before it", pinned+i, m.ToolCallID)
			}
			delete(open, m.ToolCallID)
			if m.Trimmed && !strings.HasPrefix(m.Content, "[removed by the context policy") {
				t.Fatalf("message %d: a trimmed result is no stub: %q", pinned+i, m.Content)
			}
		default:
			if len(open) > 0 {
				t.Fatalf("message %d: calls %v have no result before the next message", pinned+i, open)
			}
			for _, c := range m.ToolCalls {
				open[c.ID] = true
			}
		}
		if m.Marker && i != 0 {
			t.Fatalf("the marker is message %d, not the first after the pinned ones", pinned+i)
		}
	}
	if len(open) > 0 {
		t.Fatalf("calls %v have no result", open)
	}
	originals := map[string]string{}
	for _, m := range before {
		if m.Pinned {
			continue
		}
		originals[m.Role+m.ToolCallID+fmt.Sprint(m.Turn)] = m.Content
	}
	for _, m := range after {
		if m.Trimmed || m.Marker {
			continue
		}
		if o, ok := originals[m.Role+m.ToolCallID+fmt.Sprint(m.Turn)]; ok && o != m.Content {
			t.Fatalf("a message was cut: %q of %q", m.Content, o)
		}
	}
}

func clone(conv []Message) []Message { return append([]Message(nil), conv...) }

func TestContextPolicy(t *testing.T) {
	for name, tc := range map[string]struct {
		conv         []Message
		budget       int64
		stubs, drops bool
		wantFail     bool
		newestKept   bool
	}{
		"no budget keeps everything":      {conv: conversation(10, 2, 1000), budget: 0},
		"a conversation that fits":        {conv: conversation(3, 1, 100), budget: 100000},
		"old tool results become stubs":   {conv: conversation(10, 1, 1000), budget: 8000, stubs: true, newestKept: true},
		"whole exchanges are dropped":     {conv: conversation(40, 2, 1000), budget: 3000, stubs: true, drops: true, newestKept: true},
		"the newest results go last":      {conv: conversation(2, 3, 5000), budget: 9000, stubs: true, drops: true},
		"pinned messages over the budget": {conv: conversation(2, 1, 10), budget: 20, wantFail: true},
	} {
		t.Run(name, func(t *testing.T) {
			before := clone(tc.conv)
			after, tr, err := fitContext(tc.conv, tc.budget)
			if tc.wantFail {
				if err == nil || !strings.Contains(err.Error(), "contextBudget") {
					t.Fatalf("err = %v, want one that names contextBudget", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			checkConversation(t, before, after)
			if tc.budget > 0 && sizeOf(after) > tc.budget {
				t.Errorf("%d characters remain, over the budget of %d", sizeOf(after), tc.budget)
			}
			if (tr.stubbed > 0) != tc.stubs || (tr.dropped > 0) != tc.drops {
				t.Errorf("stubbed %d, dropped %d; want stubs %v, drops %v (%s)", tr.stubbed, tr.dropped, tc.stubs, tc.drops, tr)
			}
			if got := len(before) - len(after); tr.dropped > 0 && got != tr.dropped-1 {
				t.Errorf("%d messages fewer, the policy says it dropped %d and added a marker", got, tr.dropped)
			}
			if tc.newestKept && after[len(after)-1].Trimmed {
				t.Errorf("the newest result was trimmed though older ones could make room")
			}
			if tc.budget > 0 && tr.after != sizeOf(after) {
				t.Errorf("the policy counted %d characters, there are %d", tr.after, sizeOf(after))
			}
		})
	}
}

func TestContextPolicyTrimsOnceAndKeepsOneMarker(t *testing.T) {
	conv := conversation(30, 1, 2000)
	conv, first, err := fitContext(conv, 6000)
	if err != nil || first.dropped == 0 {
		t.Fatalf("first trim: %v, %v", first, err)
	}
	// Two more turns, trimmed again: one marker, the newer turn.
	more := conversation(32, 1, 2000)[len(conversation(30, 1, 2000)):]
	conv = append(conv, more...)
	conv, second, err := fitContext(conv, 6000)
	if err != nil {
		t.Fatal(err)
	}
	markers := 0
	for _, m := range conv {
		if m.Marker {
			markers++
			if m.Turn < first.droppedUpTo || !strings.Contains(m.Content, fmt.Sprintf("up to turn %d", m.Turn)) {
				t.Errorf("marker %+v after dropping up to %d then %d", m, first.droppedUpTo, second.droppedUpTo)
			}
		}
	}
	if markers != 1 || sizeOf(conv) > 6000 {
		t.Errorf("%d markers, %d characters", markers, sizeOf(conv))
	}
}

// FuzzContextPolicy builds random conversations and budgets: the policy keeps the budget
// whenever the pinned messages and the stubs of the newest exchange fit in it, and always
// keeps every tool call with its result and every message whole.
func FuzzContextPolicy(f *testing.F) {
	f.Add(uint64(1), uint16(60), uint32(20000))
	f.Add(uint64(7), uint16(3), uint32(500))
	f.Add(uint64(42), uint16(200), uint32(100000))
	f.Fuzz(func(t *testing.T, seed uint64, turns uint16, budget uint32) {
		rng := rand.New(rand.NewPCG(seed, seed>>7))
		conv := []Message{{Role: RoleSystem, Content: strings.Repeat("s", rng.IntN(300)), Pinned: true}}
		if rng.IntN(2) == 0 {
			conv = append(conv, Message{Role: RoleUser, Content: strings.Repeat("c", rng.IntN(2000)), Pinned: true})
		}
		conv = append(conv, Message{Role: RoleUser, Content: "task", Pinned: true})
		for turn := 1; turn <= int(turns%120); turn++ {
			a := Message{Role: RoleAssistant, Turn: turn, Content: strings.Repeat("a", rng.IntN(200))}
			for c := range rng.IntN(4) {
				a.ToolCalls = append(a.ToolCalls, ToolCallRecord{ID: fmt.Sprintf("c%d_%d", turn, c), Name: "t",
					Arguments: strings.Repeat("g", rng.IntN(100))})
			}
			conv = append(conv, a)
			for _, c := range a.ToolCalls {
				conv = append(conv, Message{Role: RoleTool, Turn: turn, ToolCallID: c.ID, Content: strings.Repeat("r", rng.IntN(8000))})
			}
			if len(a.ToolCalls) == 0 && rng.IntN(2) == 0 {
				conv = append(conv, Message{Role: RoleUser, Turn: turn, Content: "repair " + strings.Repeat("f", rng.IntN(300))})
			}
			// The policy runs before every turn, on what it trimmed before.
			if rng.IntN(3) == 0 {
				var err error
				if conv, _, err = fitContext(conv, int64(budget)); err != nil {
					return // pinned messages over the budget: an error, nothing to hold
				}
			}
		}
		before := clone(conv)
		after, _, err := fitContext(conv, int64(budget))
		if err != nil {
			return
		}
		checkConversation(t, before, after)
		// The floor: what the policy may not remove.
		var floor int64
		newest := len(after)
		for newest > 0 && after[newest-1].Role == RoleTool {
			newest--
		}
		newest--
		if newest > 0 && after[newest].Role == RoleUser && !after[newest].Pinned && after[newest-1].Role == RoleAssistant {
			newest--
		}
		for i := range after {
			if after[i].Pinned || after[i].Marker || i >= newest {
				floor += after[i].size()
			}
		}
		if total := sizeOf(after); budget > 0 && total > int64(budget) && total > floor {
			t.Fatalf("%d characters remain over the budget of %d, more than the %d the policy must keep", total, budget, floor)
		}
	})
}

// TestALongLoopFitsItsContextBudget runs 60 turns whose tool results add up to far more than
// the model's window: without a context budget the model refuses the request; with one the
// loop finishes, every request fits, and the transcript says what was dropped.
func TestALongLoopFitsItsContextBudget(t *testing.T) {
	script := fakellm.Script{MaxContextChars: 120000, Rules: []fakellm.Rule{
		{Match: fakellm.Match{LastRole: "user"}, Times: 1, Reply: fakellm.Reply{ToolCalls: []fakellm.ToolCall{
			{Name: "read_file", Arguments: `{"path":"big"}`}}}},
		{Match: fakellm.Match{LastRole: "tool"}, Times: 59, Reply: fakellm.Reply{Content: "Reading on.", ToolCalls: []fakellm.ToolCall{
			{Name: "read_file", Arguments: `{"path":"big"}`}}}},
		{Match: fakellm.Match{LastRole: "tool"}, Reply: fakellm.Reply{Content: "done"}},
	}}
	for _, budget := range []int64{0, 100000} {
		t.Run(fmt.Sprintf("budget %d", budget), func(t *testing.T) {
			h := newHarness(t, script, Spec{Tools: []string{"read_file"}, MaxTurns: 70,
				Model: ModelConfig{ContextBudget: budget}})
			dir := t.TempDir()
			h.runner.Spec.Workspace = dir
			h.runner.Tools.Workspace = dir
			if err := os.WriteFile(filepath.Join(dir, "big"), []byte(strings.Repeat("0123456789", 3000)), 0o600); err != nil {
				t.Fatal(err)
			}
			out, tr, f := h.run()
			if budget == 0 {
				wantFailure(t, f, ReasonContextLength, "context")
				return
			}
			if f != nil {
				t.Fatalf("failed: %v", f)
			}
			if out != "done" || tr.Usage.Turns != 61 {
				t.Fatalf("output %q after %d turns", out, tr.Usage.Turns)
			}
			if tr.Policies["context"] != ContextPolicy || tr.ContextBudget != budget {
				t.Errorf("the transcript's header = %v, budget %d", tr.Policies, tr.ContextBudget)
			}
			notes := 0
			for _, e := range tr.Entries {
				if e.Role == RoleNote && strings.Contains(e.Content, ContextPolicy) {
					notes++
				}
			}
			if notes == 0 {
				t.Error("the transcript does not say what the context policy removed")
			}
			for i, req := range h.llm.Requests() {
				open := map[string]bool{}
				var n int
				for _, m := range req.Messages {
					n += len(m.Content)
					for _, c := range m.ToolCalls {
						open[c.ID] = true
					}
					if m.Role == "tool" && !open[m.ToolCallID] {
						t.Fatalf("request %d sends the result of %s without its call", i, m.ToolCallID)
					}
				}
				if int64(n) > budget {
					t.Fatalf("request %d sends %d characters, over the budget of %d", i, n, budget)
				}
			}
		})
	}
}
