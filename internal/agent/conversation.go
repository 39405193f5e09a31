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
	"github.com/openai/openai-go/v3"
)

// Message is one message of the conversation as the runtime keeps it: what each request
// sends, what the context policy measures and trims, and what a checkpoint saves. Its text is
// redacted.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content,omitempty"`
	// ToolCalls are the calls of an assistant message.
	ToolCalls []ToolCallRecord `json:"toolCalls,omitempty"`
	// ToolCallID and Tool identify the call a tool message answers.
	ToolCallID string `json:"toolCallID,omitempty"`
	Tool       string `json:"tool,omitempty"`
	// Turn is the model call the message belongs to (0 for the opening messages).
	Turn int `json:"turn"`
	// Pinned messages are never trimmed: the system prompt, the context and the task.
	Pinned bool `json:"pinned,omitempty"`
	// Trimmed says the context policy replaced the content (a tool result) with a stub.
	Trimmed bool `json:"trimmed,omitempty"`
	// Marker is the note that stands for the messages the context policy dropped.
	Marker bool `json:"marker,omitempty"`
}

// messageOverhead is what a message costs besides its text, in characters: its role and the
// JSON around it, roughly.
const messageOverhead = 16

// size is what the context policy counts for a message, in characters.
func (m *Message) size() int64 {
	n := int64(len(m.Content) + len(m.ToolCallID) + messageOverhead)
	for _, c := range m.ToolCalls {
		n += int64(len(c.ID) + len(c.Name) + len(c.Arguments) + messageOverhead)
	}
	return n
}

// param is the message as the SDK sends it.
func (m *Message) param() openai.ChatCompletionMessageParamUnion {
	switch m.Role {
	case RoleSystem:
		return openai.SystemMessage(m.Content)
	case RoleTool:
		return openai.ToolMessage(m.Content, m.ToolCallID)
	case RoleAssistant:
		a := openai.ChatCompletionAssistantMessageParam{}
		if m.Content != "" || len(m.ToolCalls) == 0 {
			a.Content.OfString = openai.String(m.Content)
		}
		for _, c := range m.ToolCalls {
			a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
				OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{ID: c.ID,
					Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: c.Name, Arguments: c.Arguments}},
			})
		}
		return openai.ChatCompletionMessageParamUnion{OfAssistant: &a}
	default:
		return openai.UserMessage(m.Content)
	}
}

// toParams is the conversation as the SDK sends it.
func toParams(conv []Message) []openai.ChatCompletionMessageParamUnion {
	out := make([]openai.ChatCompletionMessageParamUnion, len(conv))
	for i := range conv {
		out[i] = conv[i].param()
	}
	return out
}
