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

package protocols

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

// Names of the MCP endpoint.
const (
	// MCPPath is where the MCP endpoint is served.
	MCPPath = "/mcp"
	// MetadataPath is where its OAuth protected-resource metadata is served (RFC 9728).
	MetadataPath = "/.well-known/oauth-protected-resource"
	// ProtocolMCP is the value of ergonv1alpha1.AnnotationVia on the Runs MCP calls start.
	ProtocolMCP = "mcp"
	// runStatusTool waits for a Run the caller may read. Its name has an underscore, which
	// no namespace has, so that it never equals a Scene's tool, NAMESPACE.SCENE.
	runStatusTool = "run_status"
	// multiRoundTrip is the first protocol revision whose clients answer input requests in
	// a retry of their call (SEP-2322), which a stateless server needs for elicitation.
	multiRoundTrip = "2026-07-28"
)

// Handler serves the MCP endpoint (Streamable HTTP, stateless) and its protected-resource
// metadata, and the A2A agents. Each MCP request gets an MCP server of its own that knows only
// its caller's tools; each A2A request an agent that acts only as its caller.
func (s *Server) Handler() http.Handler {
	mcpHandler := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		ns := r.PathValue("namespace")
		if ns != "" && len(validation.IsDNS1123Label(ns)) > 0 {
			return nil
		}
		return s.mcpServer(callerOf(r.Context()), ns)
	}, &mcp.StreamableHTTPOptions{Stateless: true, MaxRequestBodyBytes: s.cfg.MaxBodyBytes,
		PropagateRequestCancellation: true})
	mux := http.NewServeMux()
	// /mcp offers the Scenes of every namespace the caller may list (or those configured);
	// /mcp/NAMESPACE those of one, for a caller who may not list namespaces.
	mux.Handle(MCPPath, s.authenticate(mcpHandler))
	mux.Handle(MCPPath+"/{namespace}", s.authenticate(mcpHandler))
	agents := s.authenticate(http.HandlerFunc(s.serveAgent))
	mux.Handle("POST "+A2APath+"/{namespace}/{scene}", agents)
	mux.Handle("GET "+A2APath+"/{namespace}/{scene}"+AgentCardPath, agents)
	if s.cfg.Resource != "" && len(s.cfg.AuthorizationServers) > 0 {
		mux.Handle(MetadataPath, auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
			Resource: s.cfg.Resource, AuthorizationServers: s.cfg.AuthorizationServers,
			BearerMethodsSupported: []string{"header"}, ResourceName: "Ergon Scenes",
		}))
	}
	return mux
}

// metadataURL is where the protected-resource metadata is, "" when none is served.
func (s *Server) metadataURL() string {
	if s.cfg.Resource == "" || len(s.cfg.AuthorizationServers) == 0 {
		return ""
	}
	u := s.cfg.Resource
	if i := strings.Index(u, "://"); i >= 0 {
		if j := strings.Index(u[i+3:], "/"); j >= 0 {
			u = u[:i+3+j]
		}
	}
	return u + MetadataPath
}

// mcpServer is the MCP server of one request: tools are added when the request lists or
// calls them, from what its caller may run (in namespace only, when it is set).
func (s *Server) mcpServer(c *caller, namespace string) *mcp.Server {
	if c == nil {
		return nil
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "ergon", Title: "Ergon Scenes"}, &mcp.ServerOptions{
		Instructions: "Each tool NAMESPACE.SCENE runs an Ergon Scene as a Kubernetes Run, as you: its arguments are the " +
			"Scene's params, its result the Run's outputs. A Run that waits for a person asks you through elicitation " +
			"when you may decide; a Run that outlasts the call is returned as a handle for run_status.",
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}},
	})
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			switch method {
			case "tools/list":
				scenes, err := s.exposedScenes(ctx, c, ergonv1alpha1.LabelMCPTool, namespace)
				if err != nil {
					return nil, err
				}
				for i := range scenes {
					if tool := sceneTool(&scenes[i]); tool != nil {
						srv.AddTool(tool, s.sceneHandler(c, &scenes[i]))
					}
				}
				srv.AddTool(runStatus, s.runStatusHandler(c))
			case "tools/call":
				call, _ := req.(*mcp.CallToolRequest)
				if call == nil || call.Params == nil {
					break
				}
				if err := s.addCalledTool(ctx, srv, c, namespace, call.Params.Name); err != nil {
					return nil, err
				}
			}
			return next(ctx, method, req)
		}
	})
	return srv
}

