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
)

// TestToolApprovalsAreCheckedAtAdmission reads tools' approval as a user writes it and checks
// that admission names the field it refuses: tools are schemaless, so the CRD checks nothing.
func TestToolApprovalsAreCheckedAtAdmission(t *testing.T) {
	const approval = "spec.steps[0].agent.tools[0].approval"
	long := strings.Repeat("a", 513)
	cases := []toolCase{
		{"approvers and a quorum", `[{name: http_fetch, approval: {approvers: {users: [alice, bob], groups: [leads]}, minApprovals: 2}}]`,
			nil},
		{"an empty approval, which needs one approver other than the Run's person", `[{name: http_fetch, approval: {}}]`, nil},
		{"self-approval allowed", `[{name: http_fetch, approval: {allowSelfApproval: true}}]`, nil},
		{"on every kind of tool", `[{scene: s, approval: {minApprovals: 1}}, {name: c, container: {image: x, command: [ls]}, ` +
			`approval: {approvers: {groups: [ops]}}}, {mcp: {url: "http://a/mcp", allow: [x]}, approval: {minApprovals: 3}}]`, nil},
		{"no approval at all", `[{name: http_fetch, approval: {minApprovals: 0}}]`,
			[]string{approval + `.minApprovals: Invalid value: 0: how many different people approve each call: from 1 to 10`}},
		{"a quorum above the Gate's limit", `[{scene: s, approval: {minApprovals: 11}}]`,
			[]string{approval + `.minApprovals: Invalid value: 11`, "from 1 to 10"}},
		{"a user twice", `[{name: http_fetch, approval: {approvers: {users: [alice, alice]}}}]`,
			[]string{approval + `.approvers.users[1]: Duplicate value: "alice"`}},
		{"an empty group", `[{name: http_fetch, approval: {approvers: {groups: [""]}}}]`,
			[]string{approval + `.approvers.groups[0]: Invalid value: ""`, "name a Kubernetes group"}},
		{"a user name too long", `[{name: http_fetch, approval: {approvers: {users: [` + long + `]}}}]`,
			[]string{approval + `.approvers.users[0]: Too long`}},
	}
	checkToolCases(t, cases)
}
