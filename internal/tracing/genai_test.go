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

package tracing

import (
	"encoding/json"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/codes"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/agent"
	"github.com/ergon-dev/ergon/internal/agentspec"
)

// agentChange is an agent step that ends after two model calls and a tool call between them,
// its transcript written with the agent runtime's own type.
func agentChange(t *testing.T, content bool) Change {
	t.Helper()
	tr := agent.Transcript{Model: "small", StartedAt: at(10).Time, FinishedAt: at(25).Time, Outcome: "Succeeded",
		Usage: agent.Usage{Turns: 2, PromptTokens: 900, CompletionTokens: 120},
		Entries: []agent.Entry{
			{Turn: 0, Role: agent.RoleSystem, Content: "You write reports."},
			{Turn: 1, Role: agent.RoleAssistant, DurationMS: 2000, Usage: &agent.Usage{PromptTokens: 400, CompletionTokens: 20},
				ToolCalls: []agent.ToolCallRecord{{ID: "c1", Name: "fetch", Arguments: `{"url":"http://x"}`}}},
			{Turn: 1, Role: agent.RoleTool, ToolCallID: "c1", Tool: "fetch", Content: "secret page", DurationMS: 3000,
				Approval: &agentspec.Approval{Approved: true, By: "bob", Gate: "g"}},
			{Turn: 2, Role: agent.RoleAssistant, Content: "Sprint 42 went well", DurationMS: 4000,
				Usage: &agent.Usage{PromptTokens: 500, CompletionTokens: 100}},
		}}
	raw, err := json.Marshal(tr)
	if err != nil {
		t.Fatal(err)
	}
	before := &ergonv1alpha1.RunStatus{Steps: []ergonv1alpha1.StepStatus{{Name: "draft", Phase: ergonv1alpha1.StepRunning,
		StartedAt: at(5), PodName: "draft-pod", Attempts: 1}}}
	after := before.DeepCopy()
	after.Steps[0].Phase, after.Steps[0].FinishedAt = ergonv1alpha1.StepSucceeded, at(26)
	return Change{Run: testRun(), Before: before, After: after, Content: content,
		Steps:       map[string]StepInfo{"draft": {Kind: KindAgent, Model: "small"}},
		Pods:        map[string]PodTimes{"draft-pod": {Created: at(6).Time, Scheduled: at(7).Time, Started: at(9).Time, Finished: at(25).Time}},
		Transcripts: map[string]string{"draft-pod": string(raw)}}
}

func TestAnAgentAttemptFollowsTheGenAIConventions(t *testing.T) {
	c := agentChange(t, false)
	var chats []Span
	spans := map[string]Span{}
	for _, s := range Spans(c) {
		if strings.HasPrefix(s.Name, "chat ") {
			chats = append(chats, s)
			continue
		}
		spans[s.Name] = s
	}
	agentSpan, ok := spans["invoke_agent draft"]
	if !ok {
		t.Fatalf("no invoke_agent span among %v", keys(spans))
	}
	for key, want := range map[string]any{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "draft",
		"gen_ai.request.model": "small", "gen_ai.provider.name": "openai", "gen_ai.usage.input_tokens": int64(900),
		"gen_ai.usage.output_tokens": int64(120)} {
		if v, _ := attr(agentSpan, key); v.AsInterface() != want {
			t.Errorf("invoke_agent %s = %v, want %v", key, v.AsInterface(), want)
		}
	}
	// The attempt's span holds its stages and its calls: its pod's life, created at 6 s, to
	// the step's recorded end at 26 s.
	if !agentSpan.Start.Equal(at(6).Time) || !agentSpan.End.Equal(at(26).Time) {
		t.Errorf("invoke_agent: %s..%s, want 6s..26s", agentSpan.Start.Sub(t0), agentSpan.End.Sub(t0))
	}
	for _, s := range Spans(c) {
		if s.Parent.Equal(agentSpan.Context) && (s.Start.Before(agentSpan.Start) || s.End.After(agentSpan.End)) {
			t.Errorf("%s (%s..%s) is outside the attempt's span", s.Name, s.Start.Sub(t0), s.End.Sub(t0))
		}
	}
	if len(chats) != 2 {
		t.Fatalf("%d chat spans, want one per model call (2)", len(chats))
	}
	tool := spans["execute_tool fetch"]
	// Laid end to end from the transcript's start: chat 10–12 s, the tool 12–15 s, chat 15–19 s.
	for _, w := range []struct {
		s          Span
		start, end int
		in         int64
	}{{chats[0], 10, 12, 400}, {tool, 12, 15, -1}, {chats[1], 15, 19, 500}} {
		if !w.s.Start.Equal(at(w.start).Time) || !w.s.End.Equal(at(w.end).Time) {
			t.Errorf("%s: %s..%s, want %ds..%ds", w.s.Name, w.s.Start.Sub(t0), w.s.End.Sub(t0), w.start, w.end)
		}
		if !w.s.Parent.Equal(agentSpan.Context) {
			t.Errorf("%s does not hang from the invoke_agent span", w.s.Name)
		}
		if v, ok := attr(w.s, "gen_ai.usage.input_tokens"); w.in >= 0 && (!ok || v.AsInt64() != w.in) {
			t.Errorf("%s: input tokens %v, want %d", w.s.Name, v.AsInterface(), w.in)
		}
	}
	if v, _ := attr(tool, "ergon.tool.decided_by"); v.AsString() != "bob" {
		t.Errorf("the tool call's approver: %q", v.AsString())
	}
	for _, s := range Spans(c) {
		for _, kv := range s.Attributes {
			if strings.Contains(kv.Value.String(), "secret page") || strings.Contains(kv.Value.String(), "Sprint 42") {
				t.Errorf("span %s exports %s = %q: contents are exported only when asked", s.Name, kv.Key, kv.Value.String())
			}
		}
	}
}

