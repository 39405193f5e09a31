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
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/agentspec"
	"github.com/ergon-dev/ergon/internal/compile"
	"github.com/ergon-dev/ergon/internal/gatepolicy"
	"github.com/ergon-dev/ergon/internal/naming"
	"github.com/ergon-dev/ergon/internal/outputs/wire"
)

// The controller's side of the request channel (docs/step-contract.md): an agent attempt that
// ends with ToolCallsPending hands tool calls over in its checkpoint. The step waits
// (Waiting, ToolCallPending) while each call is fulfilled under a name derived from the
// Run, the step and the call's id — a Gate for a call that needs approval, a child Run for a
// Scene tool — and when every result is in, the results are stored for the next attempt,
// which starts at once. Such an attempt is no failure: it counts against no retry budget.

// Reasons of a step that handed tool calls over.
const (
	// ReasonToolCallPending: the step waits for the tool calls its last attempt handed over.
	ReasonToolCallPending = "ToolCallPending"
	// ReasonToolCallsLost: the checkpoint that lists them never reached the controller.
	ReasonToolCallsLost = "ToolCallsLost"
)

// toolCallsLostAfter bounds how long a step waits for the checkpoint of an attempt that
// handed tool calls over: the controller reads it from the pod's log when the pod ends.
const toolCallsLostAfter = 2 * time.Minute

// toolCallsPoll is how often a step looks for that checkpoint: it is written to a ConfigMap,
// which wakes no Run.
const toolCallsPoll = 2 * time.Second

// ToolCallFacts is what the controller found of the tool calls an agent step handed over.
type ToolCallFacts struct {
	// Pending are the requests the step's checkpoint lists; nil when it lists none.
	Pending *agentspec.Pending
	// Stored is the attempt whose results the step's results ConfigMap holds; 0 for none.
	Stored int32
	// ResultsUID and ResultsVersion are the UID and resourceVersion of the step's results
	// ConfigMap, the Run's own; "" when none exists yet.
	ResultsUID, ResultsVersion string
	// Invalid says why the arguments of a Scene tool's call do not fit the Scene's params,
	// by call id.
	Invalid map[string]string
}

// ToolResultsRequest asks the controller to store the results of a step's tool calls for its
// next attempt, before that attempt's pod is created: in a new ConfigMap when UID is empty,
// else over the one of that UID, as it was at ResourceVersion. The step's status records
// their digest already, which the next attempt's pod pins.
type ToolResultsRequest struct {
	Step    string
	Results agentspec.Results
	// JSON is Results as stored; UID and ResourceVersion are ToolCallFacts'.
	JSON                 []byte
	UID, ResourceVersion string
}

// toolCallsHandedOver records an attempt that ended handing tool calls over: no failure, the
// step waits for them.
func (p *planner) toolCallsHandedOver(step *compile.Step, s *ergonv1alpha1.StepStatus, pod PodState) {
	if s.PodActive() {
		p.active--
	}
	p.history(s, &pod, ergonv1alpha1.StepWaiting, agentspec.ReasonToolCallsPending, pod.Message)
	s.Phase, s.Reason, s.Message = ergonv1alpha1.StepWaiting, ReasonToolCallPending, pod.Message
	p.start(s)
	p.decideToolCalls(step, s)
}

// waitingForToolCalls says whether a step waits for the tool calls of its last attempt.
func waitingForToolCalls(s *ergonv1alpha1.StepStatus) bool {
	return s.Phase == ergonv1alpha1.StepWaiting && s.Reason == ReasonToolCallPending
}

// handedOver counts a step's attempts that handed tool calls over: they use no retry.
func handedOver(s *ergonv1alpha1.StepStatus) int32 {
	var n int32
	for _, h := range s.History {
		if h.Reason == agentspec.ReasonToolCallsPending {
			n++
		}
	}
	return n
}

