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

// Package fakellm is a fake OpenAI-compatible chat completions server, scripted by a file:
// rules that match the conversation so far and say what to answer — text, tool calls, an
// error status with Retry-After, a malformed body. The agent runtime's tests use it in
// process; the end-to-end tests deploy it (cmd/fakellm) as a Service. It also serves fixed
// HTTP routes, so one image plays both the model and a service the agent fetches.
package fakellm

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"sigs.k8s.io/yaml"
)

// Script is what the server does.
type Script struct {
	// Rules are tried in order for each chat completion request; the first that matches and
	// has uses left answers.
	Rules []Rule `json:"rules"`
	// Routes are fixed answers to other paths, by path (GET or POST).
	Routes map[string]Route `json:"routes,omitempty"`
	// MaxContextChars, when set, is the model's context window in characters: a request whose
	// messages (contents and tool call arguments) are longer is refused with a 400
	// context_length_exceeded, as real APIs do.
	MaxContextChars int `json:"maxContextChars,omitempty"`
	// MCPTools, when set, are served as an MCP server at /mcp by the command (see MCPHandler).
	MCPTools []MCPTool `json:"mcpTools,omitempty"`
}

// Rule answers a request whose conversation matches.
type Rule struct {
	Match Match `json:"match,omitzero"`
	// Times bounds how often the rule answers; 0 means always.
	Times int   `json:"times,omitempty"`
	Reply Reply `json:"reply"`
}

// Match selects requests. Empty fields match anything.
type Match struct {
	// LastContains must appear in the last message.
	LastContains string `json:"lastContains,omitempty"`
	// AnyContains must appear in some message.
	AnyContains string `json:"anyContains,omitempty"`
	// ImageContains must appear in the URL of an image some message shows (a data URL
	// begins "data:image/png;base64,...").
	ImageContains string `json:"imageContains,omitempty"`
	// LastRole is the role of the last message: system, user, assistant or tool.
	LastRole string `json:"lastRole,omitempty"`
	// Model is the model the request names.
	Model string `json:"model,omitempty"`
}

// Reply is an answer.
type Reply struct {
	// Content of the assistant message.
	Content string `json:"content,omitempty"`
	// ToolCalls the assistant asks for.
	ToolCalls []ToolCall `json:"toolCalls,omitempty"`
	// Status other than 200 answers with an OpenAI-style error body holding Error.
	Status int    `json:"status,omitempty"`
	Error  string `json:"error,omitempty"`
	Code   string `json:"code,omitempty"`
	// RetryAfter is the Retry-After header, in seconds.
	RetryAfter string `json:"retryAfter,omitempty"`
	// Raw is sent as the body as it is, with status 200 unless Status says otherwise:
	// for malformed responses.
	Raw string `json:"raw,omitempty"`
	// Usage overrides the token counts the server reports.
	Usage *Usage `json:"usage,omitempty"`
	// Delay before answering.
	Delay string `json:"delay,omitempty"`
	// EchoLast appends the last message's content to Content: a model that repeats what it
	// was just told (a tool's result), so a test can see what reached it.
	EchoLast bool `json:"echoLast,omitempty"`
}

// ToolCall is one call the assistant asks for.
type ToolCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Usage is the token counts of an answer.
type Usage struct {
	Prompt     int64 `json:"prompt"`
	Completion int64 `json:"completion"`
}

// Route is a fixed HTTP answer.
type Route struct {
	Status      int    `json:"status,omitempty"`
	ContentType string `json:"contentType,omitempty"`
	Body        string `json:"body"`
}

// Message is a message of a request, as the server saw it. Content given as parts is read as
// its text parts, joined; its image parts' URLs are Images.
type Message struct {
	Role       string   `json:"role"`
	Content    string   `json:"content"`
	Images     []string `json:"images,omitempty"`
	ToolCallID string   `json:"tool_call_id,omitempty"`
	ToolCalls  []struct {
		ID       string `json:"id"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls,omitempty"`
}

// UnmarshalJSON reads content as a string or as parts.
func (m *Message) UnmarshalJSON(b []byte) error {
	type plain Message
	var raw struct {
		plain
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	*m = Message(raw.plain)
	if len(raw.Content) == 0 || string(raw.Content) == "null" {
		return nil
	}
	if raw.Content[0] == '"' {
		return json.Unmarshal(raw.Content, &m.Content)
	}
	var parts []struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		ImageURL struct {
			URL string `json:"url"`
		} `json:"image_url"`
	}
	if err := json.Unmarshal(raw.Content, &parts); err != nil {
		return err
	}
	var texts []string
	for _, p := range parts {
		switch p.Type {
		case "text":
			texts = append(texts, p.Text)
		case "image_url":
			m.Images = append(m.Images, p.ImageURL.URL)
		}
	}
	m.Content = strings.Join(texts, "\n")
	return nil
}

// Request is a chat completion request the server received.
type Request struct {
	Model       string          `json:"model"`
	Messages    []Message       `json:"messages"`
	Tools       json.RawMessage `json:"tools,omitempty"`
	Temperature *float64        `json:"temperature,omitempty"`
	Seed        *int64          `json:"seed,omitempty"`
	Parallel    *bool           `json:"parallel_tool_calls,omitempty"`
	// Authorization is the header the request carried.
	Authorization string `json:"-"`
}

// Server serves a Script.
type Server struct {
	mu       sync.Mutex
	script   Script
	used     []int
	requests []Request
	calls    int
}

// Load reads a script from a YAML or JSON file.
func Load(path string) (*Script, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var s Script
	if err := yaml.UnmarshalStrict(b, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &s, nil
}

// New serves a script.
func New(s Script) *Server {
	return &Server{script: s, used: make([]int, len(s.Rules))}
}

// Requests returns the chat completion requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// ServeHTTP answers chat completions under any prefix ending in /chat/completions, and routes.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasSuffix(r.URL.Path, "/chat/completions") && r.Method == http.MethodPost {
		s.chat(w, r)
		return
	}
	if r.URL.Path == "/healthz" {
		_, _ = io.WriteString(w, "ok")
		return
	}
	if r.URL.Path == "/_fakellm/requests" && r.Method == http.MethodGet {
		// How many chat completion requests the server received, for tests that run it
		// as a Service and cannot call Requests.
		s.mu.Lock()
		n := len(s.requests)
		s.mu.Unlock()
		writeJSON(w, http.StatusOK, map[string]int{"count": n})
		return
	}
	route, ok := s.script.Routes[r.URL.Path]
	if !ok {
		http.NotFound(w, r)
		return
	}
	if route.ContentType != "" {
		w.Header().Set("Content-Type", route.ContentType)
	}
	if route.Status != 0 {
		w.WriteHeader(route.Status)
	}
	_, _ = io.WriteString(w, route.Body)
}

