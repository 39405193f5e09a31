//go:build e2e

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

package e2e

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/protocols"
)

// The MCP endpoint runs as a local process of the suite, as the console does (console_test.go):
// the API server's address and CA only, real people with ServiceAccount tokens, and the
// official MCP Go SDK as the client. The Scene's steps are real pods on the local cluster.
var _ = Describe("Scenes over MCP on a real cluster", func() {
	It("lists a Scene as a tool, calls it, answers its Gate through elicitation, and gets the typed outputs", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		review := ergonv1alpha1.Step{Name: "review", DependsOn: []string{"draft"}, Gate: &ergonv1alpha1.GateStep{
			Message: `Publish "{{ .steps.draft.outputs.title }}"?`}}
		scene := &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "weekly",
			Labels: map[string]string{ergonv1alpha1.LabelMCPTool: "true"}},
			Spec: ergonv1alpha1.SceneSpec{
				Description: "Drafts the weekly report on a topic, has it approved, and publishes it.",
				Params:      []ergonv1alpha1.ParamSpec{{Name: "topic"}},
				Steps: []ergonv1alpha1.Step{
					busyboxStep("draft", `printf '{"title": "%s"}' "$ERGON_PARAM_topic" > "$ERGON_OUTPUT"`),
					review,
					busyboxStep("publish", `printf '{"published": true, "title": "%s"}' "$ERGON_PARAM_topic" > "$ERGON_OUTPUT"`, "review"),
				}}}
		Expect(k8sClient.Create(ctx, scene)).To(Succeed())
		user, token := person(ctx, ns, "alice", "edit", "ergon-gate-approver")

		key := make([]byte, 32)
		_, err := rand.Read(key)
		Expect(err).NotTo(HaveOccurred())
		srv, err := protocols.New(protocols.Config{Key: key, APIServer: &rest.Config{Host: cfg.Host,
			TLSClientConfig: rest.TLSClientConfig{CAData: cfg.CAData, CAFile: cfg.CAFile, ServerName: cfg.ServerName}}})
		Expect(err).NotTo(HaveOccurred())
		ts := httptest.NewTLSServer(srv.Handler())
		DeferCleanup(ts.Close)

		var mu sync.Mutex
		var asked []string
		c := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "v0"}, &mcp.ClientOptions{
			ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				mu.Lock()
				defer mu.Unlock()
				asked = append(asked, req.Params.Message)
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "approve"}}, nil
			}})
		hc := &http.Client{Transport: bearerTransport{token: token, next: ts.Client().Transport}}
		cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: ts.URL + protocols.MCPPath + "/" + ns, HTTPClient: hc}, nil)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { _ = cs.Close() })

		tools, err := cs.ListTools(ctx, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(tools.Tools).To(ContainElement(HaveField("Name", ns+".weekly")))

		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: ns + ".weekly", Arguments: map[string]any{"topic": "Sprint 43"}})
		Expect(err).NotTo(HaveOccurred())
		Expect(res.IsError).To(BeFalse(), "%+v", res.Content)
		b, err := json.Marshal(res.StructuredContent)
		Expect(err).NotTo(HaveOccurred())
		var out struct {
			Run     string
			Phase   string
			Outputs map[string]map[string]any
		}
		Expect(json.Unmarshal(b, &out)).To(Succeed())
		Expect(out.Phase).To(Equal("Succeeded"), "%s", b)
		Expect(out.Outputs["publish"]).To(Equal(map[string]any{"published": true, "title": "Sprint 43"}), "typed, not text")
		mu.Lock()
		Expect(asked).To(ConsistOf(ContainSubstring(`Publish "Sprint 43"?`)))
		mu.Unlock()

		run := &ergonv1alpha1.Run{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: out.Run}, run)).To(Succeed())
		Expect(run.Annotations).To(HaveKeyWithValue(ergonv1alpha1.AnnotationCreatedBy, user))
		gate := &ergonv1alpha1.GateList{}
		Expect(k8sClient.List(ctx, gate, client.InNamespace(ns))).To(Succeed())
		Expect(gate.Items).To(ConsistOf(HaveField("Spec.Decision.User", user)))
	})
})

// bearerTransport sends a token with every request, as an MCP client configured with one does.
type bearerTransport struct {
	token string
	next  http.RoundTripper
}

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}
