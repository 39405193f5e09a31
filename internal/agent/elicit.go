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
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/ergon-dev/ergon/internal/agentspec"
	"github.com/ergon-dev/ergon/internal/humaninput"
	"github.com/ergon-dev/ergon/internal/outputs/wire"
)

// An MCP server's question (elicitation): while one of its tools runs, a server the step lets
// ask (MCPServer.Ask) may ask people for values. Its session is live, so the attempt waits in
// its pod, unlike ask_human, which hands its question over and ends the attempt. The runtime
// lists the question in its progress line, printed again every askRepeat so that it stays in
// the tail of the log the controller reads; the controller opens an input Gate for it and
// writes the answer into the pod's answers annotation, which the downward API projects into
// the file Spec.Answers names. Questions are asked one at a time. Nobody answering within
// the server's Ask (10 minutes by default) fails the question: the server is told so, and the
// transcript says it.

// How the runtime waits for an answer: it reads the answers file every askPoll, prints its
// progress line again every askRepeat, and gives up askGrace after the Gate's own timeout (the
// controller answers a Gate that timed out, unless it is down).
var (
	askPoll   = time.Second
	askRepeat = 15 * time.Second
	askGrace  = time.Minute
)

// asker asks the questions of an attempt's MCP servers, one at a time.
type asker struct {
	// one is held while a question waits for its answer.
	one sync.Mutex
	// mu guards what follows: the turn and usage the progress line tells (set by the loop
	// before a turn's tools run), the questions' count, and the notes for the transcript,
	// taken by drain.
	mu    sync.Mutex
	turn  int
	usage Usage
	seq   int
	notes []string
}

// elicitationHandler answers a server's elicitation/create requests, when the spec lets the
// server ask; nil otherwise, and the client does not declare the capability.
func (l *loop) elicitationHandler(srv MCPServer) func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	if srv.Ask == nil || l.Spec.Answers == "" || l.Progress == nil || len(l.AnswerKey) != ed25519.PublicKeySize {
		return nil
	}
	return func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return l.elicit(ctx, srv, req.Params)
	}
}

// elicit asks people the server's question and waits for their answer.
func (l *loop) elicit(ctx context.Context, srv MCPServer, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	if p.Mode == "url" {
		l.asks.note("the MCP server %s asked to send a person to a URL; Ergon answers only questions with a form", srv.URL)
		return nil, errors.New("this client answers only form elicitation, not url")
	}
	message := strings.TrimSpace(l.red.String(p.Message))
	schema, err := askSchema(p.RequestedSchema)
	switch {
	case message == "":
		err = errors.New("the question has no message")
	case len(message) > agentspec.MaxAskMessage:
		err = fmt.Errorf("the message takes %d bytes, more than the %d a question may", len(message), agentspec.MaxAskMessage)
	}
	if err != nil {
		l.asks.note("the MCP server %s asked a question Ergon cannot put to a person: %v", srv.URL, err)
		return nil, fmt.Errorf("the question cannot be put to a person: %w", err)
	}
	l.asks.one.Lock()
	defer l.asks.one.Unlock()
	l.asks.mu.Lock()
	l.asks.seq++
	ask := agentspec.Ask{ID: fmt.Sprintf("e%d", l.asks.seq), Server: srv.URL, Message: message, Schema: schema}
	l.asks.mu.Unlock()
	l.asks.note("the MCP server %s asks people (question %s): %s", srv.URL, ask.ID, message)
	a, err := l.waitForAnswer(ctx, ask, srv.Ask.Duration)
	if err != nil {
		l.asks.note("question %s of the MCP server %s failed: %v", ask.ID, srv.URL, err)
		return nil, err
	}
	switch a.Action {
	case agentspec.AnswerAccept:
		var content map[string]any
		if len(a.Content) > 0 {
			if err := json.Unmarshal(a.Content, &content); err != nil {
				return nil, fmt.Errorf("the answer is no JSON object: %w", err)
			}
		}
		l.asks.note("%s answered question %s: %s", a.By, ask.ID, l.red.String(string(a.Content)))
		return &mcp.ElicitResult{Action: agentspec.AnswerAccept, Content: content}, nil
	case agentspec.AnswerDecline:
		l.asks.note("%s declined to answer question %s%s", a.By, ask.ID, suffix(": ", l.red.String(a.Why)))
		return &mcp.ElicitResult{Action: agentspec.AnswerDecline}, nil
	}
	why := a.Why
	if why == "" {
		why = "nobody answered"
	}
	l.asks.note("question %s of the MCP server %s was not answered: %s", ask.ID, srv.URL, why)
	return nil, fmt.Errorf("the question was not answered: %s", why)
}

