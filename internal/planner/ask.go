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
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/agentspec"
	"github.com/ergon-dev/ergon/internal/compile"
	"github.com/ergon-dev/ergon/internal/humaninput"
)

// An agent's question (the tool ask_human): each call opens an input Gate whose message is
// the question and whose input is the schema the model gave, or a text field. Whoever may
// answer it does, as on any input Gate; the values they gave are the call's result, and the
// agent's next attempt goes on with them. While the Gate waits, the step holds no pod.

// askFreeText is the input of a question asked without one: an answer in text.
const askFreeText = `{"type":"object","required":["answer"],` +
	`"properties":{"answer":{"type":"string","format":"multiline","title":"Answer"}}}`

// maxQuestion bounds a question, within a Gate's message.
const maxQuestion = 4000

// askOf reads the question and the input schema of a call of ask_human; the error is for the
// model, which may ask again.
func askOf(arguments string) (string, *apiextensionsv1.JSON, error) {
	var args struct {
		Question string          `json:"question"`
		Input    json.RawMessage `json:"input"`
	}
	if err := json.Unmarshal([]byte(arguments), &args); err != nil {
		return "", nil, fmt.Errorf("the arguments are not the object ask_human takes: %v", err)
	}
	question := strings.TrimSpace(args.Question)
	switch {
	case question == "":
		return "", nil, fmt.Errorf("ask_human needs a question")
	case len(question) > maxQuestion:
		return "", nil, fmt.Errorf("the question takes %d bytes, more than the %d a question may", len(question), maxQuestion)
	}
	input := []byte(askFreeText)
	if len(bytes.TrimSpace(args.Input)) > 0 && string(bytes.TrimSpace(args.Input)) != "null" {
		input = args.Input
	}
	if _, errs := humaninput.Parse(input, field.NewPath("input")); len(errs) > 0 {
		return "", nil, fmt.Errorf("the input is not a schema a person can be asked with: %v", errs.ToAggregate())
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, input); err != nil {
		return "", nil, fmt.Errorf("the input is not JSON: %v", err)
	}
	return question, &apiextensionsv1.JSON{Raw: compact.Bytes()}, nil
}

// askCall fulfils a call of ask_human: it returns the answer, or what it waits for.
func (p *planner) askCall(step *compile.Step, call agentspec.ToolRequest, tool *ergonv1alpha1.AgentTool, key, name string,
	res agentspec.ToolResult) (agentspec.ToolResult, string) {
	gate, ok := p.f.Gates[name]
	if !ok {
		question, input, err := askOf(call.Arguments)
		if err != nil {
			res.Content, res.Error = "error: "+err.Error(), true
			return res, ""
		}
		p.plan.Gates = append(p.plan.Gates, GateRequest{Name: name, Step: step, Message: question, ToolCall: key,
			Tool: tool, Input: input})
	}
	if !ok || !gate.Decided {
		return res, fmt.Sprintf("an answer to the question of %s (Gate %s)", call.Tool, name)
	}
	switch {
	case gate.TimedOut:
		res.Content, res.Error = fmt.Sprintf("error: nobody answered the question within %s; go on without the answer, "+
			"or say what you needed", AskTimeout(tool)), true
	case gate.Option == optionReject:
		res.Content, res.Error = fmt.Sprintf("error: %s declined to answer", gate.DecidedBy), true
		if gate.Comment != "" {
			res.Content += ": " + gate.Comment
		}
	case gate.Values == "":
		res.Content = "{}"
	default:
		res.Content = gate.Values
	}
	return res, ""
}

// AskTimeout is how long a question of the tool waits for its answer: an MCP server's, whose
// call waits in its pod, 10 minutes unless its ask says otherwise.
func AskTimeout(tool *ergonv1alpha1.AgentTool) time.Duration {
	switch {
	case tool != nil && tool.Ask != nil && tool.Ask.Timeout != nil:
		return tool.Ask.Timeout.Duration
	case tool != nil && tool.MCP != nil:
		return ergonv1alpha1.DefaultMCPAskTimeout
	}
	return ergonv1alpha1.DefaultAskTimeout
}

// messageInput is what a chat step's Gate asks: the next message, or the end.
const messageInput = `{"type":"object","properties":{` +
	`"message":{"type":"string","format":"multiline","title":"Your message","maxLength":4000},` +
	`"end":{"type":"boolean","title":"End the conversation","default":false}}}`

// messageCall fulfils a chat step's reply (a RequestMessage): an input Gate shows the reply
// and takes the next message; the result is an agentspec.Message. A rejection, an empty
// message, end, or the conversation's idle timeout ends the conversation.
func (p *planner) messageCall(step *compile.Step, call agentspec.ToolRequest, key, name string,
	res agentspec.ToolResult) (agentspec.ToolResult, string) {
	chat := step.Spec.Agent.Conversation
	if chat == nil {
		res.Content, res.Error = "error: the step is no conversation", true
		return res, ""
	}
	gate, ok := p.f.Gates[name]
	if !ok {
		var args struct {
			Reply string `json:"reply"`
		}
		_ = json.Unmarshal([]byte(call.Arguments), &args) // a reply that is no JSON shows as none
		reply := strings.TrimSpace(args.Reply)
		if reply == "" {
			reply = "(the agent said nothing)"
		}
		p.plan.Gates = append(p.plan.Gates, GateRequest{Name: name, Step: step, Message: gateMessage(reply), ToolCall: key,
			Input: &apiextensionsv1.JSON{Raw: []byte(messageInput)}, Chat: chat})
	}
	if !ok || !gate.Decided {
		return res, fmt.Sprintf("a message in the conversation (Gate %s)", name)
	}
	m := agentspec.Message{From: gate.DecidedBy}
	var values struct {
		Message string `json:"message"`
		End     bool   `json:"end"`
	}
	_ = json.Unmarshal([]byte(gate.Values), &values) // the Gate webhook checked them
	switch {
	case gate.TimedOut:
		m.End, m.From, m.Why = true, "", fmt.Sprintf("nobody wrote within %s", ConversationIdle(chat))
	case gate.Option == optionReject || values.End:
		m.End, m.Why = true, gate.DecidedBy+" ended the conversation"
	case strings.TrimSpace(values.Message) == "":
		m.End, m.Why = true, gate.DecidedBy+" sent no message: the conversation ends"
	default:
		m.Text = values.Message
	}
	b, _ := json.Marshal(m) // plain data
	res.Content = string(b)
	return res, ""
}

// ConversationIdle is how long a chat step's reply waits for the next message.
func ConversationIdle(chat *ergonv1alpha1.AgentConversation) time.Duration {
	if chat != nil && chat.IdleTimeout != nil {
		return chat.IdleTimeout.Duration
	}
	return ergonv1alpha1.DefaultConversationIdle
}