// addCalledTool adds the tool a call names, when its caller may run it; else the call gets
// the protocol's unknown-tool error.
func (s *Server) addCalledTool(ctx context.Context, srv *mcp.Server, c *caller, namespace, name string) error {
	if name == runStatusTool {
		srv.AddTool(runStatus, s.runStatusHandler(c))
		return nil
	}
	ns, scene, ok := strings.Cut(name, ".")
	if !ok || namespace != "" && ns != namespace {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown tool %q: tools are NAMESPACE.SCENE", name)}
	}
	sc, err := s.exposedScene(ctx, c, ergonv1alpha1.LabelMCPTool, ns, scene)
	if err != nil {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown tool %q: %v", name, err)}
	}
	tool := sceneTool(sc)
	if tool == nil {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown tool %q: its name is too long for MCP", name)}
	}
	srv.AddTool(tool, s.sceneHandler(c, sc))
	return nil
}

// maxToolName is the longest tool name MCP allows.
const maxToolName = 128

// sceneTool is a Scene as an MCP tool; nil when its name is too long for one.
func sceneTool(sc *ergonv1alpha1.Scene) *mcp.Tool {
	name := sc.Namespace + "." + sc.Name
	if len(name) > maxToolName {
		return nil
	}
	desc := strings.TrimSpace(sc.Spec.Description)
	if desc == "" {
		desc = fmt.Sprintf("Runs the Ergon Scene %s/%s with the arguments as its params; the result is its outputs.", sc.Namespace, sc.Name)
	}
	return &mcp.Tool{Name: name, Title: sc.Name, Description: desc, InputSchema: sc.Spec.ParamsSchema(),
		OutputSchema: resultSchema, Annotations: &mcp.ToolAnnotations{OpenWorldHint: new(true)}}
}

// resultSchema is the JSON Schema of every tool's structured result (result).
var resultSchema = json.RawMessage(`{"type": "object", "required": ["namespace", "run", "phase"],
	"properties": {"namespace": {"type": "string"}, "run": {"type": "string"},
	"phase": {"type": "string", "description": "Pending, Running, Waiting, Succeeded, Failed or Cancelled"},
	"message": {"type": "string"},
	"outputs": {"type": "object", "description": "the outputs of the Run's final steps, by step; JSON values parsed"},
	"waiting": {"type": "array", "items": {"type": "string"}}, "notes": {"type": "array", "items": {"type": "string"}}}}`)

// runStatus is the tool that waits for a Run again.
var runStatus = &mcp.Tool{
	Name:  runStatusTool,
	Title: "Run status",
	Description: "Waits for an Ergon Run that a Scene tool started (or any Run you may read) to end, up to the server's " +
		"wait, and returns its outputs, or what it still waits for.",
	InputSchema: json.RawMessage(`{"type": "object", "required": ["namespace", "run"], "additionalProperties": false,
		"properties": {"namespace": {"type": "string"}, "run": {"type": "string"}}}`),
	OutputSchema: resultSchema,
	Annotations:  &mcp.ToolAnnotations{ReadOnlyHint: true},
}

// sceneHandler runs a Scene: the first call starts its Run; a retry with answers (MCP's
// multi round trip) decides the Gates it asked about and waits on.
func (s *Server) sceneHandler(c *caller, sc *ergonv1alpha1.Scene) mcp.ToolHandler {
	tool := sc.Namespace + "." + sc.Name
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if req.Params.RequestState != "" {
			return s.resume(ctx, c, req, tool)
		}
		var args map[string]any
		if len(req.Params.Arguments) > 0 && string(req.Params.Arguments) != "null" {
			// Numbers stay as written: a param's value is text, and 12345678901234567890 must not
			// become 12345678901234567000.
			dec := json.NewDecoder(bytes.NewReader(req.Params.Arguments))
			dec.UseNumber()
			if err := dec.Decode(&args); err != nil {
				return toolError(fmt.Errorf("arguments: want an object of params: %v", err)), nil
			}
		}
		done, err := s.enter(c)
		if err != nil {
			return toolError(err), nil
		}
		defer done()
		run, err := s.start(ctx, c, sc, args, ProtocolMCP, nil)
		if err != nil {
			return toolError(err), nil
		}
		return s.await(ctx, c, req, callState{Tool: tool, Namespace: run.Namespace, Run: run.Name}, nil)
	}
}