func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	var req Request
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "fakellm: the request is not JSON: "+err.Error(), "")
		return
	}
	req.Authorization = r.Header.Get("Authorization")
	if n := req.chars(); s.script.MaxContextChars > 0 && n > s.script.MaxContextChars {
		s.mu.Lock()
		s.requests = append(s.requests, req)
		s.mu.Unlock()
		writeError(w, http.StatusBadRequest, fmt.Sprintf("fakellm: this model's maximum context length is %d characters; "+
			"the messages have %d", s.script.MaxContextChars, n), "context_length_exceeded")
		return
	}
	s.mu.Lock()
	s.requests = append(s.requests, req)
	s.calls++
	id := s.calls
	rule := -1
	for i, ru := range s.script.Rules {
		if (ru.Times == 0 || s.used[i] < ru.Times) && ru.Match.matches(&req) {
			rule = i
			s.used[i]++
			break
		}
	}
	s.mu.Unlock()
	if rule < 0 {
		writeError(w, http.StatusBadRequest, "fakellm: no rule of the script matches this conversation", "no_rule")
		return
	}
	reply := s.script.Rules[rule].Reply
	if d, err := time.ParseDuration(reply.Delay); err == nil {
		select {
		case <-time.After(d):
		case <-r.Context().Done():
			return
		}
	}
	if reply.RetryAfter != "" {
		w.Header().Set("Retry-After", reply.RetryAfter)
	}
	switch {
	case reply.Raw != "":
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(max(reply.Status, http.StatusOK))
		_, _ = io.WriteString(w, reply.Raw)
		return
	case reply.Status != 0 && reply.Status != http.StatusOK:
		writeError(w, reply.Status, reply.Error, reply.Code)
		return
	}
	writeJSON(w, http.StatusOK, completion(id, &req, reply))
}

// chars is the length of a request's messages: their contents and tool call arguments.
func (r *Request) chars() int {
	n := 0
	for _, m := range r.Messages {
		n += len(m.Content)
		for _, tc := range m.ToolCalls {
			n += len(tc.Function.Arguments)
		}
	}
	return n
}

func (m Match) matches(req *Request) bool {
	if m.Model != "" && m.Model != req.Model {
		return false
	}
	if len(req.Messages) == 0 {
		return m == Match{}
	}
	last := req.Messages[len(req.Messages)-1]
	if m.LastRole != "" && last.Role != m.LastRole {
		return false
	}
	if m.LastContains != "" && !strings.Contains(last.Content, m.LastContains) {
		return false
	}
	if m.AnyContains != "" {
		found := false
		for _, msg := range req.Messages {
			if strings.Contains(msg.Content, m.AnyContains) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	if m.ImageContains != "" {
		found := false
		for _, msg := range req.Messages {
			for _, u := range msg.Images {
				found = found || strings.Contains(u, m.ImageContains)
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func completion(id int, req *Request, reply Reply) map[string]any {
	if reply.EchoLast && len(req.Messages) > 0 {
		reply.Content += req.Messages[len(req.Messages)-1].Content
	}
	msg := map[string]any{"role": "assistant", "content": reply.Content}
	finish := "stop"
	if len(reply.ToolCalls) > 0 {
		finish = "tool_calls"
		var calls []map[string]any
		for i, tc := range reply.ToolCalls {
			calls = append(calls, map[string]any{
				"id": fmt.Sprintf("call_%d_%d", id, i), "type": "function",
				"function": map[string]any{"name": tc.Name, "arguments": tc.Arguments},
			})
		}
		msg["tool_calls"] = calls
	}
	// Deterministic counts, roughly four characters a token.
	var prompt int64
	for _, m := range req.Messages {
		prompt += int64(len(m.Content))/4 + 4
	}
	completionTokens := int64(len(reply.Content))/4 + 1
	for _, tc := range reply.ToolCalls {
		completionTokens += int64(len(tc.Arguments))/4 + 4
	}
	if reply.Usage != nil {
		prompt, completionTokens = reply.Usage.Prompt, reply.Usage.Completion
	}
	return map[string]any{
		"id": fmt.Sprintf("chatcmpl-%d", id), "object": "chat.completion", "created": 1700000000,
		"model":   req.Model,
		"choices": []map[string]any{{"index": 0, "finish_reason": finish, "message": msg}},
		"usage": map[string]any{"prompt_tokens": prompt, "completion_tokens": completionTokens,
			"total_tokens": prompt + completionTokens},
	}
}

func writeError(w http.ResponseWriter, status int, message, code string) {
	if message == "" {
		message = http.StatusText(status)
	}
	writeJSON(w, status, map[string]any{"error": map[string]any{"message": message, "type": "fakellm", "code": code}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
