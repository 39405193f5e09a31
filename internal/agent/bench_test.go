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