func TestContentsAreExportedWhenAsked(t *testing.T) {
	found := map[string]bool{}
	for _, s := range Spans(agentChange(t, true)) {
		for _, kv := range s.Attributes {
			switch {
			case kv.Key == "gen_ai.output.messages" && strings.Contains(kv.Value.AsString(), "Sprint 42 went well"):
				found["completion"] = true
			case kv.Key == "gen_ai.tool.call.result" && kv.Value.AsString() == "secret page":
				found["tool result"] = true
			}
		}
	}
	if !found["completion"] || !found["tool result"] {
		t.Errorf("with Content: found %v, want the completion and the tool result", found)
	}
}

func TestAFailedAgentAttemptIsAnError(t *testing.T) {
	c := agentChange(t, false)
	var tr map[string]any
	_ = json.Unmarshal([]byte(c.Transcripts["draft-pod"]), &tr)
	tr["outcome"], tr["message"] = "ModelError", "the model answered 500 three times"
	raw, _ := json.Marshal(tr)
	c.Transcripts["draft-pod"] = string(raw)
	c.After.Steps[0].Phase = ergonv1alpha1.StepFailed
	for _, s := range Spans(c) {
		if s.Name == "invoke_agent draft" && (s.Status != codes.Error || !strings.Contains(s.Message, "ModelError")) {
			t.Errorf("invoke_agent of a failed attempt: status %v %q", s.Status, s.Message)
		}
	}
}

// The execute_tool span of a call is the one its tool pod's TRACEPARENT names, whatever its
// place in the transcript; a call id a model used twice names only its first span.
func TestAToolCallsSpanIsTheOneItsPodNames(t *testing.T) {
	c := agentChange(t, false)
	var tools []Span
	for _, s := range Spans(c) {
		if strings.HasPrefix(s.Name, "execute_tool ") {
			tools = append(tools, s)
		}
	}
	if len(tools) != 1 {
		t.Fatalf("%d execute_tool spans, want 1", len(tools))
	}
	if want := ToolCallContext(c.Run, "draft", 1, "c1"); !tools[0].Context.Equal(want) {
		t.Errorf("execute_tool span %s, want %s, the one the call's pod carries", tools[0].Context.SpanID(), want.SpanID())
	}

	var tr agent.Transcript
	if err := json.Unmarshal([]byte(c.Transcripts["draft-pod"]), &tr); err != nil {
		t.Fatal(err)
	}
	tr.Entries = append(tr.Entries, tr.Entries[2])
	raw, err := json.Marshal(tr)
	if err != nil {
		t.Fatal(err)
	}
	c.Transcripts["draft-pod"] = string(raw)
	ids := map[string]bool{}
	for _, s := range Spans(c) {
		if ids[s.Context.SpanID().String()] {
			t.Errorf("span %s shares its id with another", s.Name)
		}
		ids[s.Context.SpanID().String()] = true
	}
}
