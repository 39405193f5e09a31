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
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/ergon-dev/ergon/internal/agentspec"
)

// The request channel (docs/step-contract.md, "Tool calls the controller fulfils"): a call the
// pod cannot carry out alone — a Scene tool, or any call that needs a person's approval — is
// handed to the controller. The turn's other calls run; then the attempt ends with a
// checkpoint that lists the requests and the outcome ToolCallsPending, which is no failure.
// The controller fulfils them and starts the next attempt, which resumes from the
// checkpoint, gives the model the results and goes on.

// Exit code of an attempt that hands tool calls to the controller.
const ExitPending = 7

// ReasonCheckpointTooLarge fails an attempt whose checkpoint cannot carry its requests.
const ReasonCheckpointTooLarge = "CheckpointTooLarge"

// callToolParams are the definitions of the controller's tools, for the model.
func (l *loop) callToolParams() []openai.ChatCompletionToolUnionParam {
	var tools []openai.ChatCompletionToolUnionParam
	for _, t := range l.Spec.CallTools {
		params := map[string]any{"type": "object"}
		if len(t.Parameters) > 0 {
			_ = json.Unmarshal(t.Parameters, &params) // CheckSpec compiled it
		}
		tools = append(tools, openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name: t.Name, Description: openai.String(t.Description), Parameters: params,
		}))
	}
	return tools
}

// checkCallTools reports what is wrong with the spec's controller tools and approvals.
func checkCallTools(s *Spec) []error {
	var errs []error
	for i, t := range s.CallTools {
		switch {
		case t.Name == "":
			errs = append(errs, fmt.Errorf("callTools[%d].name is empty", i))
		case registry[t.Name] != nil || slices.Contains(s.Tools, t.Name):
			errs = append(errs, fmt.Errorf("callTools[%d]: %q is the name of a built-in tool", i, t.Name))
		}
		if !slices.Contains([]string{agentspec.RequestScene, agentspec.RequestContainer, agentspec.RequestAsk}, t.Kind) {
			errs = append(errs, fmt.Errorf("callTools[%d].kind %q is not supported", i, t.Kind))
		}
		if _, err := compileArgs(t.Name, t.Parameters); err != nil {
			errs = append(errs, fmt.Errorf("callTools[%d].parameters: %v", i, err))
		}
	}
	for _, n := range s.Approve {
		if !slices.Contains(s.Tools, n) && !mcpAllows(s, n) {
			errs = append(errs, fmt.Errorf("approve: %q is not one of the step's built-in or MCP tools", n))
		}
	}
	return errs
}

// compileArgs compiles a JSON Schema of a tool's arguments; none accepts any object.
func compileArgs(name string, schema json.RawMessage) (*jsonschema.Schema, error) {
	if len(schema) == 0 {
		schema = json.RawMessage(`{"type":"object"}`)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(name+".json", doc); err != nil {
		return nil, err
	}
	return c.Compile(name + ".json")
}

// checkArgs validates a call's arguments as Tool.call does.
func checkArgs(schema *jsonschema.Schema, args string) error {
	if args == "" {
		args = "{}"
	}
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(args))
	if err != nil {
		return fmt.Errorf("the arguments are not JSON: %v", err)
	}
	if schema == nil { // an MCP tool whose schema only its server can check
		return nil
	}
	if err := schema.Validate(v); err != nil {
		return fmt.Errorf("invalid arguments: %v", err)
	}
	return nil
}

// request says whether a call goes to the controller, and builds its request; a call whose
// arguments do not fit the tool's schema goes back to the model at once, as an error.
func (l *loop) request(tc openai.ChatCompletionMessageToolCallUnion) (*agentspec.ToolRequest, error) {
	name := tc.Function.Name
	req := &agentspec.ToolRequest{ID: tc.ID, Tool: name, Arguments: l.red.String(tc.Function.Arguments)}
	for _, t := range l.Spec.CallTools {
		if t.Name != name {
			continue
		}
		schema, err := compileArgs(t.Name, t.Parameters)
		if err == nil {
			err = checkArgs(schema, tc.Function.Arguments)
		}
		req.Kind, req.Approval = t.Kind, t.RequireApproval
		return req, err
	}
	if t := l.approvalTool(name); t != nil {
		req.Kind = agentspec.RequestApproval
		return req, checkArgs(t.schema, tc.Function.Arguments)
	}
	return nil, nil
}

// runTurnTools runs the calls of a turn the pod can carry out and returns the others as
// requests; their results are marked deferred. Calls past the bounds on requests go back to
// the model as errors.
func (l *loop) runTurnTools(ctx context.Context, calls []openai.ChatCompletionMessageToolCallUnion) ([]toolResult, []agentspec.ToolRequest) {
	results := make([]toolResult, len(calls))
	var local []openai.ChatCompletionMessageToolCallUnion
	var localAt []int
	var pending []agentspec.ToolRequest
	for i, tc := range calls {
		req, err := l.request(tc)
		switch {
		case err != nil:
			results[i] = toolResult{content: l.red.String("error: " + err.Error()), err: true}
		case req == nil:
			local, localAt = append(local, tc), append(localAt, i)
		case len(pending) >= agentspec.MaxRequestsPerTurn:
			results[i] = toolResult{err: true, content: fmt.Sprintf(
				"error: at most %d calls of one turn may wait for the controller; call %s again in the next turn",
				agentspec.MaxRequestsPerTurn, tc.Function.Name)}
		case l.requests+len(pending) >= agentspec.MaxRequestsPerStep:
			results[i] = toolResult{err: true, content: fmt.Sprintf(
				"error: the step has made its %d calls that wait for the controller; answer without %s",
				agentspec.MaxRequestsPerStep, tc.Function.Name)}
		default:
			pending = append(pending, *req)
			results[i].deferred = true
		}
	}
	for j, res := range l.callTools(ctx, local) {
		results[localAt[j]] = res
	}
	return results, pending
}

