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
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ergon-dev/ergon/test/fakellm"
)

// BenchmarkTurn measures the runtime's own cost of one turn against the in-process fake
// model: building the request, the SDK's encoding and decoding, the loop, the transcript and
// the contract check (the fake server's work is included; it is small). One op is a run of
// two turns, a tool call and a JSON answer, so per turn is half of it.
func BenchmarkTurn(b *testing.B) {
	llm := fakellm.New(fakellm.Script{Rules: []fakellm.Rule{
		{Match: fakellm.Match{LastRole: "user"}, Reply: fakellm.Reply{ToolCalls: []fakellm.ToolCall{
			{Name: "list_files", Arguments: `{}`}}}},
		{Match: fakellm.Match{LastRole: "tool"}, Reply: fakellm.Reply{Content: `{"title":"t","body":"b"}`}},
	}})
	srv := httptest.NewServer(llm)
	defer srv.Close()
	spec := &Spec{Model: ModelConfig{BaseURL: srv.URL + "/v1", Model: "fake"}, Prompt: "Summarise.",
		Tools: []string{"list_files"}, MaxTurns: 5, Workspace: b.TempDir(),
		Output: Contract{Format: "json", Schema: []byte(`{"type":"object","required":["title","body"]}`)}}
	r := &Runner{Spec: spec, APIKey: "k", Secrets: []string{"s1", "s2"}, Tools: ToolEnv{Workspace: spec.Workspace},
		Context: []ContextItem{{Name: "fetch", Value: "some context"}}, Retry: DefaultRetry}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := r.Run(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(2*b.N), "ns/turn")
}

// BenchmarkTurnWithContextPolicy is BenchmarkTurn over a long loop with the context policy
// trimming: 60 turns, each reading a 30,000-byte file, under a budget of 100,000 characters,
// so that nearly every turn stubs or drops something. ns/turn is the whole cost of a turn:
// the policy, building and encoding the request, the fake model, the tool call.
func BenchmarkTurnWithContextPolicy(b *testing.B) {
	const turns = 60
	llm := fakellm.New(fakellm.Script{Rules: []fakellm.Rule{
		{Match: fakellm.Match{LastRole: "user"}, Reply: fakellm.Reply{ToolCalls: []fakellm.ToolCall{
			{Name: "read_file", Arguments: `{"path":"big"}`}}}},
		{Match: fakellm.Match{LastRole: "tool"}, Reply: fakellm.Reply{ToolCalls: []fakellm.ToolCall{
			{Name: "read_file", Arguments: `{"path":"big"}`}}}},
	}})
	srv := httptest.NewServer(llm)
	defer srv.Close()
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "big"), []byte(strings.Repeat("0123456789", 3000)), 0o600); err != nil {
		b.Fatal(err)
	}
	spec := &Spec{Model: ModelConfig{BaseURL: srv.URL + "/v1", Model: "fake", ContextBudget: 100000}, Prompt: "Read on.",
		Tools: []string{"read_file"}, MaxTurns: turns, Workspace: dir}
	r := &Runner{Spec: spec, APIKey: "k", Tools: ToolEnv{Workspace: dir}, Retry: DefaultRetry}
	b.ReportAllocs()
	for b.Loop() {
		// The loop ends with MaxTurnsExceeded after its 60 turns: that is the point.
		if _, tr, _ := r.Run(context.Background()); tr.Usage.Turns != turns {
			b.Fatalf("%d turns", tr.Usage.Turns)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(turns*b.N), "ns/turn")
}

// BenchmarkContextPolicy is the policy's own cost before one turn of a 60-turn conversation
// with large tool results that is over its budget.
func BenchmarkContextPolicy(b *testing.B) {
	base := conversation(60, 2, 30000)
	conv := make([]Message, len(base))
	b.ReportAllocs()
	for b.Loop() {
		conv = append(conv[:0], base...)
		if _, _, err := fitContext(conv, 100000); err != nil {
			b.Fatal(err)
		}
		_ = toParams(conv, nil)
	}
}
