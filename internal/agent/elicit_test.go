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
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ergon-dev/ergon/internal/agentspec"
	"github.com/ergon-dev/ergon/internal/outputs/wire"
	"github.com/ergon-dev/ergon/test/fakellm"
)

// askLog is a progress writer that calls on for each progress line that lists questions.
type askLog struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	asks []agentspec.Ask
	on   func(agentspec.Ask)
}

func (p *askLog) Write(b []byte) (int, error) {
	p.mu.Lock()
	p.buf.Write(b)
	prog, _ := wire.LastProgress(bytes.NewReader(b))
	var fresh []agentspec.Ask
	if prog != nil {
		for _, a := range prog.Asks {
			if len(p.asks) == 0 || p.asks[len(p.asks)-1].ID != a.ID {
				p.asks = append(p.asks, a)
				fresh = append(fresh, a)
			}
		}
	}
	p.mu.Unlock()
	for _, a := range fresh {
		if p.on != nil {
			p.on(a)
		}
	}
	return len(b), nil
}

// The controller's key, as the tests sign answers with it.
var controllerPub, controllerKey, _ = ed25519.GenerateKey(nil)

// sign signs an answer as the controller does, for the pod podUID.
func sign(key ed25519.PrivateKey, podUID, id string, a agentspec.Answer) agentspec.Answer {
	a.Sig = base64.StdEncoding.EncodeToString(ed25519.Sign(key, agentspec.AnswerPayload(podUID, id, a)))
	return a
}

// elicitHarness runs an agent whose model calls the MCP tool deploy, which asks a question
// (MCP elicitation) before it answers; answer, when set, is what people say to it, signed
// for the pod by the controller unless forge says how to write it otherwise.
func elicitHarness(t *testing.T, ask *agentspec.Duration, answer *agentspec.Answer) (string, *Transcript, *Failure, *askLog) {
	return elicitHarnessWith(t, ask, answer, func(id string, a agentspec.Answer) agentspec.Answer {
		return sign(controllerKey, "pod-uid-1", id, a)
	})
}

func elicitHarnessWith(t *testing.T, ask *agentspec.Duration, answer *agentspec.Answer,
	write func(id string, a agentspec.Answer) agentspec.Answer) (string, *Transcript, *Failure, *askLog) {
	t.Helper()
	server := httptest.NewServer(fakellm.MCPHandler([]fakellm.MCPTool{{Name: "deploy", Result: "deployed:",
		Elicit: &fakellm.Elicit{Message: "Which region?", Schema: map[string]any{
			"type": "object", "required": []any{"region"},
			"properties": map[string]any{"region": map[string]any{"type": "string", "title": "Region",
				"oneOf": []any{map[string]any{"const": "eu", "title": "Europe"}, map[string]any{"const": "us", "title": "US"}}}},
		}}}}))
	t.Cleanup(server.Close)
	script := fakellm.Script{Rules: []fakellm.Rule{
		{Match: fakellm.Match{LastRole: "user"}, Reply: fakellm.Reply{ToolCalls: []fakellm.ToolCall{{Name: "deploy", Arguments: `{}`}}}},
		{Match: fakellm.Match{LastRole: "tool"}, Reply: fakellm.Reply{Content: "the tool said: ", EchoLast: true}},
	}}
	answers := filepath.Join(t.TempDir(), "answers")
	spec := Spec{MCP: []MCPServer{{URL: server.URL + "/mcp", Allow: []string{"deploy"}, Ask: ask}},
		HTTP: HTTPConfig{AllowHosts: []string{"127.0.0.1"}}, Answers: answers}
	h := newHarness(t, script, spec)
	h.runner.Tools.HTTP = NewHTTPClient(nil, spec.HTTP.AllowHosts)
	h.runner.AnswerKey, h.runner.PodUID = controllerPub, "pod-uid-1"
	progress := &askLog{on: func(a agentspec.Ask) {
		if answer == nil {
			return
		}
		b, _ := json.Marshal(map[string]agentspec.Answer{a.ID: write(a.ID, *answer)})
		// As the kubelet updates a downward API volume: the file is replaced whole.
		tmp := answers + ".tmp"
		if err := os.WriteFile(tmp, b, 0o600); err == nil {
			_ = os.Rename(tmp, answers)
		}
	}}
	h.runner.Progress = progress
	out, tr, f := h.run()
	return out, tr, f, progress
}

