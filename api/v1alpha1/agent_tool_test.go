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

package v1alpha1

import (
	"encoding/json"
	"testing"
)

// TestAgentToolsReadBackAsWritten reads each form of a tool and writes it back: a built-in tool
// without options stays a name, and a tool with approval stays an object that needs approval.
func TestAgentToolsReadBackAsWritten(t *testing.T) {
	cases := []struct {
		name, json    string
		needsApproval bool
	}{
		{"a built-in tool by name", `"http_fetch"`, false},
		{"a built-in tool that needs approval", `{"name":"shell","requireApproval":true}`, true},
		{"a built-in tool with approvers", `{"name":"shell","approval":{"approvers":{"users":["alice"]},"minApprovals":2}}`, true},
		{"an empty approval", `{"name":"shell","approval":{}}`, true},
		{"a Scene tool allowing self-approval", `{"approval":{"allowSelfApproval":true},"scene":"deployer"}`, true},
		{"a Scene tool", `{"scene":"deployer"}`, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var tool AgentTool
			if err := json.Unmarshal([]byte(tc.json), &tool); err != nil {
				t.Fatal(err)
			}
			if tool.NeedsApproval() != tc.needsApproval {
				t.Errorf("NeedsApproval() = %v, want %v", tool.NeedsApproval(), tc.needsApproval)
			}
			back, err := json.Marshal(tool)
			if err != nil {
				t.Fatal(err)
			}
			if string(back) != tc.json {
				t.Errorf("wrote %s back as %s", tc.json, back)
			}
		})
	}
}