// handOver ends the attempt with its requests: a checkpoint that lists them, and the outcome
// ToolCallsPending.
func (l *loop) handOver(turn, repairs int, calls []agentspec.ToolRequest) error {
	if l.Progress == nil {
		return fail(ReasonSpecInvalid, ExitSpec, "the tools %s need the controller, which this runtime cannot reach: it writes no checkpoint",
			requestNames(calls))
	}
	l.requests += countedRequests(calls)
	for _, c := range calls {
		l.note(turn, "the call %s of %s waits for the controller: %s", c.ID, c.Tool, requestWhat(c))
	}
	l.handing = &agentspec.Pending{Attempt: l.Attempt, Calls: calls}
	defer func() { l.handing = nil }()
	if !l.checkpoint(turn, repairs) {
		return fail(ReasonCheckpointTooLarge, ExitBudget,
			"the checkpoint that would hand %s to the controller is too large; set a contextBudget", requestNames(calls))
	}
	return fail(agentspec.ReasonToolCallsPending, ExitPending, "the agent waits for %d tool calls: %s", len(calls), requestNames(calls))
}

func requestWhat(c agentspec.ToolRequest) string {
	what := "a child Run of its Scene"
	switch c.Kind {
	case agentspec.RequestContainer:
		what = "a one-shot pod of its container"
	case agentspec.RequestAsk:
		what = "a person's answer"
	case agentspec.RequestMessage:
		what = "a person's next message"
	}
	if c.Kind == agentspec.RequestApproval {
		what = "a person's approval, then it runs here"
	} else if c.Approval {
		what = "a person's approval, then " + what
	}
	return what
}

func requestNames(calls []agentspec.ToolRequest) string {
	names := make([]string, len(calls))
	for i, c := range calls {
		names[i] = c.Tool
		if c.NeedsApproval() {
			names[i] += " (approval)"
		}
	}
	return strings.Join(names, ", ")
}

// takeResults gives the model the results of the requests the checkpoint it resumed from
// lists: the controller's, and those of approved built-in calls, which run now. Without a
// result for every request the attempt hands them over again.
func (l *loop) takeResults(ctx context.Context, turn, repairs int) error {
	p := l.waiting
	l.waiting = nil
	got := map[string]agentspec.ToolResult{}
	if l.Results != nil && l.Results.Attempt == p.Attempt {
		for _, r := range l.Results.Results {
			got[r.ID] = r
		}
	}
	var run []openai.ChatCompletionMessageToolCallUnion
	for _, c := range p.Calls {
		r, ok := got[c.ID]
		if !ok {
			l.note(turn, "no result for the call %s of %s: handing the calls over again", c.ID, c.Tool)
			l.requests -= countedRequests(p.Calls) // counted when first handed over
			return l.handOver(turn, repairs, p.Calls)
		}
		if c.Kind == agentspec.RequestApproval && r.Approval != nil && r.Approval.Approved {
			run = append(run, openai.ChatCompletionMessageToolCallUnion{ID: c.ID, Type: "function",
				Function: openai.ChatCompletionMessageFunctionToolCallFunction{Name: c.Tool, Arguments: c.Arguments}})
		}
	}
	ran := l.runApproved(ctx, turn, repairs, p, run)
	l.started = nil
	for _, c := range p.Calls {
		r := got[c.ID]
		if c.Kind == agentspec.RequestMessage {
			l.takeMessage(turn, r)
			continue
		}
		res, ok := ran[c.ID]
		if !ok {
			res = toolResult{content: capString(l.red.String(r.Content), DefaultToolResult), err: r.Error}
		}
		if a := r.Approval; a != nil {
			verb := "rejected"
			if a.Approved {
				verb = "approved"
			}
			l.note(turn, "the call %s of %s was %s by %s (Gate %s)%s", c.ID, c.Tool, verb, a.By, a.Gate, comment(a.Comment))
		}
		if r.ChildRun != "" {
			l.note(turn, "the call %s of %s ran as child Run %s", c.ID, c.Tool, r.ChildRun)
		}
		if r.ToolPod != "" {
			l.note(turn, "the call %s of %s ran as tool pod %s", c.ID, c.Tool, r.ToolPod)
		}
		l.conv = append(l.conv, Message{Role: RoleTool, Turn: turn, Content: res.content, ToolCallID: c.ID, Tool: c.Tool})
		kept := capString(res.content, TranscriptToolResultSize)
		e := Entry{Turn: turn, Role: RoleTool, ToolCallID: c.ID, Tool: c.Tool, Content: kept, Error: res.err,
			DurationMS: res.took.Milliseconds(), Approval: r.Approval, ChildRun: r.ChildRun, ToolPod: r.ToolPod}
		if len(kept) != len(res.content) {
			e.Truncated = len(res.content)
		}
		l.t.Entries = append(l.t.Entries, e)
	}
	if ctx.Err() != nil {
		return l.ctxFailure(ctx)
	}
	l.checkpoint(turn, repairs)
	return nil
}

func comment(c string) string {
	if c == "" {
		return ""
	}
	return ": " + c
}
