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
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ergon-dev/ergon/test/fakellm"
)

// mcpServer is an MCP server built with the SDK, served over streamable HTTP on loopback.
type mcpServer struct {
	url   string
	mu    sync.Mutex
	calls []string // tool name and arguments of each call
}

type searchArgs struct {
	Query string `json:"query" jsonschema:"what to search for"`
	Limit int    `json:"limit,omitempty"`
}

func newMCPServer(t *testing.T) *mcpServer {
	t.Helper()
	m := &mcpServer{}
	s := mcp.NewServer(&mcp.Implementation{Name: "issues", Version: "v1.2.3"}, nil)
	record := func(req *mcp.CallToolRequest) {
		m.mu.Lock()
		defer m.mu.Unlock()
		m.calls = append(m.calls, req.Params.Name+" "+string(req.Params.Arguments))
	}
	mcp.AddTool(s, &mcp.Tool{Name: "search", Description: "Search the issues."},
		func(_ context.Context, req *mcp.CallToolRequest, in searchArgs) (*mcp.CallToolResult, any, error) {
			record(req)
			// The server echoes the API key: redaction must remove it.
			return &mcp.CallToolResult{Content: []mcp.Content{
				&mcp.TextContent{Text: "found 2 issues for " + in.Query + ": #7 crash on start, #9 " + apiKey},
				&mcp.ImageContent{MIMEType: "image/png", Data: []byte("png")},
			}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "close_issue", Description: "Close an issue."},
		func(_ context.Context, req *mcp.CallToolRequest, in struct {
			ID int `json:"id"`
		}) (*mcp.CallToolResult, any, error) {
			record(req)
			return nil, nil, errors.New("issue is locked")
		})
	mcp.AddTool(s, &mcp.Tool{Name: "delete_all", Description: "Delete every issue."},
		func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			record(req)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "all gone"}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "slow", Description: "Takes its time."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			record(req)
			select {
			case <-ctx.Done():
			case <-time.After(5 * time.Second):
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "late"}}}, nil, nil
		})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(srv.Close)
	m.url = srv.URL + "/mcp"
	return m
}

func (m *mcpServer) called() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.calls...)
}

// mcpSpec is a spec whose MCP server is m, allowed the given tools.
func mcpSpec(server string, allowHosts []string, allow ...string) Spec {
	return Spec{MCP: []MCPServer{{URL: server, Allow: allow, Description: "The team's issue tracker."}},
		HTTP: HTTPConfig{AllowHosts: allowHosts}}
}

