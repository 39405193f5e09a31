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
	"time"

	"github.com/ergon-dev/ergon/internal/agentspec"
	"github.com/ergon-dev/ergon/internal/memory"
)

// Transcript is the record of one attempt: every message, tool call and result, with token
// usage and timings. It is the step's second output. Secret values are redacted from it and
// tool results are capped at TranscriptToolResultSize.
type Transcript struct {
	Model string `json:"model"`
	// Policies names the versioned behaviours of the runtime that shaped the conversation,
	// by kind (context, checkpoint): results are comparable only under the same ones.
	Policies map[string]string `json:"policies,omitempty"`
	// ContextBudget is the context policy's budget in characters (0: none).
	ContextBudget int64     `json:"contextBudget,omitempty"`
	StartedAt     time.Time `json:"startedAt"`
	FinishedAt    time.Time `json:"finishedAt"`
	// Outcome is Succeeded or the reason the attempt failed; Message says more.
	Outcome string  `json:"outcome"`
	Message string  `json:"message,omitempty"`
	Usage   Usage   `json:"usage"`
	Entries []Entry `json:"entries"`
	// Memory lists the writes the remember tool proposed, in order, when the attempt
	// succeeded: the controller applies them to the Scene's memory.
	Memory []memory.Write `json:"memory,omitempty"`
}

// Usage sums the model calls of an attempt, as the API reports them.
type Usage struct {
	Turns            int   `json:"turns"`
	PromptTokens     int64 `json:"promptTokens"`
	CompletionTokens int64 `json:"completionTokens"`
	TotalTokens      int64 `json:"totalTokens"`
	// Cost of the calls, a decimal string, when the models called have a pricing.
	Cost string `json:"cost,omitempty"`
}

// Entry is one message of the conversation.
type Entry struct {
	// Turn is the model call the entry belongs to (0 for the opening messages).
	Turn int `json:"turn"`
	// Role is system, user, assistant or tool; note for what the runtime itself did, such as
	// the context policy trimming the conversation.
	Role    string `json:"role"`
	Content string `json:"content,omitempty"`
	// ToolCalls are the calls an assistant message asks for.
	ToolCalls []ToolCallRecord `json:"toolCalls,omitempty"`
	// ToolCallID and Tool identify the call a tool message answers; Error is set when the
	// tool failed (its message is the content).
	ToolCallID string `json:"toolCallID,omitempty"`
	Tool       string `json:"tool,omitempty"`
	Error      bool   `json:"error,omitempty"`
	// Truncated is the size of a tool result cut to fit the transcript.
	Truncated int `json:"truncated,omitempty"`
	// Usage of the model call that produced an assistant message.
	Usage *Usage `json:"usage,omitempty"`
	// DurationMS is how long the model call or the tool took.
	DurationMS int64 `json:"durationMs,omitempty"`
	// Model names the fallback model that answered, on assistant entries after a switch.
	Model string `json:"model,omitempty"`
	// Switch, on a note, records a switch to a fallback model.
	Switch *ModelSwitch `json:"switch,omitempty"`
	// Approval, on the result of a call that needed approval, is who decided and how;
	// ChildRun, on the result of a Scene tool's call, the Run that answered it.
	Approval *agentspec.Approval `json:"approval,omitempty"`
	ChildRun string              `json:"childRun,omitempty"`
	// ToolPod, on the result of a container tool's call, is the pod that ran it.
	ToolPod string `json:"toolPod,omitempty"`
	// From, on a user message of a conversation, is who wrote it, as the API server
	// authenticated them.
	From string `json:"from,omitempty"`
}

// ToolCallRecord is one tool call the model asked for.
type ToolCallRecord struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Roles of transcript entries.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
	RoleNote      = "note"
)

// TranscriptToolResultSize caps each tool result kept in the transcript.
const TranscriptToolResultSize = 4096
