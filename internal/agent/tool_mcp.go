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
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/ergon-dev/ergon/internal/agentspec"
)

// MCPServer is agentspec's.
type MCPServer = agentspec.MCPServer

// MCPPolicy names how the runtime uses MCP servers — the streamable HTTP transport, tools
// offered under their own names, a result's content rendered as text — and is recorded in
// the transcript's header of an attempt that has MCP tools.
const MCPPolicy = "mcp-streamable-http-text/v1"

// MCPMaxResponse caps one HTTP response (or server-sent event) from an MCP server; the
// tool's result is capped further, like every tool's.
const MCPMaxResponse = 8 << 20

// mcpToolName is what chat APIs accept as a function's name, and what admission accepts in
// mcp.allow.
var mcpToolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// mcpTools are the tools an attempt's MCP servers offer the model, by name, and the
// sessions that call them.
type mcpTools struct {
	byName   map[string]*Tool
	order    []string
	sessions []*mcp.ClientSession
}

// checkMCP reports what is wrong with the spec's MCP servers, and a tool name offered twice.
func checkMCP(s *Spec) []error {
	var errs []error
	names := map[string]string{}
	for _, t := range s.Tools {
		names[t] = "tools"
	}
	for i, srv := range s.MCP {
		field := fmt.Sprintf("mcp[%d]", i)
		if err := checkMCPURL(srv.URL); err != nil {
			errs = append(errs, fmt.Errorf("%s.url: %w", field, err))
		}
		if len(srv.Allow) == 0 {
			errs = append(errs, fmt.Errorf("%s.allow is empty", field))
		}
		for j, n := range srv.Allow {
			f := fmt.Sprintf("%s.allow[%d]", field, j)
			if !mcpToolName.MatchString(n) {
				errs = append(errs, fmt.Errorf("%s: %q is not a tool name (1 to 64 letters, digits, '_' or '-')", f, n))
				continue
			}
			if other, ok := names[n]; ok {
				errs = append(errs, fmt.Errorf("%s: the tool %q is also offered by %s; each tool needs a name of its own", f, n, other))
				continue
			}
			names[n] = f
		}
	}
	return errs
}

func checkMCPURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return err
	}
	if !u.IsAbs() || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q is not an absolute http or https URL", raw)
	}
	if u.User != nil {
		return errors.New("URLs with credentials are not allowed")
	}
	return nil
}

// connectMCP connects to the spec's MCP servers, through the same address guard as
// http_fetch, and lists their tools. A server that cannot be reached, or that does not offer
// a tool the spec allows, fails the attempt with ReasonMCPUnavailable. The sessions stay
// open for the attempt; close ends them.
func (l *loop) connectMCP(ctx context.Context, turn int) (*mcpTools, error) {
	m := &mcpTools{byName: map[string]*Tool{}}
	if len(l.Spec.MCP) == 0 {
		return m, nil
	}
	l.t.Policies["mcp"] = MCPPolicy
	hc := l.tools.HTTP
	if hc == nil {
		hc = NewHTTPClient(nil, l.Spec.HTTP.AllowHosts)
	}
	base := hc.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	hc = &http.Client{Transport: limitedTransport{base: base, max: MCPMaxResponse},
		CheckRedirect: hc.CheckRedirect, Jar: hc.Jar}
	for _, srv := range l.Spec.MCP {
		sess, tools, info, err := l.connectMCPRetrying(ctx, hc, srv)
		if err != nil {
			m.close()
			if ctx.Err() != nil {
				return nil, l.ctxFailure(ctx)
			}
			return nil, fail(ReasonMCPUnavailable, ExitProvider, "the MCP server %s: %v", srv.URL, err)
		}
		m.sessions = append(m.sessions, sess)
		for _, t := range tools {
			m.byName[t.Name] = t
			m.order = append(m.order, t.Name)
		}
		l.note(turn, "MCP server %s (%s) offers the tools %s", srv.URL, info, strings.Join(srv.Allow, ", "))
	}
	return m, nil
}