// runStatusHandler waits for a Run named by the arguments.
func (s *Server) runStatusHandler(c *caller) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if req.Params.RequestState != "" {
			return s.resume(ctx, c, req, runStatusTool)
		}
		var args struct {
			Namespace string `json:"namespace"`
			Run       string `json:"run"`
		}
		if err := json.Unmarshal(req.Params.Arguments, &args); err != nil || args.Namespace == "" || args.Run == "" {
			return toolError(errors.New(`arguments: want {"namespace": ..., "run": ...}`)), nil
		}
		done, err := s.enter(c)
		if err != nil {
			return toolError(err), nil
		}
		defer done()
		return s.await(ctx, c, req, callState{Tool: runStatusTool, Namespace: args.Namespace, Run: args.Run}, nil)
	}
}

// resume goes on with a call after its caller answered the forms it was asked.
func (s *Server) resume(ctx context.Context, c *caller, req *mcp.CallToolRequest, tool string) (*mcp.CallToolResult, error) {
	st, err := s.open(req.Params.RequestState)
	if err == nil && st.Tool != tool {
		err = fmt.Errorf("the requestState is for the tool %s, not %s", st.Tool, tool)
	}
	if err != nil {
		return toolError(err), nil
	}
	done, err := s.enter(c)
	if err != nil {
		return toolError(err), nil
	}
	defer done()
	notes := s.applyAnswers(ctx, c, st, req.Params.InputResponses)
	return s.await(ctx, c, req, st, notes)
}

// applyAnswers decides the Gates the call asked about as their forms were answered: accepted,
// with the form's answer; declined, with the Gate's reject option; cancelled, not at all. It
// returns what the caller should know of them.
func (s *Server) applyAnswers(ctx context.Context, c *caller, st callState, responses mcp.InputResponseMap) []string {
	var notes []string
	for _, id := range slices.Sorted(maps.Keys(responses)) {
		if !slices.Contains(st.Asked, id) {
			notes = append(notes, fmt.Sprintf("an answer for %q, which this call did not ask, was left aside", id))
			continue
		}
		res, _ := responses[id].(*mcp.ElicitResult)
		key := client.ObjectKey{Namespace: st.Namespace, Name: id}
		gate := &ergonv1alpha1.Gate{}
		if res == nil {
			continue
		}
		if err := c.c.Get(ctx, key, gate); err != nil {
			notes = append(notes, fmt.Sprintf("Gate %s: %v", id, err))
			continue
		}
		var a answer
		switch res.Action {
		case "accept":
			var err error
			if a, err = answerOf(gate, res.Content); err != nil {
				notes = append(notes, fmt.Sprintf("Gate %s: %v", id, err))
				continue
			}
		case "decline":
			var ok bool
			if a, ok = declined(gate); !ok {
				notes = append(notes, fmt.Sprintf("Gate %s stays open: you declined it, and it has no reject option", id))
				continue
			}
		default:
			notes = append(notes, fmt.Sprintf("Gate %s stays open: you dismissed its form", id))
			continue
		}
		if err := s.decide(ctx, c, key, a); err != nil {
			notes = append(notes, fmt.Sprintf("Gate %s: your answer was refused: %v", id, err))
		}
	}
	return notes
}

