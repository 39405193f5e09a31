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

package tracing

import (
	"encoding/json"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
)

// roleTool is the role of a transcript's entry that records a tool call's result.
const roleTool = "tool"

// transcript is what the spans read of an agent attempt's transcript (internal/agent's
// Transcript; genai_test.go writes one with that type, so the two cannot drift apart).
type transcript struct {
	Model      string    `json:"model"`
	StartedAt  time.Time `json:"startedAt"`
	FinishedAt time.Time `json:"finishedAt"`
	Outcome    string    `json:"outcome"`
	Message    string    `json:"message"`
	Usage      usage     `json:"usage"`
	Entries    []entry   `json:"entries"`
}

type usage struct {
	PromptTokens     int64 `json:"promptTokens"`
	CompletionTokens int64 `json:"completionTokens"`
}

type entry struct {
	Turn      int    `json:"turn"`
	Role      string `json:"role"`
	Content   string `json:"content"`
	ToolCalls []struct {
		ID        string `json:"id"`
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"toolCalls"`
	ToolCallID string `json:"toolCallID"`
	Tool       string `json:"tool"`
	Error      bool   `json:"error"`
	Usage      *usage `json:"usage"`
	DurationMS int64  `json:"durationMs"`
	Model      string `json:"model"`
	Approval   *struct {
		Approved bool   `json:"approved"`
		By       string `json:"by"`
	} `json:"approval"`
	ChildRun string `json:"childRun"`
	ToolPod  string `json:"toolPod"`
}

// providerName is gen_ai.provider.name of every model call: the agent runtime speaks
// OpenAI's chat completions API, to OpenAI or to any server that implements it.
const providerName = "openai"

// agent makes an agent attempt's span an invoke_agent span, and returns the spans of its
// model calls (chat) and tool calls (execute_tool), read from its transcript. The transcript
// records how long each call took, not when it began: the calls are laid end to end from the
// attempt's start, in the order they happened.
func (b *builder) agent(step string, info StepInfo, attempt trace.SpanContext, raw string, sp *Span) {
	c := b.Change
	sp.Name = "invoke_agent " + step
	sp.Kind = trace.SpanKindClient
	sp.Attributes = append(sp.Attributes,
		semconv.GenAIOperationNameInvokeAgent,
		semconv.GenAIAgentName(step),
		semconv.GenAIProviderNameKey.String(providerName),
	)
	if info.Model != "" {
		sp.Attributes = append(sp.Attributes, semconv.GenAIRequestModel(info.Model))
	}
	var t transcript
	if raw == "" || json.Unmarshal([]byte(raw), &t) != nil {
		return
	}
	sp.Attributes = append(sp.Attributes,
		semconv.GenAIUsageInputTokens(int(t.Usage.PromptTokens)),
		semconv.GenAIUsageOutputTokens(int(t.Usage.CompletionTokens)))
	// The attempt's span stays its pod's, from creation to the recorded end, so that it holds
	// its stages; it grows to hold the agent's calls too, whose times come from the agent's
	// clock, to the millisecond, where the status keeps seconds.
	at := sp.Start
	if !t.StartedAt.IsZero() && !t.FinishedAt.IsZero() {
		at = t.StartedAt
		if t.StartedAt.Before(sp.Start) {
			sp.Start = t.StartedAt
		}
		if t.FinishedAt.After(sp.End) {
			sp.End = t.FinishedAt
		}
	}
	calls := map[string]bool{}
	for i, e := range t.Entries {
		d := time.Duration(e.DurationMS) * time.Millisecond
		id := b.context("span", attempt.SpanID().String(), "entry", strconv.Itoa(i))
		if e.Role == roleTool && e.ToolCallID != "" && !calls[e.ToolCallID] {
			// Named by its call, which its tool pod knows before the transcript is written
			// (ToolCallContext); a call id a model used twice names only its first.
			calls[e.ToolCallID] = true
			id = b.context(toolCallParts(attempt, e.ToolCallID)...)
		}
		switch e.Role {
		case "assistant":
			model := firstOf(e.Model, t.Model, info.Model)
			s := Span{Name: "chat " + model, Context: id, Parent: attempt, Kind: trace.SpanKindClient, Start: at, End: at.Add(d),
				Attributes: []attribute.KeyValue{
					semconv.GenAIOperationNameChat,
					semconv.GenAIProviderNameKey.String(providerName),
					semconv.GenAIRequestModel(model),
					attribute.Int("ergon.agent.turn", e.Turn),
				}}
			if e.Usage != nil {
				s.Attributes = append(s.Attributes,
					semconv.GenAIUsageInputTokens(int(e.Usage.PromptTokens)),
					semconv.GenAIUsageOutputTokens(int(e.Usage.CompletionTokens)))
			}
			if c.Content {
				s.Attributes = append(s.Attributes, semconv.GenAIOutputMessagesKey.String(assistantMessage(e)))
			}
			b.out = append(b.out, s)
		case roleTool:
			s := Span{Name: "execute_tool " + e.Tool, Context: id, Parent: attempt, Kind: trace.SpanKindInternal, Start: at, End: at.Add(d),
				Attributes: []attribute.KeyValue{
					semconv.GenAIOperationNameExecuteTool,
					semconv.GenAIToolName(e.Tool),
					semconv.GenAIToolCallID(e.ToolCallID),
				}}
			if e.Approval != nil {
				s.Attributes = append(s.Attributes, attribute.Bool("ergon.tool.approved", e.Approval.Approved),
					attribute.String("ergon.tool.decided_by", e.Approval.By))
			}
			if e.ChildRun != "" {
				s.Attributes = append(s.Attributes, attribute.String("ergon.child_run.name", e.ChildRun))
			}
			if e.ToolPod != "" {
				s.Attributes = append(s.Attributes, semconv.K8SPodName(e.ToolPod))
			}
			if c.Content {
				s.Attributes = append(s.Attributes, semconv.GenAIToolCallResultKey.String(e.Content))
			}
			if e.Error {
				s.Status = codes.Error
				if c.Content {
					s.Message = e.Content
				}
			}
			b.out = append(b.out, s)
		default:
			continue
		}
		at = at.Add(d)
	}
	if t.Outcome != "" && t.Outcome != "Succeeded" {
		sp.Status, sp.Message = codes.Error, t.Outcome+": "+t.Message
	}
}

// assistantMessage is an assistant entry as gen_ai.output.messages carries it.
func assistantMessage(e entry) string {
	type part struct {
		Type      string `json:"type"`
		Content   string `json:"content,omitempty"`
		ID        string `json:"id,omitempty"`
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments,omitempty"`
	}
	var parts []part
	if e.Content != "" {
		parts = append(parts, part{Type: "text", Content: e.Content})
	}
	for _, call := range e.ToolCalls {
		parts = append(parts, part{Type: "tool_call", ID: call.ID, Name: call.Name, Arguments: call.Arguments})
	}
	b, _ := json.Marshal([]struct {
		Role  string `json:"role"`
		Parts []part `json:"parts"`
	}{{Role: "assistant", Parts: parts}})
	return string(b)
}