func TestMCPToolsAreOfferedByAllowAndCalled(t *testing.T) {
	m := newMCPServer(t)
	script := fakellm.Script{Rules: []fakellm.Rule{
		{Match: fakellm.Match{LastRole: "user"}, Reply: fakellm.Reply{ToolCalls: []fakellm.ToolCall{
			{Name: "search", Arguments: `{"query":"crash","limit":2}`},
			{Name: "close_issue", Arguments: `{"id":7}`},
			{Name: "delete_all", Arguments: `{}`},
			{Name: "search", Arguments: `{"query":5}`},
		}}},
		{Match: fakellm.Match{LastRole: "tool"}, Reply: fakellm.Reply{Content: "Issue #7 is a crash on start."}},
	}}
	h := newHarness(t, script, mcpSpec(m.url, []string{"127.0.0.1"}, "search", "close_issue"))
	h.runner.Tools.HTTP = NewHTTPClient(nil, h.runner.Spec.HTTP.AllowHosts)
	out, tr, f := h.run()
	if f != nil {
		t.Fatalf("failed: %v", f)
	}
	if out != "Issue #7 is a crash on start." {
		t.Errorf("output = %q", out)
	}
	reqs := h.llm.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model calls, want 2", len(reqs))
	}
	// The model is offered the allowed tools only, with the server's schemas and descriptions.
	var offered []struct {
		Function struct {
			Name        string         `json:"name"`
			Description string         `json:"description"`
			Parameters  map[string]any `json:"parameters"`
		} `json:"function"`
	}
	if err := json.Unmarshal(reqs[0].Tools, &offered); err != nil {
		t.Fatal(err)
	}
	if len(offered) != 2 || offered[0].Function.Name != "search" || offered[1].Function.Name != "close_issue" {
		t.Fatalf("offered tools = %s; want search and close_issue", reqs[0].Tools)
	}
	search := offered[0].Function
	if search.Description != "The team's issue tracker.\n\nSearch the issues." {
		t.Errorf("description = %q", search.Description)
	}
	props, _ := search.Parameters["properties"].(map[string]any)
	if _, ok := props["query"]; !ok || search.Parameters["type"] != "object" {
		t.Errorf("search's parameters are not the server's input schema: %v", search.Parameters)
	}
	// The server saw the allowed, valid calls only, with the model's arguments.
	calls := m.called()
	slices.Sort(calls)
	if want := []string{`close_issue {"id":7}`, `search {"query":"crash","limit":2}`}; !slices.Equal(calls, want) {
		t.Errorf("the server saw %q; want %q", calls, want)
	}
	results := reqs[1].Messages[len(reqs[1].Messages)-4:]
	if r := results[0].Content; !strings.Contains(r, "found 2 issues for crash: #7 crash on start") ||
		!strings.Contains(r, "[image: image/png, 3 bytes, not shown]") {
		t.Errorf("search's result = %q", r)
	}
	if strings.Contains(transcriptJSON(t, tr), apiKey) || strings.Contains(results[0].Content, apiKey) ||
		!strings.Contains(results[0].Content, "#9 [REDACTED]") {
		t.Errorf("the secret the server returned was not redacted: %q", results[0].Content)
	}
	if r := results[1].Content; !strings.HasPrefix(r, "error: ") || !strings.Contains(r, "issue is locked") {
		t.Errorf("close_issue's isError result = %q", r)
	}
	if r := results[2].Content; !strings.Contains(r, `there is no tool "delete_all"; the tools are: search, close_issue`) {
		t.Errorf("delete_all's result = %q", r)
	}
	if r := results[3].Content; !strings.Contains(r, "error: invalid arguments") {
		t.Errorf("invalid arguments' result = %q", r)
	}
	if tr.Policies["mcp"] != MCPPolicy {
		t.Errorf("policies = %v", tr.Policies)
	}
	var note, errEntry bool
	for _, e := range tr.Entries {
		if e.Role == RoleNote && strings.Contains(e.Content, "MCP server "+m.url+" (issues v1.2.3) offers the tools search, close_issue") {
			note = true
		}
		if e.Role == RoleTool && e.Tool == "close_issue" && e.Error {
			errEntry = true
		}
	}
	if !note || !errEntry {
		t.Errorf("the transcript lacks the server note (%v) or close_issue's error (%v): %s", note, errEntry, transcriptJSON(t, tr))
	}
}

func TestMCPCallTimesOut(t *testing.T) {
	m := newMCPServer(t)
	script := fakellm.Script{Rules: []fakellm.Rule{
		{Match: fakellm.Match{LastRole: "user"}, Reply: fakellm.Reply{ToolCalls: []fakellm.ToolCall{{Name: "slow", Arguments: `{}`}}}},
		{Match: fakellm.Match{LastRole: "tool"}, Reply: fakellm.Reply{Content: "gave up"}},
	}}
	h := newHarness(t, script, mcpSpec(m.url, []string{"127.0.0.1"}, "slow"))
	h.runner.Tools.Timeout = 300 * time.Millisecond
	start := time.Now()
	_, _, f := h.run()
	if f != nil {
		t.Fatalf("failed: %v", f)
	}
	if d := time.Since(start); d > 4*time.Second {
		t.Errorf("the slow call took %s; the tool timeout is 300ms", d)
	}
	msgs := h.llm.Requests()[1].Messages
	if r := msgs[len(msgs)-1].Content; !strings.HasPrefix(r, "error: ") {
		t.Errorf("the slow call's result = %q; want an error", r)
	}
}