// decideToolCalls fulfils the tool calls of a step's last attempt and, once all are
// answered, stores their results and starts the next attempt.
func (p *planner) decideToolCalls(step *compile.Step, s *ergonv1alpha1.StepStatus) {
	for _, name := range []string{naming.CheckpointConfigMapName(p.f.Run.Name, step.Name),
		naming.ToolResultsConfigMapName(p.f.Run.Name, step.Name)} {
		if msg, conflict := p.f.Conflicts[name]; conflict {
			p.fail(s, step, ergonv1alpha1.ReasonNameConflict, "the tool calls of its last attempt cannot be fulfilled: "+msg)
			return
		}
	}
	tc := p.f.ToolCalls[step.Name]
	if tc.Pending == nil || tc.Pending.Attempt != s.Attempts {
		since := p.f.Now
		for _, h := range s.History {
			if h.Attempt == s.Attempts && h.FinishedAt != nil {
				since = h.FinishedAt.Time
			}
		}
		if p.f.Now.Sub(since) >= toolCallsLostAfter {
			p.fail(s, step, ReasonToolCallsLost, fmt.Sprintf("attempt %d handed tool calls over, but the checkpoint that lists "+
				"them was not read from its pod's log within %s", s.Attempts, toolCallsLostAfter))
			return
		}
		s.Message = fmt.Sprintf("attempt %d handed tool calls over; reading the checkpoint that lists them", s.Attempts)
		p.wakeAt(p.f.Now.Add(toolCallsPoll))
		return
	}
	var results []agentspec.ToolResult
	var waits []string
	for _, call := range tc.Pending.Calls {
		res, wait := p.toolCall(step, call, tc)
		if wait != "" {
			waits = append(waits, wait)
			continue
		}
		results = append(results, res)
	}
	if len(waits) > 0 {
		s.Message = "waiting for " + strings.Join(waits, "; ")
		return
	}
	s.Message = fmt.Sprintf("the results of the %d tool calls of attempt %d are in; attempt %d waits for room to start",
		len(results), s.Attempts, s.Attempts+1)
	if tc.Stored != s.Attempts {
		stored := agentspec.Results{Attempt: s.Attempts, Results: results}
		b, _ := json.Marshal(stored) // plain data
		p.plan.ToolResults = append(p.plan.ToolResults, ToolResultsRequest{Step: step.Name, Results: stored, JSON: b,
			UID: tc.ResultsUID, ResourceVersion: tc.ResultsVersion})
		// The next attempt reads them, and the controller trusts them, by this digest.
		s.ToolResultsSHA256 = wire.Digest(b)
	}
	p.startAttempt(step, s, s.Attempts+1)
}

// toolCall fulfils one call: it returns its result, or what it waits for.
func (p *planner) toolCall(step *compile.Step, call agentspec.ToolRequest, tc ToolCallFacts) (agentspec.ToolResult, string) {
	res := agentspec.ToolResult{ID: call.ID}
	failed := func(format string, args ...any) (agentspec.ToolResult, string) {
		res.Content, res.Error = "error: "+fmt.Sprintf(format, args...), true
		return res, ""
	}
	tool := agentTool(step, call.Tool)
	key := call.ID
	switch {
	// A question or a message is asked once per attempt that handed it over, under a key of
	// its own: a model server that reuses call ids across turns must not get an earlier answer.
	case call.Kind == agentspec.RequestMessage:
		key = fmt.Sprintf("%s/%d/%s", agentspec.RequestMessage, tc.Pending.Attempt, call.ID)
	case tool != nil && tool.AsksHuman():
		key = fmt.Sprintf("%s/%d/%s", agentspec.RequestAsk, tc.Pending.Attempt, call.ID)
	}
	name := naming.ToolCallName(p.f.Run.Name, step.Name, key)
	if msg, conflict := p.f.Conflicts[name]; conflict {
		return failed("%s", msg)
	}
	if call.Kind == agentspec.RequestMessage {
		return p.messageCall(step, call, key, name, res)
	}
	if tool == nil {
		return failed("the step has no tool %q", call.Tool)
	}
	// The Scene says what a tool is and which tools need approval, whatever the pod's request says.
	if tool.AsksHuman() {
		return p.askCall(step, call, tool, key, name, res)
	}
	if call.NeedsApproval() || tool.NeedsApproval() {
		gate, ok := p.f.Gates[name]
		if !ok {
			p.plan.Gates = append(p.plan.Gates, GateRequest{Name: name, Step: step, Message: approvalMessage(p.f.Run.Name, step.Name, call),
				ToolCall: call.ID, Tool: tool})
		}
		if !ok || !gate.Decided {
			return res, fmt.Sprintf("approval of a call of %s (Gate %s)", call.Tool, name)
		}
		res.Approval = &agentspec.Approval{Approved: gate.Option != optionReject, By: gate.DecidedBy, Comment: gate.Comment, Gate: name}
		if !res.Approval.Approved {
			res.Content, res.Error = fmt.Sprintf("the call was rejected by %s", gate.DecidedBy), true
			if gate.Comment != "" {
				res.Content += ": " + gate.Comment
			}
			return res, ""
		}
		if call.Kind == agentspec.RequestApproval {
			return res, "" // the next attempt runs it
		}
	}
	if call.Kind == agentspec.RequestContainer {
		return p.toolPodCall(step, call, tool, name, tc.Pending.Attempt, res)
	}
	if msg := tc.Invalid[call.ID]; msg != "" {
		return failed("%s", msg)
	}
	child, ok := p.f.Children[name]
	if !ok {
		params, err := ArgumentParams(call.Arguments)
		if err != nil {
			return failed("%v", err)
		}
		if refusal := p.refuseChild(); refusal != nil {
			// The model is told, as of any call that cannot run, and goes on without it.
			return failed("Ergon did not call Scene %s (%s): %s", tool.Scene, refusal.Reason, refusal.Message)
		}
		p.plan.Children = append(p.plan.Children, ChildRequest{Name: name, Step: step.Name, Scene: string(tool.Scene), Params: params})
		return res, fmt.Sprintf("%s (child Run %s of Scene %s)", call.Tool, name, tool.Scene)
	}
	res.ChildRun = name
	switch child.Phase {
	case ergonv1alpha1.RunSucceeded:
		res.Content = capResult(child.Value)
		return res, ""
	case ergonv1alpha1.RunFailed, ergonv1alpha1.RunCancelled:
		return failed("the Run %s of Scene %s ended %s: %s", name, tool.Scene, child.Phase, child.Message)
	}
	return res, fmt.Sprintf("%s (child Run %s of Scene %s)", call.Tool, name, tool.Scene)
}

