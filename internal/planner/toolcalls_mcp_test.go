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

package planner

import (
	"strings"
	"testing"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/agentspec"
	"github.com/ergon-dev/ergon/internal/compile"
	"github.com/ergon-dev/ergon/internal/naming"
)

// An MCP server's tool that needs approval is asked of a person like a built-in one: its
// calls come as kind approval, and the next attempt runs an approved one.
func TestACallOfAnMCPToolThatNeedsApprovalWaitsForItsGate(t *testing.T) {
	w := newToolWorld(t, nil)
	spec := *w.run.Status.SceneSnapshot
	spec.Steps = []ergonv1alpha1.Step{{Name: "work", Agent: &ergonv1alpha1.AgentStep{Prompt: "p", Tools: []ergonv1alpha1.AgentTool{
		{RequireApproval: true, MCP: &ergonv1alpha1.MCPTool{URL: "http://issues/mcp", Allow: []string{"search", "close_issue"}}},
	}}}}
	scene, errs := compile.Compile(&spec)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	w.scene, w.run.Status.SceneSnapshot = scene, &spec
	w.plan()
	call := agentspec.ToolRequest{ID: "call_5", Tool: "close_issue", Kind: agentspec.RequestApproval, Arguments: `{"id":7}`}
	w.handOver(call)
	gate := naming.ToolCallName("r", "work", "call_5")
	p := w.plan()
	if len(p.Gates) != 1 || p.Gates[0].Name != gate || !strings.Contains(p.Gates[0].Message, "the tool close_issue with the arguments:\n{\"id\":7}") {
		t.Fatalf("gates = %+v", p.Gates)
	}
	w.gates[gate] = GateState{Decided: true, Option: "approve", DecidedBy: "alice"}
	p = w.plan()
	if len(p.ToolResults) != 1 || len(p.Pods) != 1 || p.Pods[0].Attempt != 2 || len(p.Children) != 0 {
		t.Fatalf("approved: %+v", p)
	}
	got := p.ToolResults[0].Results.Results[0]
	if got.Content != "" || got.Error || got.Approval == nil || !got.Approval.Approved || got.Approval.Gate != gate {
		t.Fatalf("result = %+v", got)
	}
}