// connectMCPRetrying connects as connectMCPServer does, and tries again with the model calls'
// backoff (Retry) while nothing accepts the connection: a server just deployed, or restarting,
// or a Service whose endpoints the node has not programmed yet, is there a moment later. A
// refusal of the address guard, or an answer that is not MCP, fails at once.
func (l *loop) connectMCPRetrying(ctx context.Context, hc *http.Client, srv MCPServer) (*mcp.ClientSession, []*Tool, string, error) {
	for attempt := 0; ; attempt++ {
		sess, tools, info, err := l.connectMCPServer(ctx, hc, srv)
		if err == nil || !notListening(err) || ctx.Err() != nil {
			return sess, tools, info, err
		}
		if attempt >= l.Retry.Retries {
			return nil, nil, "", fmt.Errorf("%w (gave up after %d attempts)", err, attempt+1)
		}
		why := fmt.Sprintf("the MCP server %s: %v", srv.URL, err)
		if err := l.waitToRetry(ctx, why, attempt, l.backoff(attempt)); err != nil {
			return nil, nil, "", err
		}
	}
}

// notListening reports whether a connection failed because nothing accepted it.
func notListening(err error) bool {
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH)
}

// connectMCPServer opens a session with one server, within one tool call's timeout, and
// returns the tools of its allow-list.
func (l *loop) connectMCPServer(ctx context.Context, hc *http.Client, srv MCPServer) (*mcp.ClientSession, []*Tool, string, error) {
	ctx, cancel := context.WithTimeout(ctx, l.tools.Timeout)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "ergon-agent", Version: MCPPolicy},
		&mcp.ClientOptions{ElicitationHandler: l.elicitationHandler(srv)})
	sess, err := client.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint: srv.URL, HTTPClient: hc,
		// Server-initiated messages have no use here: every call is the model's request.
		DisableStandaloneSSE: true,
		MaxRetries:           -1,
		MaxEventSize:         MCPMaxResponse,
	}, nil)
	if err != nil {
		return nil, nil, "", fmt.Errorf("connecting: %w", err)
	}
	info := "no server info"
	if r := sess.InitializeResult(); r != nil && r.ServerInfo != nil {
		info = strings.TrimSpace(r.ServerInfo.Name + " " + r.ServerInfo.Version)
	}
	listed := map[string]*mcp.Tool{}
	var names []string
	for t, err := range sess.Tools(ctx, nil) {
		if err != nil {
			_ = sess.Close()
			return nil, nil, "", fmt.Errorf("listing its tools: %w", err)
		}
		listed[t.Name] = t
		names = append(names, t.Name)
	}
	var tools []*Tool
	for _, name := range srv.Allow {
		t, ok := listed[name]
		if !ok {
			_ = sess.Close()
			return nil, nil, "", fmt.Errorf("it offers no tool %q (it offers: %s)", name, strings.Join(names, ", "))
		}
		tool, err := l.mcpTool(sess, srv, t)
		if err != nil {
			_ = sess.Close()
			return nil, nil, "", fmt.Errorf("the tool %q: %w", name, err)
		}
		tools = append(tools, tool)
	}
	return sess, tools, info, nil
}

// mcpTool makes a server's tool one the loop calls like the built-in ones: its input schema
// is the function's parameters (and checks the arguments, when it compiles), and a call
// forwards the arguments and returns the result's content as text.
func (l *loop) mcpTool(sess *mcp.ClientSession, srv MCPServer, t *mcp.Tool) (*Tool, error) {
	b, err := json.Marshal(t.InputSchema)
	if err != nil {
		return nil, fmt.Errorf("its input schema: %w", err)
	}
	var params map[string]any
	if err := json.Unmarshal(b, &params); err != nil || params == nil {
		return nil, fmt.Errorf("its input schema is not a JSON object: %s", capString(string(b), 200))
	}
	desc := t.Description
	if srv.Description != "" {
		desc = strings.TrimSpace(srv.Description + "\n\n" + desc)
	}
	tool := &Tool{Name: t.Name, Description: l.red.String(desc), Parameters: params,
		Call: func(ctx context.Context, env *ToolEnv, args json.RawMessage) (string, error) {
			return callMCP(ctx, env, sess, t.Name, args)
		}}
	if h := l.elicitationHandler(srv); h != nil {
		// A call may wait for a person's answer to the server's question, and some more.
		tool.Waits = srv.Ask.Duration + askGrace
	}
	// A schema this runtime cannot compile is left to the server to enforce. References
	// are never loaded: a server's schema reaches no file and no URL.
	if doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b)); err == nil {
		c := jsonschema.NewCompiler()
		c.UseLoader(noLoader{})
		if c.AddResource("mcp.json", doc) == nil {
			tool.schema, _ = c.Compile("mcp.json")
		}
	}
	return tool, nil
}