// optionReject is the Gate option that rejects.
const optionReject = gatepolicy.OptionReject

// maxToolResult caps a result stored for the next attempt, as the runtime caps its own tools'.
const maxToolResult = 64 << 10

func capResult(s string) string {
	if len(s) <= maxToolResult {
		return s
	}
	return s[:maxToolResult] + fmt.Sprintf("\n[truncated: %d of %d bytes shown]", maxToolResult, len(s))
}

// maxGateMessage bounds a Gate's message (the Gate kind's own limit).
const maxGateMessage = 4096

// gateMessage cuts a Gate's message to maxGateMessage, saying so, without splitting a
// character.
func gateMessage(msg string) string {
	if len(msg) <= maxGateMessage {
		return msg
	}
	return strings.ToValidUTF8(msg[:maxGateMessage-len(" […]")], "") + " […]"
}

// approvalMessage is what a tool call's Gate asks. The arguments are the runtime's, redacted.
func approvalMessage(run, step string, call agentspec.ToolRequest) string {
	return gateMessage(fmt.Sprintf("The agent of step %s of Run %s asks to call the tool %s with the arguments:\n%s",
		step, run, call.Tool, call.Arguments))
}

// agentTool is the tool of an agent step the model calls by name: an entry of its tools, or
// the MCP server entry that offers the tool.
func agentTool(step *compile.Step, name string) *ergonv1alpha1.AgentTool {
	if step.Spec.Agent == nil {
		return nil
	}
	for i, t := range step.Spec.Agent.Tools {
		if t.ToolName() == name || (t.MCP != nil && slices.Contains(t.MCP.Allow, name)) {
			return &step.Spec.Agent.Tools[i]
		}
	}
	return nil
}

// ArgumentParams turns a Scene tool call's arguments, a JSON object, into the params of the
// child Run: strings as they are, other values as JSON.
func ArgumentParams(args string) (map[string]string, error) {
	if strings.TrimSpace(args) == "" {
		return map[string]string{}, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(args), &m); err != nil {
		return nil, fmt.Errorf("the arguments are not a JSON object: %v", err)
	}
	params := make(map[string]string, len(m))
	for k, v := range m {
		var s string
		if json.Unmarshal(v, &s) == nil {
			params[k] = s
			continue
		}
		params[k] = string(v)
	}
	return params, nil
}

// toolCallChildren are the child Runs a step's handed-over calls started and that still run:
// the Run cancels them when it stops.
func (p *planner) toolCallChildren(step string) []string {
	return p.pendingCalls(step, func(name string) bool {
		c, ok := p.f.Children[name]
		return ok && !c.Phase.Finished()
	})
}

// pendingCalls are the objects (child Runs or pods, by name) of a step's handed-over tool
// calls for which running says yes.
func (p *planner) pendingCalls(step string, running func(name string) bool) []string {
	tc := p.f.ToolCalls[step]
	if tc.Pending == nil {
		return nil
	}
	var names []string
	for _, call := range tc.Pending.Calls {
		if name := naming.ToolCallName(p.f.Run.Name, step, call.ID); running(name) {
			names = append(names, name)
		}
	}
	return names
}
