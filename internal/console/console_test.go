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

package console_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/console"
	"github.com/ergon-dev/ergon/internal/tracing"
)

const scriptOutput = `<script>alert("owned")</script>`

func jsonField(body, field string) string {
	var m map[string]any
	Expect(json.Unmarshal([]byte(body), &m)).To(Succeed(), body)
	s, _ := m[field].(string)
	return s
}

// waitingRun makes a Scene draft -> review (gate) -> publish, a Run of it whose draft step
// succeeded with an output holding a script tag and whose review step waits, and its Gate.
func waitingRun(ns string) (*ergonv1alpha1.Run, *ergonv1alpha1.Gate) {
	step := func(name string, deps ...string) ergonv1alpha1.Step {
		return ergonv1alpha1.Step{Name: name, DependsOn: deps, Container: &ergonv1alpha1.ContainerStep{
			Image: "busybox:1.36", Command: []string{"sh", "-c", "true"}}}
	}
	scene := &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "report"},
		Spec: ergonv1alpha1.SceneSpec{Steps: []ergonv1alpha1.Step{
			step("draft"),
			{Name: "review", DependsOn: []string{"draft"}, Gate: &ergonv1alpha1.GateStep{Message: "Ship it?"}},
			step("publish", "review"),
		}}}
	Expect(admin.Create(ctx, scene)).To(Succeed())
	run := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "report-1",
		Labels: map[string]string{ergonv1alpha1.LabelTrigger: "weekly"}},
		Spec: ergonv1alpha1.RunSpec{SceneRef: corev1.LocalObjectReference{Name: "report"}}}
	Expect(admin.Create(ctx, run)).To(Succeed())
	now := metav1.Now()
	gateName := "report-1-review"
	run.Status = ergonv1alpha1.RunStatus{Phase: ergonv1alpha1.RunWaiting, Progress: "1/3", StartedAt: &now,
		SceneSnapshot: scene.Spec.DeepCopy(),
		Steps: []ergonv1alpha1.StepStatus{
			{Name: "draft", Phase: ergonv1alpha1.StepSucceeded, Attempts: 1, StartedAt: &now, FinishedAt: &now,
				Output: &ergonv1alpha1.OutputValue{Preview: scriptOutput, Size: int64(len(scriptOutput))}},
			{Name: "review", Phase: ergonv1alpha1.StepWaiting, Gate: gateName, StartedAt: &now},
		}}
	Expect(admin.Status().Update(ctx, run)).To(Succeed())
	gate := &ergonv1alpha1.Gate{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: gateName,
		Labels: map[string]string{ergonv1alpha1.LabelRun: run.Name}},
		Spec: ergonv1alpha1.GateSpec{RunRef: corev1.LocalObjectReference{Name: run.Name}, Step: "review", Message: "Ship it?"}}
	Expect(admin.Create(ctx, gate)).To(Succeed())
	return run, gate
}

func gateNow(gate *ergonv1alpha1.Gate) *ergonv1alpha1.Gate {
	g := &ergonv1alpha1.Gate{}
	Expect(admin.Get(ctx, client.ObjectKeyFromObject(gate), g)).To(Succeed())
	return g
}

// stream opens the live stream of a namespace and sends each event's data on the channel.
func (b *browser) stream(ns string) (<-chan string, func()) {
	return b.streamAt("/api/namespaces/" + ns + "/events")
}

// streamAt opens a live stream and sends each event's data on the channel.
func (b *browser) streamAt(path string) (<-chan string, func()) {
	sctx, stop := context.WithCancel(ctx)
	req, err := http.NewRequestWithContext(sctx, http.MethodGet, consoleTS.URL+path, nil)
	Expect(err).NotTo(HaveOccurred())
	res, err := b.c.Do(req)
	Expect(err).NotTo(HaveOccurred())
	Expect(res.StatusCode).To(Equal(http.StatusOK))
	Expect(res.Header.Get("Content-Type")).To(Equal("text/event-stream"))
	out := make(chan string, 100)
	go func() {
		defer GinkgoRecover()
		defer func() { _ = res.Body.Close() }()
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				select {
				case out <- data:
				case <-sctx.Done():
					return
				}
			}
		}
	}()
	return out, stop
}