func TestMCPServerRefusedOrUnreachableFailsTheAttempt(t *testing.T) {
	m := newMCPServer(t)
	gone := httptest.NewServer(http.NotFoundHandler())
	goneURL := gone.URL + "/mcp"
	gone.Close()
	for _, tc := range []struct {
		name       string
		spec       Spec
		clientSet  bool
		wantInMsg  []string
		wantCalled bool
	}{
		{name: "loopback not in allowHosts", spec: mcpSpec(m.url, nil, "search"),
			wantInMsg: []string{"the MCP server " + m.url, "the address guard refuses 127.0.0.1", "127.0.0.0/8"}},
		{name: "loopback not in allowHosts, the runner's client", spec: mcpSpec(m.url, []string{"other.svc"}, "search"), clientSet: true,
			wantInMsg: []string{"the MCP server " + m.url, "the address guard refuses 127.0.0.1"}},
		{name: "unreachable", spec: mcpSpec(goneURL, []string{"127.0.0.1"}, "search"),
			wantInMsg: []string{"the MCP server " + goneURL, "connect"}},
		{name: "an allowed tool the server lacks", spec: mcpSpec(m.url, []string{"127.0.0.1"}, "search", "merge"),
			wantInMsg: []string{"the MCP server " + m.url, `offers no tool "merge"`, "search"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, fakellm.Script{Rules: []fakellm.Rule{{Reply: fakellm.Reply{Content: "done"}}}}, tc.spec)
			if tc.clientSet {
				h.runner.Tools.HTTP = NewHTTPClient(nil, tc.spec.HTTP.AllowHosts)
			}
			_, tr, f := h.run()
			if f != nil {
				t.Logf("failure: %s", f.Message)
			}
			for _, w := range tc.wantInMsg {
				wantFailure(t, f, ReasonMCPUnavailable, w)
			}
			if f.ExitCode != ExitProvider || tr.Outcome != ReasonMCPUnavailable {
				t.Errorf("exit %d, outcome %s", f.ExitCode, tr.Outcome)
			}
			if n := len(h.llm.Requests()); n != 0 {
				t.Errorf("the model was called %d times; an attempt without its MCP server must not start", n)
			}
		})
	}
}

// A server that is not listening yet when the attempt starts (just deployed, restarting, its
// Service not programmed yet) is tried again with the model calls' backoff; the address guard's
// refusal is not.
func TestMCPServerNotListeningYetIsTriedAgain(t *testing.T) {
	m := newMCPServer(t) // serves the MCP handler; its address is not the one the spec names
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close() // nothing listens there until the second backoff
	target, _ := url.Parse(m.url)
	proxy := &http.Server{Handler: httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: target.Host}),
		ReadHeaderTimeout: 5 * time.Second}
	t.Cleanup(func() { _ = proxy.Close() })
	script := fakellm.Script{Rules: []fakellm.Rule{{Reply: fakellm.Reply{Content: "done"}}}}
	h := newHarness(t, script, mcpSpec("http://"+addr+"/mcp", []string{"127.0.0.1"}, "search"))
	h.runner.Sleep = func(_ context.Context, d time.Duration) error {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.waits = append(h.waits, d)
		if len(h.waits) == 2 {
			l, err := net.Listen("tcp", addr)
			if err != nil {
				return err
			}
			go func() { _ = proxy.Serve(l) }()
		}
		return nil
	}
	out, tr, f := h.run()
	if f != nil {
		t.Fatalf("failed: %s", f.Message)
	}
	if out != "done" || len(h.waits) != 2 {
		t.Errorf("output %q after %d waits (%v), want done after 2", out, len(h.waits), h.waits)
	}
	if !strings.Contains(transcriptJSON(t, tr), "offers the tools search") {
		t.Errorf("the transcript does not note the server's tools: %s", transcriptJSON(t, tr))
	}

	guarded := newHarness(t, script, mcpSpec(m.url, nil, "search"))
	_, _, f = guarded.run()
	wantFailure(t, f, ReasonMCPUnavailable, "the address guard refuses")
	if len(guarded.waits) != 0 {
		t.Errorf("the address guard's refusal was tried again after %v", guarded.waits)
	}
}

