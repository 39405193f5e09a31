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

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/agentspec"
	"github.com/ergon-dev/ergon/internal/compile"
	"github.com/ergon-dev/ergon/internal/humaninput"
	"github.com/ergon-dev/ergon/internal/naming"
)

// An MCP server's question (elicitation; internal/agent/elicit.go): a running attempt lists
// it in its progress line while its MCP session waits. Each question opens an input Gate like
// ask_human's, whose approvers and timeout are the MCP tool's ask; its decision goes back to
// the waiting pod as an agentspec.Answer. Unlike ask_human, the step keeps its pod meanwhile.

// RequestElicit keys the Gates of MCP servers' questions: elicit/ATTEMPT/ID.
const RequestElicit = "elicit"

// ElicitGate is the Gate request of a question a step's attempt waits on; an error says why
// the question cannot be put to people (the runtime checked it already; this is the
// controller's own check of what a pod's log says). The Gate's name is
// naming.ToolCallName(run, step, its key).
func ElicitGate(run string, step *compile.Step, attempt int32, ask agentspec.Ask) (GateRequest, error) {
	tool := askingServer(step, ask.Server)
	switch {
	case tool == nil:
		return GateRequest{}, fmt.Errorf("no MCP server of the step at %s may ask questions", ask.Server)
	case ask.ID == "" || len(ask.ID) > 16:
		return GateRequest{}, fmt.Errorf("the question's id %q is not one the runtime gives", ask.ID)
	case strings.TrimSpace(ask.Message) == "" || len(ask.Message) > agentspec.MaxAskMessage:
		return GateRequest{}, fmt.Errorf("the question's message is empty or longer than %d bytes", agentspec.MaxAskMessage)
	case len(ask.Schema) > agentspec.MaxAskSchema:
		return GateRequest{}, fmt.Errorf("the question's schema is longer than %d bytes", agentspec.MaxAskSchema)
	}
	if _, errs := humaninput.Parse(ask.Schema, field.NewPath("input")); len(errs) > 0 {
		return GateRequest{}, fmt.Errorf("the question's schema is not one a person can be asked with: %v", errs.ToAggregate())
	}
	key := fmt.Sprintf("%s/%d/%s", RequestElicit, attempt, ask.ID)
	message := gateMessage(fmt.Sprintf("The MCP server %s asks: %s", ask.Server, ask.Message))
	return GateRequest{Name: naming.ToolCallName(run, step.Name, key), Step: step, Message: message, ToolCall: key,
		Tool: tool, Input: &apiextensionsv1.JSON{Raw: slices.Clone(ask.Schema)}, Elicit: true}, nil
}

// ElicitAnswer is the answer a question's Gate gives the waiting pod, once decided: the
// values given, a refusal, or that nobody answered in time.
func ElicitAnswer(tool *ergonv1alpha1.AgentTool, gate GateState) (agentspec.Answer, bool) {
	switch {
	case !gate.Decided:
		return agentspec.Answer{}, false
	case gate.TimedOut:
		return agentspec.Answer{Action: agentspec.AnswerCancel,
			Why: fmt.Sprintf("nobody answered within %s", AskTimeout(tool))}, true
	case gate.Option == optionReject:
		return agentspec.Answer{Action: agentspec.AnswerDecline, By: gate.DecidedBy, Why: gate.Comment}, true
	}
	a := agentspec.Answer{Action: agentspec.AnswerAccept, By: gate.DecidedBy, Content: json.RawMessage(`{}`)}
	if gate.Values != "" {
		a.Content = json.RawMessage(gate.Values)
	}
	return a, true
}

// askingServer is the step's MCP tool at url that may ask questions, or nil.
func askingServer(step *compile.Step, url string) *ergonv1alpha1.AgentTool {
	if step == nil || step.Spec.Agent == nil {
		return nil
	}
	for i := range step.Spec.Agent.Tools {
		t := &step.Spec.Agent.Tools[i]
		if t.MCP != nil && t.Ask != nil && string(t.MCP.URL) == url {
			return t
		}
	}
	return nil
}

// AsksPeople reports whether an agent step has an MCP server that may ask questions.
func AsksPeople(step *compile.Step) bool {
	if step == nil || step.Spec.Agent == nil {
		return false
	}
	return slices.ContainsFunc(step.Spec.Agent.Tools, func(t ergonv1alpha1.AgentTool) bool { return t.MCP != nil && t.Ask != nil })
}