var _ = Describe("The console server", func() {
	It("refuses anonymous API calls and serves its page with a strict Content-Security-Policy", func() {
		b := newBrowser()
		a := b.get("/api/me")
		Expect(a.code).To(Equal(http.StatusUnauthorized))
		Expect(a.body).To(ContainSubstring("not logged in"))
		page := b.get("/")
		Expect(page.code).To(Equal(http.StatusOK))
		Expect(page.body).To(ContainSubstring(`<script src="/assets/app.js"`))
		csp := page.header.Get("Content-Security-Policy")
		Expect(csp).To(ContainSubstring("script-src 'self'"))
		Expect(csp).To(ContainSubstring("frame-ancestors 'none'"))
		Expect(csp).NotTo(ContainSubstring("unsafe"))
		Expect(page.header.Get("X-Content-Type-Options")).To(Equal("nosniff"))
		Expect(b.get("/assets/dagre.min.js").code).To(Equal(http.StatusOK))
	})

	It("logs in with a token the API server accepts and keeps it only in a Secure, HttpOnly, SameSite=Strict cookie", func() {
		ns := newNamespace()
		user, token := userToken(ns, "ada", "ergon-viewer")
		b := newBrowser()
		bad := b.login("not-a-token")
		Expect(bad.code).To(Equal(http.StatusUnauthorized))
		Expect(bad.body).To(ContainSubstring("the API server did not accept this token"))

		cross := b.do(http.MethodPost, "/api/login", `{"token":"`+token+`"}`, map[string]string{"Origin": "https://evil.example"})
		Expect(cross.code).To(Equal(http.StatusForbidden))

		ok := b.login(token)
		Expect(ok.code).To(Equal(http.StatusOK), ok.body)
		Expect(ok.body).NotTo(ContainSubstring(token))
		cookie := ok.header.Get("Set-Cookie")
		Expect(cookie).To(HavePrefix("__Host-ergon-token="))
		Expect(cookie).To(ContainSubstring("HttpOnly"))
		Expect(cookie).To(ContainSubstring("Secure"))
		Expect(cookie).To(ContainSubstring("SameSite=Strict"))
		me := b.get("/api/me")
		Expect(me.code).To(Equal(http.StatusOK))
		Expect(jsonField(me.body, "user")).To(Equal(user))
		Expect(jsonField(me.body, "csrf")).To(Equal(b.csrf))

		Expect(b.post("/api/logout", "{}").code).To(Equal(http.StatusOK))
		Expect(b.get("/api/me").code).To(Equal(http.StatusUnauthorized))
	})

	It("refuses a write without the session's CSRF token, from another origin or not as JSON, and changes nothing", func() {
		ns := newNamespace()
		_, token := userToken(ns, "grace", "ergon-viewer", "ergon-gate-approver")
		_, gate := waitingRun(ns)
		b := newBrowser()
		Expect(b.login(token).code).To(Equal(http.StatusOK))
		path := "/api/namespaces/" + ns + "/gates/" + gate.Name + "/decide"
		body := `{"option":"approve"}`

		noToken := b.do(http.MethodPost, path, body, map[string]string{"Origin": consoleTS.URL})
		Expect(noToken.code).To(Equal(http.StatusForbidden))
		Expect(noToken.body).To(ContainSubstring("CSRF"))
		other := newBrowser()
		_, otherToken := userToken(ns, "mallory", "ergon-gate-approver")
		Expect(other.login(otherToken).code).To(Equal(http.StatusOK))
		wrongToken := b.do(http.MethodPost, path, body, map[string]string{"Origin": consoleTS.URL, "X-Ergon-CSRF": other.csrf})
		Expect(wrongToken.code).To(Equal(http.StatusForbidden))
		crossOrigin := b.do(http.MethodPost, path, body, map[string]string{"Origin": "https://evil.example", "X-Ergon-CSRF": b.csrf})
		Expect(crossOrigin.code).To(Equal(http.StatusForbidden))
		Expect(crossOrigin.body).To(ContainSubstring("cross-origin"))
		noOrigin := b.do(http.MethodPost, path, body, map[string]string{"X-Ergon-CSRF": b.csrf})
		Expect(noOrigin.code).To(Equal(http.StatusForbidden))
		form := b.do(http.MethodPost, path, "option=approve", map[string]string{"Origin": consoleTS.URL, "X-Ergon-CSRF": b.csrf, "Content-Type": "application/x-www-form-urlencoded"})
		Expect(form.code).To(Equal(http.StatusForbidden))
		Expect(b.do(http.MethodGet, path, "", nil).code).To(Equal(http.StatusMethodNotAllowed))

		Expect(gateNow(gate).Spec.Decision).To(BeNil(), "no refused write reached the API server")
	})

	It("decides a Gate as the viewer: the webhook stamps the approver, and a view user gets RBAC's refusal verbatim", func() {
		ns := newNamespace()
		approver, approverToken := userToken(ns, "approver", "ergon-viewer", "ergon-gate-approver")
		viewer, viewerToken := userToken(ns, "viewer", "ergon-viewer")
		_, gate := waitingRun(ns)
		path := "/api/namespaces/" + ns + "/gates/" + gate.Name + "/decide"

		v := newBrowser()
		Expect(v.login(viewerToken).code).To(Equal(http.StatusOK))
		refused := v.post(path, `{"option":"approve","comment":"looks fine"}`)
		Expect(refused.code).To(Equal(http.StatusForbidden))
		msg := jsonField(refused.body, "error")
		Expect(msg).To(ContainSubstring(`User "` + viewer + `" cannot patch resource "gates" in API group "ergon.dev"`))
		Expect(gateNow(gate).Spec.Decision).To(BeNil())

		a := newBrowser()
		Expect(a.login(approverToken).code).To(Equal(http.StatusOK))
		ok := a.post(path, `{"option":"approve","comment":"ship it"}`)
		Expect(ok.code).To(Equal(http.StatusOK), ok.body)
		d := gateNow(gate).Spec.Decision
		Expect(d).NotTo(BeNil())
		Expect(d.User).To(Equal(approver), "the webhook stamps who decided, from the token the console passed on")
		Expect(d.Option).To(Equal("approve"))
		Expect(d.Comment).To(Equal("ship it"))

		again := a.post(path, `{"option":"reject"}`)
		Expect(again.code).To(Equal(http.StatusConflict))
		Expect(again.body).To(ContainSubstring("already decided"))
	})

	It("lists the viewer's inbox across namespaces with their own token, and takes an input Gate's answer checked by field", func() {
		mine, seen, foreign := newNamespace(), newNamespace(), newNamespace()
		ana, token := userToken(mine, "ana", "ergon-viewer", "ergon-gate-approver")
		// In seen ana may look but not decide; foreign she may not even list.
		Expect(admin.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: seen, Name: "ana"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "ergon-viewer"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "ana", Namespace: mine}}})).To(Succeed())
		input := &apiextensionsv1.JSON{Raw: []byte(`{"type":"object","required":["version"],"properties":{` +
			`"version":{"type":"string","pattern":"^v[0-9]+$"},"notify":{"type":"boolean","default":true}}}`)}
		gates := map[string]*ergonv1alpha1.Gate{}
		for _, ns := range []string{mine, seen, foreign} {
			_, gate := waitingRun(ns)
			Expect(admin.Patch(ctx, gate, client.RawPatch(types.MergePatchType,
				[]byte(`{"spec":{"input":`+string(input.Raw)+`}}`)))).To(Not(Succeed()), "spec.input is immutable")
			Expect(admin.Delete(ctx, gate)).To(Succeed())
			gate = &ergonv1alpha1.Gate{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: gate.Name, Labels: gate.Labels},
				Spec: ergonv1alpha1.GateSpec{RunRef: gate.Spec.RunRef, Step: gate.Spec.Step, Message: "Which version?", Input: input}}
			Expect(admin.Create(ctx, gate)).To(Succeed())
			gates[ns] = gate
		}

		b := newBrowser()
		Expect(b.login(token).code).To(Equal(http.StatusOK))
		inbox := b.get("/api/inbox?namespaces=" + strings.Join([]string{mine, seen, foreign, "Not_A-Name"}, ","))
		Expect(inbox.code).To(Equal(http.StatusOK), inbox.body)
		var list struct {
			Items []ergonv1alpha1.Gate `json:"items"`
		}
		Expect(json.Unmarshal([]byte(inbox.body), &list)).To(Succeed())
		Expect(list.Items).To(ConsistOf(And(HaveField("Namespace", mine), HaveField("Name", gates[mine].Name))),
			"only what ana may decide, found namespace by namespace with her token")

		path := "/api/namespaces/" + mine + "/gates/" + gates[mine].Name + "/decide"
		wrong := b.post(path, `{"values":{"version":"1.0"}}`)
		Expect(wrong.code).To(Equal(http.StatusUnprocessableEntity), wrong.body)
		Expect(jsonField(wrong.body, "error")).To(ContainSubstring(`spec.decision.values.version: Invalid value: "1.0"`))
		Expect(gateNow(gates[mine]).Spec.Decision).To(BeNil())
		right := b.post(path, `{"values":{"version":"v2"},"comment":"per QA"}`)
		Expect(right.code).To(Equal(http.StatusOK), right.body)
		d := gateNow(gates[mine]).Spec.Decision
		Expect(d.User).To(Equal(ana))
		Expect(d.Option).To(Equal("approve"), "the first approving option")
		Expect(string(d.Values.Raw)).To(MatchJSON(`{"version":"v2","notify":true}`), "the defaults completed")
		Expect(b.get("/api/inbox?namespaces=" + mine).body).To(MatchJSON(`{"items":[]}`))
	})

	It("shows a Run with its graph coloured by phase, and outputs only as text", func() {
		ns := newNamespace()
		_, token := userToken(ns, "linus", "ergon-viewer")
		run, _ := waitingRun(ns)
		b := newBrowser()
		Expect(b.login(token).code).To(Equal(http.StatusOK))

		detail := b.get("/api/namespaces/" + ns + "/runs/" + run.Name)
		Expect(detail.code).To(Equal(http.StatusOK), detail.body)
		var d struct {
			Graph  console.Graph             `json:"graph"`
			Gates  []ergonv1alpha1.Gate      `json:"gates"`
			Run    ergonv1alpha1.Run         `json:"run"`
			Params []ergonv1alpha1.ParamSpec `json:"params"`
			Scene  json.RawMessage           `json:"scene"`
		}
		Expect(json.Unmarshal([]byte(detail.body), &d)).To(Succeed())
		Expect(d.Graph.Nodes).To(ConsistOf(
			console.GraphNode{Name: "draft", Kind: "container", Phase: "Succeeded"},
			console.GraphNode{Name: "review", Kind: "gate", Phase: "Waiting", Deps: []int{0}},
			console.GraphNode{Name: "publish", Kind: "container", Deps: []int{1}}))
		Expect(d.Gates).To(HaveLen(1))
		Expect(d.Scene).To(BeNil(), "the snapshot does not travel: the page needs its graph and params")
		Expect(d.Run.Status.SceneSnapshot).To(BeNil(), "nor inside the Run")

		out := b.get("/api/namespaces/" + ns + "/runs/" + run.Name + "/steps/draft/output")
		Expect(out.code).To(Equal(http.StatusOK))
		Expect(out.body).To(Equal(scriptOutput))
		Expect(out.header.Get("Content-Type")).To(Equal("text/plain; charset=utf-8"))
		Expect(out.header.Get("Content-Security-Policy")).To(HavePrefix("sandbox"))
		Expect(out.header.Get("X-Content-Type-Options")).To(Equal("nosniff"))

		list := b.get("/api/namespaces/" + ns + "/runs?trigger=weekly")
		Expect(list.body).To(ContainSubstring(`"name":"report-1"`))
		Expect(list.body).To(ContainSubstring(`"waiting":["review"]`))
		Expect(b.get("/api/namespaces/" + ns + "/runs?trigger=nightly").body).NotTo(ContainSubstring("report-1"))
		Expect(b.get("/api/namespaces/" + ns + "/runs?phase=Succeeded").body).NotTo(ContainSubstring("report-1"))
	})

	It("streams changes to each viewer through a watch with their own token, and tells a stranger RBAC's answer", func() {
		ns := newNamespace()
		_, approverToken := userToken(ns, "approver", "ergon-viewer", "ergon-gate-approver")
		_, viewerToken := userToken(ns, "viewer", "ergon-viewer")
		stranger, strangerToken := userToken(ns, "stranger")
		run, _ := waitingRun(ns)

		var streams []<-chan string
		for _, token := range []string{approverToken, viewerToken} {
			b := newBrowser()
			Expect(b.login(token).code).To(Equal(http.StatusOK))
			ch, stop := b.stream(ns)
			DeferCleanup(stop)
			for range 4 { // Run, Gate, Trigger and Workspace watches have started
				Eventually(ch).Should(Receive(ContainSubstring(`"watching":true`)))
			}
			streams = append(streams, ch)
		}
		s := newBrowser()
		Expect(s.login(strangerToken).code).To(Equal(http.StatusOK))
		sch, stop := s.stream(ns)
		DeferCleanup(stop)
		Eventually(sch).Should(Receive(ContainSubstring(`User \"` + stranger + `\" cannot list resource \"runs\"`)))

		patch := client.MergeFrom(run.DeepCopy())
		run.Status.Progress = "2/3"
		Expect(admin.Status().Patch(ctx, run, patch)).To(Succeed())
		for _, ch := range streams {
			Eventually(ch).Should(Receive(And(ContainSubstring(`"kind":"Run"`), ContainSubstring(`"done":2,"total":3`))),
				"a Run goes as its summary")
		}
		Consistently(sch, time.Second).ShouldNot(Receive(ContainSubstring(`"total"`)), "a stranger sees no Run")
		Expect(server.Streams()).To(Equal(3))
	})

	It("streams one Run's steps whole first, then only those that changed, with the viewer's token", func() {
		ns := newNamespace()
		_, viewerToken := userToken(ns, "viewer", "ergon-viewer")
		_, strangerToken := userToken(ns, "stranger")
		run, _ := waitingRun(ns)
		path := "/api/namespaces/" + ns + "/runs/" + run.Name + "/events"
		delta := func(ch <-chan string) console.RunDelta {
			var data string
			Eventually(ch).Should(Receive(&data))
			var d console.RunDelta
			Expect(json.Unmarshal([]byte(data), &d)).To(Succeed(), data)
			return d
		}
		names := func(steps []ergonv1alpha1.StepStatus) []string {
			var n []string
			for _, s := range steps {
				n = append(n, s.Name)
			}
			return n
		}

		b := newBrowser()
		Expect(b.login(viewerToken).code).To(Equal(http.StatusOK))
		ch, stop := b.streamAt(path)
		DeferCleanup(stop)
		first := delta(ch)
		Expect(first.Full).To(BeTrue())
		Expect(names(first.Steps)).To(Equal(names(run.Status.Steps)), "the first event carries every step")
		Expect(first.Run.Status.Steps).To(BeEmpty(), "steps travel only as steps")
		Expect(first.Run.ManagedFields).To(BeEmpty())

		patch := client.MergeFrom(run.DeepCopy())
		run.Status.Steps[1].Message = "still waiting"
		run.Status.Progress = "1/3"
		Expect(admin.Status().Patch(ctx, run, patch)).To(Succeed())
		next := delta(ch)
		Expect(next.Full).To(BeFalse())
		Expect(names(next.Steps)).To(Equal([]string{run.Status.Steps[1].Name}), "only the step that changed")
		Expect(next.Steps[0].Message).To(Equal("still waiting"))
		Expect(next.Run.Status.Progress).To(Equal("1/3"))

		patch = client.MergeFrom(run.DeepCopy())
		removed := names(run.Status.Steps[1:])
		run.Status.Steps = run.Status.Steps[:1]
		Expect(admin.Status().Patch(ctx, run, patch)).To(Succeed())
		gone := delta(ch)
		Expect(gone.Steps).To(BeEmpty())
		Expect(gone.Removed).To(ConsistOf(removed))

		s := newBrowser()
		Expect(s.login(strangerToken).code).To(Equal(http.StatusOK))
		sch, sstop := s.streamAt(path)
		DeferCleanup(sstop)
		refused := delta(sch)
		Expect(refused.Run).To(BeNil())
		Expect(refused.Error).To(ContainSubstring(`cannot list resource "runs"`), "a stranger gets RBAC's answer, and no Run")
	})

	It("links a Run to its trace when given a trace URL, and refuses a URL with no place for the trace id", func() {
		ns := newNamespace()
		_, token := userToken(ns, "console", "ergon-viewer")
		run, _ := waitingRun(ns)
		readOnly := &rest.Config{Host: adminCfg.Host, TLSClientConfig: rest.TLSClientConfig{CAData: adminCfg.CAData}, BearerToken: token}
		_, err := console.New(console.Config{APIServer: apiServerOnly(adminCfg), Key: make([]byte, 32), ReadOnly: readOnly,
			TraceURL: "https://jaeger.example/search"})
		Expect(err).To(MatchError(ContainSubstring("{traceId}")))
		traced, err := console.New(console.Config{APIServer: apiServerOnly(adminCfg), Key: make([]byte, 32), ReadOnly: readOnly,
			TraceURL: "https://jaeger.example/trace/{traceId}?uiEmbed=v0"})
		Expect(err).NotTo(HaveOccurred())
		ts := httptest.NewTLSServer(traced.Handler())
		defer ts.Close()
		res, err := ts.Client().Get(ts.URL + "/api/namespaces/" + ns + "/runs/" + run.Name)
		Expect(err).NotTo(HaveOccurred())
		var detail struct {
			TraceURL string `json:"traceURL"`
		}
		Expect(json.NewDecoder(res.Body).Decode(&detail)).To(Succeed())
		Expect(detail.TraceURL).To(Equal("https://jaeger.example/trace/" + tracing.RunContext(run).TraceID().String() + "?uiEmbed=v0"))
	})

	It("in read-only mode shows everyone what its own ServiceAccount may see and refuses every write", func() {
		ns := newNamespace()
		_, token := userToken(ns, "console", "ergon-viewer")
		run, gate := waitingRun(ns)
		ro, err := console.New(console.Config{APIServer: apiServerOnly(adminCfg), Key: make([]byte, 32),
			ReadOnly: &rest.Config{Host: adminCfg.Host, TLSClientConfig: rest.TLSClientConfig{CAData: adminCfg.CAData}, BearerToken: token}})
		Expect(err).NotTo(HaveOccurred())
		ts := httptest.NewTLSServer(ro.Handler())
		defer ts.Close()
		get := func(path string) *http.Response {
			res, err := ts.Client().Get(ts.URL + path)
			Expect(err).NotTo(HaveOccurred())
			return res
		}
		Expect(get("/api/namespaces/" + ns + "/runs/" + run.Name).StatusCode).To(Equal(http.StatusOK))
		req, _ := http.NewRequest(http.MethodPost, ts.URL+"/api/namespaces/"+ns+"/gates/"+gate.Name+"/decide", strings.NewReader(`{"option":"approve"}`))
		req.Header.Set("Origin", ts.URL)
		req.Header.Set("Content-Type", "application/json")
		res, err := ts.Client().Do(req)
		Expect(err).NotTo(HaveOccurred())
		Expect(res.StatusCode).To(Equal(http.StatusForbidden))
		Expect(gateNow(gate).Spec.Decision).To(BeNil())
	})
})
