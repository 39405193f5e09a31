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

package agentspec

import "encoding/json"

// The request channel: tool calls the runtime cannot carry out alone, since its pod has no
// credentials. The runtime ends its attempt with a checkpoint that lists them (Pending); the
// Run controller fulfils them (a child Run for a Scene tool, a Gate for a call that needs
// approval) and writes their results (Results) beside the checkpoint; the next attempt resumes
// from the checkpoint and hands the results to the model (docs/step-contract.md).

// Kinds of tool requests: what the controller does for the call.
const (
	// RequestScene runs a Scene as a child Run; its output is the result.
	RequestScene = "scene"
	// RequestApproval asks a person, through a Gate, whether a built-in tool may run; the
	// next attempt runs an approved call itself.
	RequestApproval = "approval"
	// RequestContainer runs a container tool's one-shot pod; what it writes to $ERGON_OUTPUT
	// is the result.
	RequestContainer = "container"
	// RequestAsk asks people a question (the tool ask_human) through an input Gate; their
	// answer, as JSON, is the result.
	RequestAsk = "ask"
	// RequestMessage hands a chat step's reply to the controller, which asks people for the
	// next message through an input Gate; the result is a Message as JSON.
	RequestMessage = "message"
)

// ToolConversation is the tool name of a chat step's RequestMessage; the model never calls it.
const ToolConversation = "conversation"

// Message is the result of a RequestMessage: what a person wrote next, or that the
// conversation ends (they ended it, or nobody wrote in time).
type Message struct {
	Text string `json:"text,omitempty"`
	// From is who wrote it, as the API server authenticated them.
	From string `json:"from,omitempty"`
	// End says the conversation is over; Why says how it ended.
	End bool   `json:"end,omitempty"`
	Why string `json:"why,omitempty"`
}

// Ask is a question a running attempt waits on while its MCP session stays open (an MCP
// server's elicitation). The runtime lists it in its progress line; the controller opens an
// input Gate for it and hands the Answer back in the pod's answers annotation, which the
// downward API projects into the file Spec.Answers names.
type Ask struct {
	// ID is unique within the attempt.
	ID string `json:"id"`
	// Server is the URL of the MCP server that asks.
	Server  string          `json:"server"`
	Message string          `json:"message"`
	Schema  json.RawMessage `json:"schema"`
}

// Answer is what people said to an Ask: Action is accept (with Content, the values given),
// decline, or cancel (nobody answered in time; Why says so).
type Answer struct {
	Action  string          `json:"action"`
	Content json.RawMessage `json:"content,omitempty"`
	By      string          `json:"by,omitempty"`
	Why     string          `json:"why,omitempty"`
	// Sig is the controller's Ed25519 signature of AnswerPayload, base64: anyone who may
	// patch the pod may write its annotation, so the pod trusts only what the controller signed.
	Sig string `json:"sig,omitempty"`
}

// AnswerPayload is what the signature of an answer covers: the pod it is for, the question,
// and the answer without its signature.
func AnswerPayload(podUID, id string, a Answer) []byte {
	a.Sig = ""
	b, _ := json.Marshal(struct {
		Pod    string `json:"pod"`
		ID     string `json:"id"`
		Answer Answer `json:"answer"`
	}{podUID, id, a}) // plain data
	return b
}

// Actions of an Answer, as MCP names them.
const (
	AnswerAccept  = "accept"
	AnswerDecline = "decline"
	AnswerCancel  = "cancel"
)

// Bounds of an Ask: its message and schema, as the progress line carries them.
const (
	MaxAskMessage = 4000
	MaxAskSchema  = 8 << 10
)

// Request bounds: calls a turn or a step may hand to the controller.
const (
	MaxRequestsPerTurn = 8
	MaxRequestsPerStep = 32
)

// ReasonToolCallsPending is the reason an attempt ends with when it hands tool calls to the
// controller. It is no failure: the step waits for the results, and the attempt counts
// against no retry budget.
const ReasonToolCallsPending = "ToolCallsPending"

// CallTool is a tool the controller carries out for the runtime: a Scene called as a tool.
type CallTool struct {
	// Name is what the model calls it by; Description what it is told about it.
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Kind is RequestScene, RequestContainer or RequestAsk.
	Kind string `json:"kind"`
	// Scene is the Scene the call runs.
	Scene string `json:"scene,omitempty"`
	// Parameters is the JSON Schema of the arguments (from the Scene's params, or a container
	// tool's parameters; none accepts any object).
	Parameters json.RawMessage `json:"parameters,omitempty"`
	// RequireApproval makes every call wait for a person's approval before it runs.
	RequireApproval bool `json:"requireApproval,omitempty"`
}

// ToolRequest is one call the runtime hands to the controller.
type ToolRequest struct {
	// ID is the model's id of the call; Tool the tool's name; Arguments the call's arguments
	// (JSON, redacted).
	ID        string `json:"id"`
	Tool      string `json:"tool"`
	Arguments string `json:"arguments"`
	// Kind is RequestScene or RequestApproval; Approval is set when a Scene call needs
	// approval first.
	Kind     string `json:"kind"`
	Approval bool   `json:"approval,omitempty"`
}

// NeedsApproval says whether a person must approve the call before it runs.
func (r *ToolRequest) NeedsApproval() bool {
	return r.Kind == RequestApproval || r.Approval
}

// Pending is what an attempt that ended with ReasonToolCallsPending waits for.
type Pending struct {
	// Attempt is the attempt that asked (1, 2, ...).
	Attempt int32         `json:"attempt"`
	Calls   []ToolRequest `json:"calls"`
}

// PendingOf reads the pending requests of a checkpoint document; nil when it has none.
func PendingOf(checkpoint []byte) *Pending {
	var c struct {
		Pending *Pending `json:"pending"`
	}
	if json.Unmarshal(checkpoint, &c) != nil {
		return nil
	}
	return c.Pending
}

// Results are the controller's answers to the requests of one attempt.
type Results struct {
	// Attempt is the attempt whose requests they answer.
	Attempt int32        `json:"attempt"`
	Results []ToolResult `json:"results"`
}

// ToolResult is the outcome of one request.
type ToolResult struct {
	// ID is the call's.
	ID string `json:"id"`
	// Content is the result for the model: a Scene's output, or why the call did not run.
	// Empty for an approved built-in call, which the next attempt runs.
	Content string `json:"content,omitempty"`
	// Error says the call failed or was rejected.
	Error bool `json:"error,omitempty"`
	// Approval is the decision on a call that needed approval.
	Approval *Approval `json:"approval,omitempty"`
	// ChildRun is the Run a Scene call ran.
	ChildRun string `json:"childRun,omitempty"`
	// ToolPod is the pod a container tool's call ran.
	ToolPod string `json:"toolPod,omitempty"`
}

// Approval is a person's decision on a call.
type Approval struct {
	Approved bool `json:"approved"`
	// By is who decided ("timeout" when the Gate's timeout did); Comment what they said.
	By      string `json:"by"`
	Comment string `json:"comment,omitempty"`
	// Gate is the Gate that asked.
	Gate string `json:"gate"`
}
