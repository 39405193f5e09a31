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

package security

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/planner"
	"github.com/ergon-dev/ergon/internal/protocols"
	"github.com/ergon-dev/ergon/test/testenv"
)

// The protocol endpoints act only as their caller: each spec calls them as real users (a
// ServiceAccount token from the TokenRequest API, as `kubectl create token` gives one) with
// the official MCP Go SDK's client, and checks what the API server stored and who it says did it.
var _ = Describe("Scenes over MCP, as the caller and no one else", func() {
	var ns, other string

	BeforeEach(func() {
		runKubelet()
		ns, other = newNamespace(), newNamespace()
		for _, n := range []string{ns, other} {
			kubelet.Use(n, func(pod *corev1.Pod) testenv.Outcome {
				return testenv.Outcome{Output: fmt.Sprintf(`{"step": %q, "done": true}`, pod.Labels[ergonv1alpha1.LabelStep])}
			})
			DeferCleanup(func() { kubelet.Use(n, nil) })
		}
		report := &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "report",
			Labels: map[string]string{ergonv1alpha1.LabelMCPTool: "true"}},
			Spec: ergonv1alpha1.SceneSpec{
				Description: "Drafts the weekly report, has it approved, and publishes it.",
				Params: []ergonv1alpha1.ParamSpec{{Name: "topic", Description: "what the report is about"},
					{Name: "token", ValueFrom: &ergonv1alpha1.ParamValueSource{SecretKeyRef: corev1.SecretKeySelector{
						LocalObjectReference: corev1.LocalObjectReference{Name: "tracker"}, Key: "token", Optional: new(true)}}}},
				Steps: []ergonv1alpha1.Step{containerStep("draft"),
					{Name: "approve", DependsOn: []string{"draft"}, Gate: &ergonv1alpha1.GateStep{Message: "Publish the report?"}},
					containerStep("publish", "approve")},
			}}
		Expect(admin.Create(ctx, report)).To(Succeed())
		// Not offered: no label in ns; offered in other, where the callers have no rights.
		createScene(admin, ns, "hidden", containerStep("work"))
		offered := &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Namespace: other, Name: "elsewhere",
			Labels: map[string]string{ergonv1alpha1.LabelMCPTool: "true"}}}
		offered.Spec.Steps = []ergonv1alpha1.Step{containerStep("work")}
		Expect(admin.Create(ctx, offered)).To(Succeed())
	})

	It("lists the Scenes the caller may run as NAMESPACE.SCENE, params as the input schema, and no other", func() {
		// alice may not list namespaces: the server looks in those it is configured with.
		ts := protocolServer(protocols.Config{Namespaces: []string{ns, other}})
		alice := saToken(ns, "alice", roleEdit, roleApprover)
		tools := listTools(mcpSession(ts, alice, nil))
		Expect(tools).To(HaveKey(ns+".report"), "the labelled Scene in a namespace where alice may create Runs")
		Expect(tools).To(HaveKey("run_status"))
		Expect(tools).NotTo(HaveKey(ns+".hidden"), "a Scene without the label is not offered")
		Expect(tools).NotTo(HaveKey(other+".elsewhere"), "nor one where alice may not create Runs")
		Expect(tools[ns+".report"].Description).To(ContainSubstring("weekly report"))
		schema, _ := json.Marshal(tools[ns+".report"].InputSchema)
		Expect(string(schema)).To(ContainSubstring(`"required":["topic"]`))
		Expect(string(schema)).NotTo(ContainSubstring("token"), "a param from a Secret is not the caller's to set")

		viewer := saToken(ns, "viewer", roleView)
		Expect(listTools(mcpSession(ts, viewer, nil))).To(HaveLen(1), "a viewer may run nothing: only run_status")

		// An endpoint for one namespace lists its Scenes, whatever the server is configured with.
		scoped := protocolServer(protocols.Config{})
		Expect(listTools(mcpSession(scoped, alice, nil, "", ns))).To(HaveKey(ns + ".report"))
		Expect(listTools(mcpSession(scoped, alice, nil))).NotTo(HaveKey(ns+".report"),
			"alice may not list namespaces, and the server names none")
	})

	It("runs a Scene as the caller, asks its Gate through elicitation, and returns the Run's outputs", func() {
		ts := protocolServer(protocols.Config{})
		alice := saToken(ns, "alice", roleEdit, roleApprover)
		var mu sync.Mutex
		var asked []string
		var progress []string
		cs := mcpSession(ts, alice, &mcp.ClientOptions{
			ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				mu.Lock()
				defer mu.Unlock()
				asked = append(asked, req.Params.Message)
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "approve", "comment": "ship it"}}, nil
			},
			ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
				mu.Lock()
				defer mu.Unlock()
				progress = append(progress, req.Params.Message)
			},
		})
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: ns + ".report", Arguments: map[string]any{"topic": "sprint 43"},
			Meta: mcp.Meta{"progressToken": "p1"}})
		Expect(err).NotTo(HaveOccurred())
		Expect(res.IsError).To(BeFalse(), "%s", text(res))
		out := structured(res)
		Expect(out["phase"]).To(Equal("Succeeded"))
		Expect(out["outputs"]).To(HaveKeyWithValue("publish", HaveKeyWithValue("done", true)), "the final step's output, parsed")
		mu.Lock()
		Expect(asked).To(HaveLen(1))
		Expect(asked[0]).To(ContainSubstring("Publish the report?"))
		Expect(progress).NotTo(BeEmpty(), "a progress token gets notifications")
		mu.Unlock()

		name := out["run"].(string)
		run := &ergonv1alpha1.Run{}
		Expect(admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, run)).To(Succeed())
		user := "system:serviceaccount:" + ns + ":alice"
		Expect(run.Annotations).To(HaveKeyWithValue(ergonv1alpha1.AnnotationCreatedBy, user), "admission saw alice, not the server")
		Expect(run.Annotations).To(HaveKeyWithValue(ergonv1alpha1.AnnotationVia, "mcp"))
		Expect(run.Spec.Params).To(Equal(map[string]string{"topic": "sprint 43"}))
		gate := gateOf(ns, name)
		Expect(gate.Spec.Decision).NotTo(BeNil())
		Expect(gate.Spec.Decision.User).To(Equal(user), "the Gate webhook stamped alice as who decided")
		Expect(gate.Spec.Decision.Comment).To(Equal("ship it"))
		Eventually(func(g Gomega) {
			events := &corev1.EventList{}
			g.Expect(admin.List(ctx, events, client.InNamespace(ns))).To(Succeed())
			g.Expect(slices.ContainsFunc(events.Items, func(e corev1.Event) bool {
				return e.InvolvedObject.Name == name && e.Reason == planner.ReasonCreatedThrough &&
					e.Message == "Run created by "+user+" through MCP"
			})).To(BeTrue(), "the Run's Event names the caller and the protocol")
		}).Should(Succeed())
	})

	It("asks the input Gate of a child Run through a form of its fields, and answers it as the caller", func() {
		inner := &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "where"},
			Spec: ergonv1alpha1.SceneSpec{Steps: []ergonv1alpha1.Step{{Name: "ask", Gate: &ergonv1alpha1.GateStep{
				Message: "Which region?",
				Input: &apiextensionsv1.JSON{Raw: []byte(`{"type": "object", "required": ["region"],
					"properties": {"region": {"type": "string", "enum": ["eu", "us"]}}}`)}}}}}}
		Expect(admin.Create(ctx, inner)).To(Succeed())
		outer := &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "deploy",
			Labels: map[string]string{ergonv1alpha1.LabelMCPTool: "true"}},
			Spec: ergonv1alpha1.SceneSpec{Steps: []ergonv1alpha1.Step{{Name: "choose", Scene: &ergonv1alpha1.SceneCall{Name: "where"}}}}}
		Expect(admin.Create(ctx, outer)).To(Succeed())
		ts := protocolServer(protocols.Config{})
		alice := saToken(ns, "alice", roleEdit, roleApprover)
		var schemas []any
		cs := mcpSession(ts, alice, &mcp.ClientOptions{
			ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				schemas = append(schemas, req.Params.RequestedSchema)
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"region": "eu"}}, nil
			}}, "", ns)
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: ns + ".deploy"})
		Expect(err).NotTo(HaveOccurred())
		Expect(res.IsError).To(BeFalse(), "%s", text(res))
		Expect(schemas).To(HaveLen(1))
		Expect(schemas[0]).To(HaveKeyWithValue("properties", HaveKey("region")), "the form asks the Gate's own fields")
		out := structured(res)
		Expect(out["phase"]).To(Equal("Succeeded"))
		Expect(out["outputs"]).To(HaveKeyWithValue("choose", HaveKeyWithValue("region", "eu")),
			"the child Run's answer is the scene step's output")
	})

	It("refuses whoever may not create Runs, strangers, other origins, and callers over their rate", func() {
		ts := protocolServer(protocols.Config{Namespaces: []string{ns, other}})
		viewer := saToken(ns, "viewer", roleView)
		_, err := mcpSession(ts, viewer, nil).CallTool(ctx, &mcp.CallToolParams{Name: ns + ".report",
			Arguments: map[string]any{"topic": "x"}})
		Expect(err).To(MatchError(ContainSubstring("may not create Runs in namespace " + ns)))
		_, err = mcpSession(ts, viewer, nil).CallTool(ctx, &mcp.CallToolParams{Name: other + ".elsewhere"})
		Expect(err).To(MatchError(ContainSubstring("unknown tool")))
		Expect(runsIn(ns)+runsIn(other)).To(BeZero(), "nothing was created")

		r := rawPost(ts, "", nil)
		Expect(r.StatusCode).To(Equal(http.StatusUnauthorized), "no token")
		Expect(r.Header.Get("WWW-Authenticate")).To(HavePrefix("Bearer"))
		Expect(rawPost(ts, "not-a-token", nil).StatusCode).To(Equal(http.StatusUnauthorized), "a token the API server does not know")
		Expect(rawPost(ts, viewer, map[string]string{"Origin": "https://evil.example"}).StatusCode).
			To(Equal(http.StatusForbidden), "a page of another site, through the caller's browser")
		limited := protocolServer(protocols.Config{Rate: 1, Burst: 3})
		codes := []int{}
		for range 6 {
			codes = append(codes, rawPost(limited, viewer, nil).StatusCode)
		}
		Expect(codes).To(ContainElement(http.StatusTooManyRequests), "a caller over the rate is told to slow down: %v", codes)
	})

	It("names the arguments a Scene does not take, and starts nothing; takes a number as written", func() {
		ts := protocolServer(protocols.Config{CallWait: time.Second})
		alice := saToken(ns, "alice", roleEdit)
		cs := mcpSession(ts, alice, nil)
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: ns + ".report",
			Arguments: map[string]any{"topic": "x", "token": "sneaked-in"}})
		Expect(err).NotTo(HaveOccurred())
		Expect(res.IsError).To(BeTrue())
		Expect(text(res)).To(ContainSubstring("params.token"))
		Expect(runsIn(ns)).To(BeZero())

		res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: ns + ".report",
			Arguments: map[string]any{"topic": json.Number("12345678901234567890")}})
		Expect(err).NotTo(HaveOccurred())
		run := &ergonv1alpha1.Run{}
		Expect(admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: structured(res)["run"].(string)}, run)).To(Succeed())
		Expect(run.Spec.Params).To(HaveKeyWithValue("topic", "12345678901234567890"))
	})

	It("tells a client that cannot answer forms what waits and where, and hands back the Run to poll", func() {
		ts := protocolServer(protocols.Config{CallWait: 3 * time.Second})
		alice := saToken(ns, "alice", roleEdit, roleApprover)
		cs := mcpSession(ts, alice, nil, "2025-11-25")
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: ns + ".report", Arguments: map[string]any{"topic": "x"}})
		Expect(err).NotTo(HaveOccurred())
		Expect(res.IsError).To(BeFalse(), "%s", text(res))
		out := structured(res)
		Expect(out["phase"]).To(Equal("Waiting"))
		Expect(text(res)).To(ContainSubstring("Publish the report?"))
		Expect(text(res)).To(ContainSubstring("run_status"))
		name := out["run"].(string)

		Expect(decide(userClient(ns, "approver-"+ns, roleApprover), gateOf(ns, name), "approve")).To(Succeed())
		res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_status", Arguments: map[string]any{"namespace": ns, "run": name}})
		Expect(err).NotTo(HaveOccurred())
		Expect(structured(res)["phase"]).To(Equal("Succeeded"), "%s", text(res))
	})
})

