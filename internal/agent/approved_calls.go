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
	"slices"

	"github.com/openai/openai-go/v3"

	"github.com/ergon-dev/ergon/internal/agentspec"
)

// Approved calls (docs/step-contract.md, "Tool calls the controller fulfils"): a call of a
// tool the pod runs itself — a built-in tool, or a tool of an MCP server — that the spec's
// approve list names waits for a person's approval through a Gate, and runs in the attempt
// after the approval. A person approved one call, so it runs at most once: before it runs,
// the attempt prints a checkpoint that marks it started, and an attempt that resumes from
// that checkpoint (the one that ran it ended before the checkpoint after its result) does
// not run it again but tells the model that its outcome is unknown.

// outcomeUnknown is the result of an approved call that an earlier attempt started and did
// not finish.
const outcomeUnknown = "error: the call's outcome is unknown: the attempt that ran it ended before it finished; it was not run again"

// approvalTool is the tool of a call the pod runs only once a person approved it: a built-in
// tool of the step or a tool its MCP servers offer, named in the spec's approve list; nil
// for any other call.
func (l *loop) approvalTool(name string) *Tool {
	if !slices.Contains(l.Spec.Approve, name) {
		return nil
	}
	if t := registry[name]; t != nil && slices.Contains(l.Spec.Tools, name) {
		return t
	}
	if t, ok := l.mcp.tool(name); ok {
		return t
	}
	return nil
}

// mcpAllows says whether one of the spec's MCP servers offers a tool of the name.
func mcpAllows(s *Spec, name string) bool {
	return slices.ContainsFunc(s.MCP, func(m MCPServer) bool { return slices.Contains(m.Allow, name) })
}

// runApproved runs the approved calls of the requests p, each at most once, and returns
// their results by call id. The calls an earlier attempt started (l.started, from the
// checkpoint resumed from) are not run again: their result is an error that says the outcome
// is unknown. Before the others run, a checkpoint marks them started; without it (too
// large to be kept) they do not run.
func (l *loop) runApproved(ctx context.Context, turn, repairs int, p *agentspec.Pending,
	calls []openai.ChatCompletionMessageToolCallUnion) map[string]toolResult {
	results := map[string]toolResult{}
	var run []openai.ChatCompletionMessageToolCallUnion
	for _, c := range calls {
		if slices.Contains(l.started, c.ID) {
			l.note(turn, "the approved call %s of %s was started by an earlier attempt, which ended before its result was kept; "+
				"it is not run again", c.ID, c.Function.Name)
			results[c.ID] = toolResult{content: outcomeUnknown, err: true}
			continue
		}
		run = append(run, c)
	}
	if len(run) == 0 {
		return results
	}
	if l.Progress != nil {
		for _, c := range run {
			l.started = append(l.started, c.ID)
		}
		l.handing = p
		kept := l.checkpoint(turn, repairs)
		l.handing = nil
		if !kept {
			for _, c := range run {
				l.note(turn, "the approved call %s of %s is not run: the checkpoint that marks it started cannot be kept", c.ID, c.Function.Name)
				results[c.ID] = toolResult{err: true, content: "error: the call was approved but not run: the checkpoint " +
					"that would record its start is larger than a step may hand back"}
			}
			return results
		}
	}
	for i, res := range l.callTools(ctx, run) {
		results[run[i].ID] = res
	}
	return results
}