func shorterWaits(t *testing.T) {
	t.Helper()
	poll, grace := askPoll, askGrace
	askPoll, askGrace = 10*time.Millisecond, 50*time.Millisecond
	t.Cleanup(func() { askPoll, askGrace = poll, grace })
}

func notes(tr *Transcript) string {
	var b strings.Builder
	for _, e := range tr.Entries {
		if e.Role == RoleNote {
			b.WriteString(e.Content + "\n")
		}
	}
	return b.String()
}

func TestAnMCPServersQuestionIsListedAndItsAnswerIsTheElicitationsResult(t *testing.T) {
	shorterWaits(t)
	out, tr, f, progress := elicitHarness(t, &agentspec.Duration{Duration: time.Minute},
		&agentspec.Answer{Action: agentspec.AnswerAccept, Content: json.RawMessage(`{"region":"eu"}`), By: "alice"})
	if f != nil {
		t.Fatalf("failed: %v", f)
	}
	if want := `the tool said: deployed: accept {"region":"eu"}`; out != want {
		t.Errorf("output = %q, want %q", out, want)
	}
	if len(progress.asks) != 1 {
		t.Fatalf("questions listed: %+v, want 1", progress.asks)
	}
	a := progress.asks[0]
	if a.ID != "e1" || a.Message != "Which region?" || !strings.HasSuffix(a.Server, "/mcp") {
		t.Errorf("question = %+v", a)
	}
	// MCP's titled enum is a plain enum an input Gate can hold.
	var schema struct {
		Properties map[string]map[string]any `json:"properties"`
	}
	if err := json.Unmarshal(a.Schema, &schema); err != nil {
		t.Fatal(err)
	}
	if got, _ := json.Marshal(schema.Properties["region"]["enum"]); string(got) != `["eu","us"]` {
		t.Errorf("the region's enum = %s, schema %s", got, a.Schema)
	}
	if _, has := schema.Properties["region"]["oneOf"]; has {
		t.Errorf("oneOf kept: %s", a.Schema)
	}
	n := notes(tr)
	for _, want := range []string{"asks people (question e1): Which region?", `alice answered question e1: {"region":"eu"}`} {
		if !strings.Contains(n, want) {
			t.Errorf("the transcript's notes lack %q:\n%s", want, n)
		}
	}
	// Once answered, the last progress line lists no question.
	if last, _ := wire.LastProgress(bytes.NewReader(progress.buf.Bytes())); last == nil || len(last.Asks) != 0 {
		t.Errorf("the last progress line = %+v, want one without questions", last)
	}
}

func TestADeclinedQuestionIsDeclined(t *testing.T) {
	shorterWaits(t)
	out, tr, f, _ := elicitHarness(t, &agentspec.Duration{Duration: time.Minute},
		&agentspec.Answer{Action: agentspec.AnswerDecline, By: "bob", Why: "not today"})
	if f != nil {
		t.Fatalf("failed: %v", f)
	}
	if want := `the tool said: deployed: decline null`; out != want {
		t.Errorf("output = %q, want %q", out, want)
	}
	if n := notes(tr); !strings.Contains(n, "bob declined to answer question e1: not today") {
		t.Errorf("notes:\n%s", n)
	}
}

func TestAQuestionNobodyAnswersFailsTheCallClearly(t *testing.T) {
	shorterWaits(t)
	out, tr, f, progress := elicitHarness(t, &agentspec.Duration{Duration: 20 * time.Millisecond}, nil)
	if f != nil {
		t.Fatalf("failed: %v", f)
	}
	if !strings.Contains(out, "the question failed") || !strings.Contains(out, "nobody answered within 20ms") {
		t.Errorf("output = %q, want the call's failure to say nobody answered", out)
	}
	if n := notes(tr); !strings.Contains(n, "question e1 of the MCP server") || !strings.Contains(n, "nobody answered within 20ms") {
		t.Errorf("notes:\n%s", n)
	}
	if len(progress.asks) != 1 {
		t.Errorf("questions listed: %+v", progress.asks)
	}
	// The Gate's own timeout answers with cancel: the call fails too, saying why.
	out, _, f, _ = elicitHarness(t, &agentspec.Duration{Duration: time.Minute},
		&agentspec.Answer{Action: agentspec.AnswerCancel, Why: "nobody answered within 1m0s"})
	if f != nil || !strings.Contains(out, "the question was not answered: nobody answered within 1m0s") {
		t.Errorf("output = %q, failure %v", out, f)
	}
}

