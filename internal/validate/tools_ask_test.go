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

package validate

import (
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

// TestAskHumanIsCheckedAtAdmission reads ask_human as a user writes it, in both forms, and
// checks that admission names the field it refuses.
func TestAskHumanIsCheckedAtAdmission(t *testing.T) {
	const tool = "spec.steps[0].agent.tools[0]"
	cases := []toolCase{
		{"the short form", `[ask_human]`, nil},
		{"who answers, and for how long", `[{name: ask_human, ask: {approvers: {users: [alice], groups: [ops]}, minApprovals: 2, ` +
			`forbidSelfApproval: true, timeout: 2h}}]`, nil},
		{"ask on another tool", `[{name: http_fetch, ask: {timeout: 1h}}]`,
			[]string{tool + `.ask: Forbidden: only the tool ask_human and an mcp server take ask`}},
		{"an MCP server that may ask",
			`[{mcp: {url: "http://mcp.tools:8080/mcp", allow: [deploy]}, ask: {approvers: {groups: [ops]}, timeout: 20m}}]`, nil},
		{"an MCP server whose question would hold its pod past an hour",
			`[{mcp: {url: "http://mcp.tools:8080/mcp", allow: [deploy]}, ask: {timeout: 2h}}]`,
			[]string{tool + `.ask.timeout: Invalid value: "2h0m0s"`, "at most 1h0m0s"}},
		{"an MCP server that needs approval and may ask",
			`[{mcp: {url: "http://mcp.tools:8080/mcp", allow: [deploy]}, requireApproval: true, ask: {}}]`, nil},
		{"approval of a question", `[{name: ask_human, requireApproval: true}]`,
			[]string{tool + `.requireApproval: Forbidden: a question to a person needs no approval`}},
		{"a timeout past 30 days", `[{name: ask_human, ask: {timeout: 1000h}}]`,
			[]string{tool + `.ask.timeout: Invalid value: "1000h0m0s"`, "at most 720h0m0s"}},
		{"a quorum above the Gate's limit", `[{name: ask_human, ask: {minApprovals: 11}}]`,
			[]string{tool + `.ask.minApprovals: Invalid value: 11`}},
		{"a user twice", `[{name: ask_human, ask: {approvers: {users: [bo, bo]}}}]`,
			[]string{tool + `.ask.approvers.users[1]: Duplicate value: "bo"`}},
	}
	checkToolCases(t, cases)
}

// TestAConversationIsCheckedAtAdmission reads chat steps as a user writes them.
func TestAConversationIsCheckedAtAdmission(t *testing.T) {
	const agent = "spec.steps[0].agent"
	cases := []struct {
		name, agent string
		want        []string
	}{
		{"participants and bounds", `{prompt: hi, conversation: {participants: {groups: [ops]}, maxMessages: 50, idleTimeout: 2h}}`, nil},
		{"a text output", `{prompt: hi, conversation: {}, output: {format: markdown}}`, nil},
		{"a json contract", `{prompt: hi, conversation: {}, output: {format: json}}`,
			[]string{agent + `.output: Forbidden: a conversation's output is the agent's last reply`}},
		{"an idle timeout past 30 days", `{prompt: hi, conversation: {idleTimeout: 800h}}`,
			[]string{agent + `.conversation.idleTimeout: Invalid value: "800h0m0s"`}},
		{"a participant twice", `{prompt: hi, conversation: {participants: {users: [bo, bo]}}}`,
			[]string{agent + `.conversation.participants.users[1]: Duplicate value: "bo"`}},
	}
	model := map[string]ergonv1alpha1.ModelSpec{"default": {BaseURL: "http://llm/v1", Model: "m"}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := &ergonv1alpha1.AgentStep{}
			if err := yaml.Unmarshal([]byte(c.agent), a); err != nil {
				t.Fatal(err)
			}
			spec := ergonv1alpha1.SceneSpec{Models: model, Steps: []ergonv1alpha1.Step{{Name: "a", Agent: a}}}
			got := Scene(&spec).ToAggregate()
			if len(c.want) == 0 {
				if got != nil {
					t.Fatalf("refused: %v", got)
				}
				return
			}
			for _, w := range c.want {
				if got == nil || !strings.Contains(got.Error(), w) {
					t.Errorf("the errors %v do not say %q", got, w)
				}
			}
		})
	}
}
