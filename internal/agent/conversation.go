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
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/openai/openai-go/v3"

	"github.com/ergon-dev/ergon/internal/agentspec"
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
	// Images names the images (Runner.Images) shown with the message: a checkpoint keeps
	// their names, not their bytes, which the next attempt reads again.
	Images []string `json:"images,omitempty"`
}

// imageSize is what the context policy counts for an image, in characters: about the 765
// tokens a provider bills a large image at, at 4 characters a token.
const imageSize = 3072

// messageOverhead is what a message costs besides its text, in characters: its role and the
// JSON around it, roughly.
const messageOverhead = 16

// size is what the context policy counts for a message, in characters.
func (m *Message) size() int64 {
	n := int64(len(m.Content) + len(m.ToolCallID) + messageOverhead + len(m.Images)*imageSize)
	for _, c := range m.ToolCalls {
		n += int64(len(c.ID) + len(c.Name) + len(c.Arguments) + messageOverhead)
	}
	return n
}

// param is the message as the SDK sends it; a user message with images sends them as image
// parts, each a data URL.
func (m *Message) param(images []Image) openai.ChatCompletionMessageParamUnion {
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
		if len(m.Images) == 0 {
			return openai.UserMessage(m.Content)
		}
		parts := []openai.ChatCompletionContentPartUnionParam{openai.TextContentPart(m.Content)}
		for _, name := range m.Images {
			for _, img := range images {
				if img.Name == name {
					parts = append(parts, openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{
						URL: "data:" + img.MediaType + ";base64," + base64.StdEncoding.EncodeToString(img.Data)}))
				}
			}
		}
		return openai.UserMessage(parts)
	}
}

// toParams is the conversation as the SDK sends it.
func toParams(conv []Message, images []Image) []openai.ChatCompletionMessageParamUnion {
	out := make([]openai.ChatCompletionMessageParamUnion, len(conv))
	for i := range conv {
		out[i] = conv[i].param(images)
	}
	return out
}

// A chat step (Spec.Conversation): each reply that would end the step is handed to the
// controller instead, which asks people for the next message through an input Gate; the
// message comes back as a user message, stamped with who wrote it, and the model answers it.
// The conversation ends when a person ends it, nobody writes in time, or MaxMessages were
// written; the last reply is then the output.

// replyRequest hands a reply over, asking for the next message.
func replyRequest(turn int, reply string) agentspec.ToolRequest {
	args, _ := json.Marshal(map[string]string{"reply": reply}) // plain data
	return agentspec.ToolRequest{ID: fmt.Sprintf("message-%d", turn), Tool: agentspec.ToolConversation,
		Kind: agentspec.RequestMessage, Arguments: string(args)}
}

// countedRequests are the calls that count against the bounds on requests: not the
// messages of a chat, which Conversation.MaxMessages bounds.
func countedRequests(calls []agentspec.ToolRequest) int {
	n := 0
	for _, c := range calls {
		if c.Kind != agentspec.RequestMessage {
			n++
		}
	}
	return n
}

// messages counts the messages people wrote so far.
func (l *loop) messages() int {
	n := 0
	for _, e := range l.t.Entries {
		if e.Role == RoleUser && e.From != "" {
			n++
		}
	}
	return n
}

// takeMessage adds a person's message to the conversation, or ends it.
func (l *loop) takeMessage(turn int, r agentspec.ToolResult) {
	var m agentspec.Message
	if err := json.Unmarshal([]byte(r.Content), &m); err != nil || r.Error || m.End {
		why := m.Why
		if why == "" {
			why = r.Content
		}
		l.ended = true
		l.note(turn, "the conversation ended: %s", l.red.String(why))
		return
	}
	text := l.red.String(m.Text)
	l.conv = append(l.conv, Message{Role: RoleUser, Turn: turn, Content: text})
	l.t.Entries = append(l.t.Entries, Entry{Turn: turn, Role: RoleUser, Content: text, From: m.From})
}

// lastReply is the agent's last reply, the output of a conversation that ended.
func (l *loop) lastReply() string {
	for _, e := range slices.Backward(l.t.Entries) {
		if e.Role == RoleAssistant && len(e.ToolCalls) == 0 {
			return e.Content
		}
	}
	return ""
}

// answered ends the step with a valid answer, or, in a chat that may go on, hands the reply
// to the controller for a person to answer.
func (l *loop) answered(turn, repairs int, reply, out string) (string, error) {
	if c := l.Spec.Conversation; c != nil && l.messages() < c.MaxMessages {
		err := l.handOver(turn, repairs, []agentspec.ToolRequest{replyRequest(turn, reply)})
		if f, ok := err.(*Failure); ok && f.Reason == ReasonCheckpointTooLarge {
			// A conversation too long to keep ends with its last reply rather than failing.
			l.note(turn, "the conversation ended: its checkpoint grew past what a step may keep; a contextBudget keeps it smaller")
			return out, nil
		}
		return "", err
	}
	return out, nil
}
