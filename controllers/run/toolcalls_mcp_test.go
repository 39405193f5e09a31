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

package run

import (
	"slices"
	"testing"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/compile"
)

// Every tool of an MCP server with requireApproval goes to the runtime's approve list, and
// makes the step use the request channel; a server without it does neither.
func TestTheToolsOfAnMCPServerThatNeedsApprovalAreApproved(t *testing.T) {
	a := &ergonv1alpha1.AgentStep{Tools: []ergonv1alpha1.AgentTool{
		{Name: "http_fetch"},
		{RequireApproval: true, MCP: &ergonv1alpha1.MCPTool{URL: "http://issues/mcp", Allow: []string{"search", "close_issue"}}},
		{MCP: &ergonv1alpha1.MCPTool{URL: "http://wiki/mcp", Allow: []string{"read_page"}}},
	}}
	approve, calls := channelTools(a)
	if !slices.Equal(approve, []string{"search", "close_issue"}) || len(calls) != 0 {
		t.Fatalf("approve %v, calls %v", approve, calls)
	}
	step := &compile.Step{Name: "s", Spec: &ergonv1alpha1.Step{Name: "s", Agent: a}}
	if !usesChannel(step) {
		t.Fatal("a step whose MCP tools need approval does not use the request channel")
	}
	a.Tools[1].RequireApproval = false
	if approve, _ = channelTools(a); len(approve) != 0 || usesChannel(step) {
		t.Fatalf("without requireApproval: approve %v", approve)
	}
}