// A server that is back makes the next attempt go on: MCPUnavailable keeps the checkpoint.
func TestMCPUnavailableKeepsTheCheckpoint(t *testing.T) {
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	h := newHarness(t, fakellm.Script{Rules: []fakellm.Rule{{Reply: fakellm.Reply{Content: "done"}}}},
		mcpSpec(gone.URL+"/mcp", []string{"127.0.0.1"}, "search"))
	var progress bytes.Buffer
	h.runner.Progress = &progress
	_, _, f := h.run()
	wantFailure(t, f, ReasonMCPUnavailable, gone.URL)
	if strings.Contains(progress.String(), `"reset":true`) {
		t.Errorf("MCPUnavailable reset the checkpoint: %s", progress.String())
	}
	if !resumable(ReasonMCPUnavailable) || resumable(ReasonOutputInvalid) {
		t.Error("resumable disagrees with the docs")
	}
}

func TestMCPToolNamesMustNotCollide(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec Spec
		want string
	}{
		{name: "with a built-in tool", spec: Spec{Tools: []string{"http_fetch"},
			MCP: []MCPServer{{URL: "http://a.example/mcp", Allow: []string{"http_fetch"}}}},
			want: `mcp[0].allow[0]: the tool "http_fetch" is also offered by tools`},
		{name: "across servers", spec: Spec{MCP: []MCPServer{
			{URL: "http://a.example/mcp", Allow: []string{"search"}},
			{URL: "http://b.example/mcp", Allow: []string{"fetch", "search"}}}},
			want: `mcp[1].allow[1]: the tool "search" is also offered by mcp[0].allow[0]`},
		{name: "a bad URL", spec: Spec{MCP: []MCPServer{{URL: "ftp://a.example/mcp", Allow: []string{"x"}}}},
			want: `mcp[0].url: "ftp://a.example/mcp" is not an absolute http or https URL`},
		{name: "no tools", spec: Spec{MCP: []MCPServer{{URL: "http://a.example/mcp"}}}, want: "mcp[0].allow is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, fakellm.Script{Rules: []fakellm.Rule{{Reply: fakellm.Reply{Content: "done"}}}}, tc.spec)
			_, _, f := h.run()
			wantFailure(t, f, ReasonSpecInvalid, tc.want)
		})
	}
}

func TestMCPText(t *testing.T) {
	for _, tc := range []struct {
		name string
		res  *mcp.CallToolResult
		want string
	}{
		{name: "texts", res: &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "a"}, &mcp.TextContent{Text: "b"}}},
			want: "a\nb"},
		{name: "embedded text resource", res: &mcp.CallToolResult{Content: []mcp.Content{
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///r.txt", Text: "hello"}}}},
			want: "[resource file:///r.txt]\nhello"},
		{name: "blob resource", res: &mcp.CallToolResult{Content: []mcp.Content{
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///r.bin", MIMEType: "application/zip", Blob: []byte("zip")}}}},
			want: "[resource file:///r.bin: application/zip, 3 bytes, not shown]"},
		{name: "link and audio", res: &mcp.CallToolResult{Content: []mcp.Content{
			&mcp.ResourceLink{URI: "https://x.example/a", Name: "a"}, &mcp.AudioContent{MIMEType: "audio/wav", Data: []byte("w")}}},
			want: "[resource link https://x.example/a: a]\n[audio: audio/wav, 1 bytes, not shown]"},
		{name: "structured only", res: &mcp.CallToolResult{StructuredContent: map[string]any{"n": 2}}, want: `{"n":2}`},
		{name: "nothing", res: &mcp.CallToolResult{}, want: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := mcpText(tc.res); got != tc.want {
				t.Errorf("mcpText = %q; want %q", got, tc.want)
			}
		})
	}
}