// waitForAnswer lists the question in the progress line and waits for its answer in the
// answers file, at most timeout and askGrace more.
func (l *loop) waitForAnswer(ctx context.Context, ask agentspec.Ask, timeout time.Duration) (agentspec.Answer, error) {
	deadline := time.NewTimer(timeout + askGrace)
	defer deadline.Stop()
	poll := time.NewTicker(askPoll)
	defer poll.Stop()
	var printed time.Time
	defer l.printAsks(nil) // the question waits no more
	for {
		if now := time.Now(); now.Sub(printed) >= askRepeat {
			l.printAsks([]agentspec.Ask{ask})
			printed = now
		}
		if a, ok := readAnswer(l.Spec.Answers, ask.ID); ok {
			if !l.signed(ask.ID, a) {
				// Anyone who may patch the pod can write its annotation; and a manager that
				// restarted since the pod started signs with another key.
				return agentspec.Answer{}, errors.New("an answer came that the controller did not sign for this pod " +
					"(written by hand, or the manager restarted since the attempt started); ask again")
			}
			return a, nil
		}
		select {
		case <-ctx.Done():
			return agentspec.Answer{}, fmt.Errorf("the attempt stopped while it waited: %w", context.Cause(ctx))
		case <-deadline.C:
			return agentspec.Answer{}, fmt.Errorf("nobody answered within %s", timeout)
		case <-poll.C:
		}
	}
}

// printAsks prints the progress line with the questions waiting.
func (l *loop) printAsks(asks []agentspec.Ask) {
	l.asks.mu.Lock()
	turn, u := l.asks.turn, l.asks.usage
	l.asks.mu.Unlock()
	p := wire.Progress{Turn: turn, PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens,
		TotalTokens: u.TotalTokens, Cost: u.Cost, Asks: asks}
	if err := wire.WriteProgress(l.Progress, p, nil); err != nil && l.Log != nil {
		l.Log(fmt.Sprintf("writing the progress: %v", err))
	}
}

// signed reports whether the controller signed the answer for this pod and question.
func (l *loop) signed(id string, a agentspec.Answer) bool {
	sig, err := base64.StdEncoding.DecodeString(a.Sig)
	return err == nil && ed25519.Verify(l.AnswerKey, agentspec.AnswerPayload(l.PodUID, id, a), sig)
}

// readAnswer reads the answer to a question from the answers file, if it is there.
func readAnswer(path, id string) (agentspec.Answer, bool) {
	b, err := os.ReadFile(path)
	if err != nil || len(bytes.TrimSpace(b)) == 0 {
		return agentspec.Answer{}, false
	}
	var answers map[string]agentspec.Answer
	if json.Unmarshal(b, &answers) != nil {
		return agentspec.Answer{}, false
	}
	a, ok := answers[id]
	return a, ok
}

// askSchema makes an elicitation's requested schema one a person can be asked with (an input
// Gate's, internal/humaninput): MCP's titled enums (oneOf or anyOf of const and title) become
// enums, its enumNames are dropped, and no schema asks only for a yes or no (an empty object).
func askSchema(requested any) (json.RawMessage, error) {
	if requested == nil {
		return json.RawMessage(`{"type":"object","properties":{}}`), nil
	}
	b, err := json.Marshal(requested)
	if err != nil {
		return nil, err
	}
	var doc any
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	b, err = json.Marshal(plainEnums(doc))
	if err != nil {
		return nil, err
	}
	if len(b) > agentspec.MaxAskSchema {
		return nil, fmt.Errorf("the schema takes %d bytes, more than the %d a question may", len(b), agentspec.MaxAskSchema)
	}
	if _, errs := humaninput.Parse(b, field.NewPath("requestedSchema")); len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	return b, nil
}

// plainEnums rewrites MCP's enum forms in a schema as plain enums, everywhere in it.
func plainEnums(doc any) any {
	switch d := doc.(type) {
	case map[string]any:
		for _, k := range []string{"oneOf", "anyOf"} {
			if opts, ok := d[k].([]any); ok {
				if enum, ok := constEnum(opts); ok {
					delete(d, k)
					d["enum"] = enum
				}
			}
		}
		delete(d, "enumNames")
		for k, v := range d {
			d[k] = plainEnums(v)
		}
		return d
	case []any:
		for i, v := range d {
			d[i] = plainEnums(v)
		}
	}
	return doc
}

// constEnum reads a list of {const, title} as an enum of the consts.
func constEnum(opts []any) ([]any, bool) {
	var enum []any
	for _, o := range opts {
		m, ok := o.(map[string]any)
		if !ok {
			return nil, false
		}
		c, ok := m["const"]
		if !ok {
			return nil, false
		}
		enum = append(enum, c)
	}
	return enum, len(enum) > 0
}

// at sets the turn and usage the progress line tells.
func (a *asker) at(turn int, u Usage) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.turn, a.usage = turn, u
}

// note keeps a note for the transcript; drain hands the notes over.
func (a *asker) note(format string, args ...any) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.notes = append(a.notes, fmt.Sprintf(format, args...))
}

func (a *asker) drain() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	notes := a.notes
	a.notes = nil
	return notes
}

func suffix(sep, s string) string {
	if s == "" {
		return ""
	}
	return sep + s
}