// callMCP calls a server's tool. A result the server marks isError, and a failed request,
// are errors: both go back to the model as the tool's result.
func callMCP(ctx context.Context, env *ToolEnv, sess *mcp.ClientSession, name string, args json.RawMessage) (string, error) {
	res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return "", fmt.Errorf("calling the MCP server: %w", err)
	}
	out := mcpText(res)
	if res.IsError {
		if out == "" {
			out = "the tool failed and said nothing more"
		}
		// Errors are not capped by Tool.call: cap this one here, after redaction.
		return "", errors.New(capString(env.Redactor.String(out), env.MaxResult))
	}
	return out, nil
}

// mcpText renders a tool result's content as text: text and embedded text resources as they
// are, other content as a line that says what it was; structured content when there is no
// other content.
func mcpText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			parts = append(parts, c.Text)
		case *mcp.EmbeddedResource:
			switch {
			case c.Resource == nil:
			case c.Resource.Text != "" || len(c.Resource.Blob) == 0:
				parts = append(parts, fmt.Sprintf("[resource %s]\n%s", c.Resource.URI, c.Resource.Text))
			default:
				parts = append(parts, fmt.Sprintf("[resource %s: %s, %d bytes, not shown]", c.Resource.URI, c.Resource.MIMEType, len(c.Resource.Blob)))
			}
		case *mcp.ResourceLink:
			parts = append(parts, fmt.Sprintf("[resource link %s: %s]", c.URI, c.Name))
		case *mcp.ImageContent:
			parts = append(parts, fmt.Sprintf("[image: %s, %d bytes, not shown]", c.MIMEType, len(c.Data)))
		case *mcp.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio: %s, %d bytes, not shown]", c.MIMEType, len(c.Data)))
		default:
			parts = append(parts, fmt.Sprintf("[%T content, not shown]", c))
		}
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			parts = append(parts, string(b))
		}
	}
	return strings.Join(parts, "\n")
}

// tool returns the tool of a name the attempt offers.
func (m *mcpTools) tool(name string) (*Tool, bool) {
	t, ok := m.byName[name]
	return t, ok
}

// names are the tools' names, in the spec's order.
func (m *mcpTools) names() []string { return slices.Clone(m.order) }

// params are the tools as the chat API's function definitions.
func (m *mcpTools) params() []openai.ChatCompletionToolUnionParam {
	var ps []openai.ChatCompletionToolUnionParam
	for _, n := range m.order {
		t := m.byName[n]
		ps = append(ps, openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name: t.Name, Description: openai.String(t.Description), Parameters: t.Parameters,
		}))
	}
	return ps
}

// close ends the sessions.
func (m *mcpTools) close() {
	for _, s := range m.sessions {
		_ = s.Close()
	}
	m.sessions = nil
}

// limitedTransport fails a response body past max bytes, so that a server cannot fill the
// pod's memory.
type limitedTransport struct {
	base http.RoundTripper
	max  int64
}

func (t limitedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	resp.Body = &limitedBody{rc: resp.Body, left: t.max}
	return resp, nil
}

type limitedBody struct {
	rc   io.ReadCloser
	left int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, fmt.Errorf("the response is longer than %d bytes", MCPMaxResponse)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *limitedBody) Close() error { return b.rc.Close() }

// noLoader loads no schema reference.
type noLoader struct{}

func (noLoader) Load(u string) (any, error) {
	return nil, fmt.Errorf("schema references are not loaded (%s)", u)
}