// await follows the call's Run until it ends, until a Gate the caller may decide can be asked
// (then the call asks it, as an input request), or until the call has waited long enough (then
// it answers with the Run as a handle). A progress token gets a notification at each change.
func (s *Server) await(ctx context.Context, c *caller, req *mcp.CallToolRequest, st callState, notes []string) (
	*mcp.CallToolResult, error) {
	elicit := canElicit(req)
	askable := func(v *runView) []*ergonv1alpha1.Gate {
		if !elicit {
			return nil
		}
		var gates []*ergonv1alpha1.Gate
		for _, g := range v.Decidable {
			if _, ok := gateForm(g); ok && !slices.Contains(st.Asked, g.Name) {
				gates = append(gates, g)
			}
		}
		return gates
	}
	token := req.Params.GetProgressToken()
	changed := func(v *runView) {
		if token == nil {
			return
		}
		done, total := progressOf(v.Run)
		msg := fmt.Sprintf("Run %s/%s: %s", v.Run.Namespace, v.Run.Name, v.Run.Status.Phase)
		if m := runMessage(v.Run); m != "" {
			msg += ": " + m
		}
		_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: done, Total: total,
			Message: msg})
	}
	key := client.ObjectKey{Namespace: st.Namespace, Name: st.Run}
	// A client that can answer is asked as soon as a form can be; one that cannot is told as
	// soon as the Run waits on the caller, rather than at the end of the wait.
	until := func(v *runView) bool { return len(askable(v)) > 0 || !elicit && len(v.Decidable) > 0 }
	v, err := s.follow(ctx, c, key, changed, until)
	if err != nil {
		return toolError(fmt.Errorf("following Run %s/%s: %w", st.Namespace, st.Run, err)), nil
	}
	if gates := askable(v); len(gates) > 0 && !v.Run.Status.Phase.Finished() {
		requests := mcp.InputRequestMap{}
		for _, g := range gates {
			form, _ := gateForm(g)
			requests[g.Name] = &mcp.ElicitParams{Mode: "form", Message: formMessage(g), RequestedSchema: form}
			st.Asked = append(st.Asked, g.Name)
		}
		return &mcp.CallToolResult{InputRequests: requests, RequestState: s.seal(st)}, nil
	}
	res := s.resultOf(ctx, c, v)
	res.Notes = append(notes, res.Notes...)
	return toolResult(res, s.cfg.CallWait.String()), nil
}

// canElicit says whether the caller's client answers input requests: it speaks the protocol
// revision with multi round trips and declares form elicitation.
func canElicit(req *mcp.CallToolRequest) bool {
	if req.ProtocolVersion() < multiRoundTrip {
		return false
	}
	caps := req.ClientCapabilities()
	return caps != nil && caps.Elicitation != nil && (caps.Elicitation.Form != nil || caps.Elicitation.URL == nil)
}

// toolResult is a result as MCP gives it: structured, and as text for clients that read only
// text. A Run that failed or was cancelled is a tool error; one that has not ended says how
// to wait for it again.
func toolResult(res result, waited string) *mcp.CallToolResult {
	b, _ := json.MarshalIndent(res, "", "  ") // plain data
	var head string
	switch ergonv1alpha1.RunPhase(res.Phase) {
	case ergonv1alpha1.RunSucceeded:
		head = fmt.Sprintf("Run %s/%s succeeded.", res.Namespace, res.Run)
	case ergonv1alpha1.RunFailed, ergonv1alpha1.RunCancelled:
		head = fmt.Sprintf("Run %s/%s %s: %s", res.Namespace, res.Run, strings.ToLower(res.Phase), res.Message)
	default:
		head = fmt.Sprintf("Run %s/%s is %s after a wait of %s. Call %s with {\"namespace\": %q, \"run\": %q} to wait for it again.",
			res.Namespace, res.Run, res.Phase, waited, runStatusTool, res.Namespace, res.Run)
		if len(res.Waiting) > 0 {
			head += " It waits for: " + strings.Join(res.Waiting, "; ") +
				". Decide a Gate with kubectl ergon approve/reject/answer or in the Ergon console."
		}
	}
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: head + "\n" + string(b)}},
		StructuredContent: res,
		IsError:           res.Phase == string(ergonv1alpha1.RunFailed) || res.Phase == string(ergonv1alpha1.RunCancelled),
	}
}

// toolError is a call that could not do what it was asked, said to the caller (and its model).
func toolError(err error) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}, IsError: true}
}