// protocolServer serves the protocol endpoints over TLS on loopback, knowing only the API
// server's address and CA, never a credential.
func protocolServer(cfg protocols.Config) *httptest.Server {
	cfg.APIServer = &rest.Config{Host: adminCfg.Host, TLSClientConfig: rest.TLSClientConfig{CAData: adminCfg.CAData}}
	cfg.Key = bytes.Repeat([]byte{9}, 32)
	cfg.Poll = 200 * time.Millisecond
	srv, err := protocols.New(cfg)
	Expect(err).NotTo(HaveOccurred())
	ts := httptest.NewTLSServer(srv.Handler())
	DeferCleanup(ts.Close)
	return ts
}

// saToken makes a ServiceAccount in ns bound there to the cluster roles, and returns a token
// for it from the TokenRequest API.
func saToken(ns, name string, clusterRoles ...string) string {
	Expect(admin.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})).To(Succeed())
	for _, role := range clusterRoles {
		Expect(admin.Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: name + "-"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: ns}},
		})).To(Succeed())
	}
	tr, err := kubernetes.NewForConfigOrDie(adminCfg).CoreV1().ServiceAccounts(ns).CreateToken(ctx, name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: new(int64(3600))}},
		metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	return tr.Status.Token
}

// bearer adds a token to every request, as an MCP client configured with one does.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// mcpSession connects the MCP Go SDK's client to the endpoint with a token: at the latest
// protocol revision unless a version is given, and to the endpoint of a namespace when one is.
func mcpSession(ts *httptest.Server, token string, opts *mcp.ClientOptions, versionAndNamespace ...string) *mcp.ClientSession {
	c := mcp.NewClient(&mcp.Implementation{Name: "attack-suite", Version: "v0"}, opts)
	hc := &http.Client{Transport: bearer{token: token, next: ts.Client().Transport}}
	var so *mcp.ClientSessionOptions
	if len(versionAndNamespace) > 0 && versionAndNamespace[0] != "" {
		so = &mcp.ClientSessionOptions{ProtocolVersion: versionAndNamespace[0]}
	}
	endpoint := ts.URL + protocols.MCPPath
	if len(versionAndNamespace) > 1 {
		endpoint += "/" + versionAndNamespace[1]
	}
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc}, so)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { _ = cs.Close() })
	return cs
}

func listTools(cs *mcp.ClientSession) map[string]*mcp.Tool {
	res, err := cs.ListTools(ctx, nil)
	Expect(err).NotTo(HaveOccurred())
	tools := map[string]*mcp.Tool{}
	for _, t := range res.Tools {
		tools[t.Name] = t
	}
	return tools
}

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

func structured(res *mcp.CallToolResult) map[string]any {
	b, err := json.Marshal(res.StructuredContent)
	Expect(err).NotTo(HaveOccurred())
	var out map[string]any
	Expect(json.Unmarshal(b, &out)).To(Succeed(), "%s", text(res))
	return out
}

// rawPost sends a tools/list to the MCP endpoint as any HTTP client can.
func rawPost(ts *httptest.Server, token string, header map[string]string) *http.Response {
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ts.URL+protocols.MCPPath, strings.NewReader(body))
	Expect(err).NotTo(HaveOccurred())
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := ts.Client().Do(req)
	Expect(err).NotTo(HaveOccurred())
	_ = res.Body.Close()
	return res
}