func TestAnAnswerTheControllerDidNotSignForThePodIsRefused(t *testing.T) {
	shorterWaits(t)
	_, otherKey, _ := ed25519.GenerateKey(nil)
	accept := &agentspec.Answer{Action: agentspec.AnswerAccept, Content: json.RawMessage(`{"region":"us"}`), By: "ops-lead"}
	for name, write := range map[string]func(string, agentspec.Answer) agentspec.Answer{
		"unsigned, as someone who may patch the pod writes it": func(_ string, a agentspec.Answer) agentspec.Answer { return a },
		"signed with another key": func(id string, a agentspec.Answer) agentspec.Answer {
			return sign(otherKey, "pod-uid-1", id, a)
		},
		"signed for another pod": func(id string, a agentspec.Answer) agentspec.Answer {
			return sign(controllerKey, "pod-uid-2", id, a)
		},
		"signed for another question": func(_ string, a agentspec.Answer) agentspec.Answer {
			return sign(controllerKey, "pod-uid-1", "e7", a)
		},
		"signed, then changed": func(id string, a agentspec.Answer) agentspec.Answer {
			a = sign(controllerKey, "pod-uid-1", id, a)
			a.Content = json.RawMessage(`{"region":"eu"}`)
			return a
		},
	} {
		t.Run(name, func(t *testing.T) {
			out, tr, f, _ := elicitHarnessWith(t, &agentspec.Duration{Duration: time.Minute}, accept, write)
			if f != nil {
				t.Fatalf("failed: %v", f)
			}
			if strings.Contains(out, "accept") || !strings.Contains(out, "the controller did not sign for this pod") {
				t.Errorf("output = %q, want the answer refused", out)
			}
			if n := notes(tr); strings.Contains(n, "answered question") {
				t.Errorf("notes:\n%s", n)
			}
		})
	}
}

func TestAServerTheStepDoesNotLetAskCannotAsk(t *testing.T) {
	shorterWaits(t)
	out, _, f, progress := elicitHarness(t, nil, &agentspec.Answer{Action: agentspec.AnswerAccept, Content: json.RawMessage(`{"region":"eu"}`)})
	if f != nil {
		t.Fatalf("failed: %v", f)
	}
	if !strings.Contains(out, "the question failed") || strings.Contains(out, "accept") {
		t.Errorf("output = %q, want the question refused", out)
	}
	if len(progress.asks) != 0 {
		t.Errorf("questions listed: %+v, want none", progress.asks)
	}
}

func TestAskSchema(t *testing.T) {
	for _, c := range []struct {
		name      string
		requested any
		want, err string
	}{
		{name: "none asks for a yes or no", requested: nil, want: `{"type":"object","properties":{}}`},
		{name: "enumNames dropped",
			requested: map[string]any{"type": "object", "properties": map[string]any{
				"size": map[string]any{"type": "string", "enum": []any{"s", "m"}, "enumNames": []any{"Small", "Medium"}}}},
			want: `{"properties":{"size":{"enum":["s","m"],"type":"string"}},"type":"object"}`},
		{name: "multi-select anyOf",
			requested: map[string]any{"type": "object", "properties": map[string]any{
				"tags": map[string]any{"type": "array", "items": map[string]any{"type": "string",
					"anyOf": []any{map[string]any{"const": "a", "title": "A"}}}}}},
			want: `{"properties":{"tags":{"items":{"enum":["a"],"type":"string"},"type":"array"}},"type":"object"}`},
		{name: "a keyword no form holds", err: "requestedSchema.properties[x].if",
			requested: map[string]any{"type": "object", "properties": map[string]any{"x": map[string]any{"type": "string", "if": true}}}},
		{name: "too large", err: "more than the 8192",
			requested: map[string]any{"type": "object", "description": strings.Repeat("x", 9000)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := askSchema(c.requested)
			switch {
			case c.err != "":
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Errorf("err = %v, want one with %q", err, c.err)
				}
			case err != nil:
				t.Errorf("err = %v", err)
			case string(got) != c.want:
				t.Errorf("schema = %s, want %s", got, c.want)
			}
		})
	}
}
