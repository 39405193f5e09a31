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
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/console"
	"github.com/ergon-dev/ergon/test/chromium"
)

// The console runs as a local process of the suite on loopback, pointing at the cluster's API
// server with its address and CA only, as it would run in a pod; real people log in with
// ServiceAccount tokens from the TokenRequest API (kubectl create token), in a real headless
// Chromium (Debian's chromium package) driven by chromedp.

// startConsole serves the console over HTTPS on loopback until the spec ends.
func startConsole() string {
	key := make([]byte, 32)
	_, err := rand.Read(key)
	Expect(err).NotTo(HaveOccurred())
	apiServer := &rest.Config{Host: cfg.Host,
		TLSClientConfig: rest.TLSClientConfig{CAData: cfg.CAData, CAFile: cfg.CAFile, ServerName: cfg.ServerName}}
	srv, err := console.New(console.Config{Key: key, APIServer: apiServer})
	Expect(err).NotTo(HaveOccurred())
	ts := httptest.NewTLSServer(srv.Handler())
	DeferCleanup(ts.Close)
	return ts.URL
}

// person is a ServiceAccount of ns bound there to the cluster roles, and a token for it.
func person(ctx SpecContext, ns, name string, clusterRoles ...string) (user, token string) {
	Expect(k8sClient.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})).To(Succeed())
	for _, role := range clusterRoles {
		Expect(k8sClient.Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: name + "-"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: ns}},
		})).To(Succeed())
	}
	user = "system:serviceaccount:" + ns + ":" + name
	waitForRBAC(ctx, ns, user, []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}, clusterRoles...)
	tr, err := clientset.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: new(int64(3600))}}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	return user, tr.Status.Token
}

// waitForRBAC waits until the API server's authorizer, which learns of RoleBindings through
// its informers a moment after they are made, grants user in ns the first resource rule of
// each cluster role: a spec that acts as a person at once would otherwise meet a refusal
// that is only the cache's lag.
func waitForRBAC(ctx SpecContext, ns, user string, groups []string, clusterRoles ...string) {
	for _, name := range clusterRoles {
		role := &rbacv1.ClusterRole{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Name: name}, role)).To(Succeed())
		i := slices.IndexFunc(role.Rules, func(r rbacv1.PolicyRule) bool {
			return len(r.Verbs) > 0 && len(r.APIGroups) > 0 && len(r.Resources) > 0 && len(r.ResourceNames) == 0
		})
		if i < 0 {
			continue
		}
		r := role.Rules[i]
		Eventually(func(g Gomega) {
			sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: user, Groups: groups,
				ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: r.Verbs[0], Group: r.APIGroups[0],
					Resource: r.Resources[0]}}}
			g.Expect(k8sClient.Create(ctx, sar)).To(Succeed())
			g.Expect(sar.Status.Allowed).To(BeTrue(), "RBAC does not grant %s %s %s.%s in %s yet",
				user, r.Verbs[0], r.Resources[0], r.APIGroups[0], ns)
		}).WithContext(ctx).Should(Succeed())
	}
}

// openBrowser starts headless Chromium at 1280x800 for the spec and logs in with token.
func openBrowser(url, token string) context.Context {
	bctx, stop, err := chromium.Start()
	if errors.Is(err, chromium.ErrMissing) {
		Skip(err.Error())
	}
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(stop)
	browserLog(bctx)
	Expect(chromedp.Do(bctx, chromedp.Navigate(url+"/"), chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SetValue(chromedp.CSS("#token"), token), chromedp.Click(chromedp.CSS("#login")),
		chromedp.WaitVisible(chromedp.CSS("#top")))).To(Succeed())
	return bctx
}

// browserLog keeps what the page reports (uncaught exceptions, console errors and warnings,
// requests that fail or are answered with an error status) and, when the spec fails, prints
// it with where the page was and what it showed, and keeps a screenshot: a browser spec's
// failure is otherwise only "context deadline exceeded".
func browserLog(bctx context.Context) {
	var mu sync.Mutex
	var lines []string
	add := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if len(lines) < 200 {
			lines = append(lines, time.Now().Format("15:04:05.000 ")+fmt.Sprintf(format, args...))
		}
	}
	Expect(chromedp.Listen(bctx, func(ev any) {
		switch ev := ev.(type) {
		case *runtime.EventExceptionThrown:
			d := ev.ExceptionDetails
			text := d.Text
			if d.Exception != nil {
				text += " " + d.Exception.Description
			}
			add("exception: %s (%s:%d)", text, d.URL, d.LineNumber)
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeWarning {
				var args []string
				for _, a := range ev.Args {
					args = append(args, string(a.Value)+a.Description)
				}
				add("console.%s: %s", ev.Type, strings.Join(args, " "))
			}
		case *network.EventResponseReceived:
			if ev.Response.Status >= 400 {
				add("%d %s", ev.Response.Status, ev.Response.URL)
			}
		case *network.EventLoadingFailed:
			add("request failed: %s %s", ev.ErrorText, ev.BlockedReason)
		}
	})).To(Succeed())
	DeferCleanup(func() {
		if !CurrentSpecReport().Failed() {
			return
		}
		tctx, cancel := context.WithTimeout(bctx, 10*time.Second)
		defer cancel()
		state, err := chromedp.Run(tctx, chromedp.Evaluate[string](`JSON.stringify({location: location.href,
			live: (document.querySelector("#live") || {}).className, title: document.title,
			main: ((document.querySelector("#main") || document.body || {}).innerText || "").slice(0, 2000)})`))
		GinkgoWriter.Printf("### the browser when the spec failed (err: %v)\n%s\n", err, state)
		mu.Lock()
		GinkgoWriter.Printf("### what the page reported\n%s\n", strings.Join(lines, "\n"))
		mu.Unlock()
		if png, err := chromedp.Run(tctx, chromedp.CaptureScreenshot()); err == nil {
			path := filepath.Join(artifactsDir(), "failed.png")
			if os.WriteFile(path, png, 0o644) == nil {
				GinkgoWriter.Printf("screenshot: %s\n", path)
			}
		}
	})
}

// within runs browser actions with a time limit.
func within(bctx context.Context, d time.Duration, actions ...chromedp.Action[chromedp.Void]) error {
	tctx, cancel := context.WithTimeout(bctx, d)
	defer cancel()
	return chromedp.Do(tctx, actions...)
}

func evalJS[T any](bctx context.Context, js string) T {
	v, err := chromedp.Run(bctx, chromedp.Evaluate[T](js))
	Expect(err).NotTo(HaveOccurred(), js)
	return v
}

// artifactsDir is where the spec's screenshots go: $E2E_ARTIFACTS, else test/e2e/artifacts
// (ignored by git), in a folder named after the spec.
func artifactsDir() string {
	root := os.Getenv("E2E_ARTIFACTS")
	if root == "" {
		root = "artifacts"
	}
	name := regexp.MustCompile(`[^a-zA-Z0-9]+`).ReplaceAllString(CurrentSpecReport().LeafNodeText, "-")
	dir := filepath.Join(root, strings.Trim(name, "-")[:min(60, len(strings.Trim(name, "-")))])
	Expect(os.MkdirAll(dir, 0o755)).To(Succeed())
	return dir
}

func screenshot(bctx context.Context, name string) {
	png, err := chromedp.Run(bctx, chromedp.CaptureScreenshot())
	Expect(err).NotTo(HaveOccurred())
	path := filepath.Join(artifactsDir(), name)
	Expect(os.WriteFile(path, png, 0o644)).To(Succeed())
	GinkgoWriter.Printf("screenshot: %s\n", path)
}

var _ = Describe("The web console in a real browser", func() {
	It("lets an approver watch a Run reach its Gate live, approve it as themselves, and see the graph turn green", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		url := startConsole()
		approver, token := person(ctx, ns, "approver", "view", "ergon-gate-approver")
		review := ergonv1alpha1.Step{Name: "review", DependsOn: []string{"build"},
			Gate: &ergonv1alpha1.GateStep{Message: "Ship the build?"}}
		Expect(k8sClient.Create(ctx, &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ship"},
			Spec: ergonv1alpha1.SceneSpec{Steps: []ergonv1alpha1.Step{
				busyboxStep("build", `sleep 4; printf '%s' '<script>document.title="owned"</script>' > "$ERGON_OUTPUT"`),
				review,
				busyboxStep("publish", `echo -n published > "$ERGON_OUTPUT"`, "review"),
			}}})).To(Succeed())
		bctx := openBrowser(url, token)
		run := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ship-1"},
			Spec: ergonv1alpha1.RunSpec{SceneRef: corev1.LocalObjectReference{Name: "ship"}}}
		Expect(k8sClient.Create(ctx, run)).To(Succeed())

		By("opening the Run before it waits, and marking the page to prove it is never reloaded")
		Expect(within(bctx, 90*time.Second, chromedp.Navigate(url+"/#/ns/"+ns+"/runs/ship-1"),
			chromedp.WaitVisible(chromedp.CSS(`#graph g.node[data-step="review"]`)), chromedp.WaitVisible(chromedp.CSS("#live.on")))).To(Succeed())
		Expect(evalJS[bool](bctx, `window.__notReloaded = true`)).To(BeTrue())
		Expect(evalJS[string](bctx, `document.querySelector('#graph g.node[data-step="review"]').getAttribute("class")`)).
			NotTo(ContainSubstring("phase-Waiting"))

		By("seeing the Gate's question and buttons arrive when the Run waits")
		Expect(within(bctx, 2*time.Minute, chromedp.WaitVisible(chromedp.CSS(`#gate-log button.decide[data-option="approve"]`)))).To(Succeed())
		// The Gate exists a moment before the Run's status says its step waits (the controller
		// creates it, then writes the status): the graph follows the Run, so it may lag the
		// buttons by one update.
		Expect(within(bctx, 30*time.Second, chromedp.WaitVisible(chromedp.CSS(`#graph g.node.phase-Waiting[data-step="review"]`)))).
			To(Succeed())

		By("showing the build's output, a script tag, as text")
		Expect(evalJS[string](bctx, `document.querySelector('#steps [data-step="build"] pre.output-preview').textContent`)).
			To(Equal(`<script>document.title="owned"</script>`))
		Expect(evalJS[int](bctx, `document.querySelectorAll('#main script').length`)).To(Equal(0))
		Expect(evalJS[string](bctx, `document.querySelector('#gate-log .question').textContent`)).To(Equal("Ship the build?"))
		screenshot(bctx, "waiting.png")

		By("approving with a comment")
		Expect(within(bctx, 30*time.Second,
			chromedp.SendKeys(chromedp.CSS(`#gate-log textarea.comment`), "ship it"),
			chromedp.Click(chromedp.CSS(`#gate-log button.decide[data-option="approve"]`)),
			chromedp.WaitVisible(chromedp.CSS(`#gate-log .decided-by`)))).To(Succeed())

		By("watching every step of the graph turn green without a reload")
		Expect(within(bctx, 2*time.Minute,
			chromedp.WaitVisible(chromedp.CSS(`#graph g.node.phase-Succeeded[data-step="publish"]`)))).To(Succeed())
		Expect(evalJS[int](bctx, `document.querySelectorAll('#graph g.node.phase-Succeeded').length`)).To(Equal(3))
		Expect(evalJS[bool](bctx, `window.__notReloaded === true`)).To(BeTrue(), "the page was never reloaded")
		Expect(evalJS[string](bctx, `document.title`)).NotTo(ContainSubstring("owned"))
		Expect(evalJS[string](bctx, `document.querySelector('#gate-log .decided-by').textContent`)).To(Equal(approver))
		screenshot(bctx, "approved.png")

		gate := gateOfRun(ctx, ns, "ship-1")
		Expect(gate.Spec.Decision).NotTo(BeNil())
		Expect(gate.Spec.Decision.User).To(Equal(approver), "the webhook stamped the person whose token the console passed on")
		Expect(gate.Spec.Decision.Comment).To(Equal("ship it"))
		Expect(finished(ctx, run).Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded))
	})

	It("shows a question in the inbox with a badge, renders its schema as a form, refuses a wrong value inline, "+
		"and resumes the Run with a right one",
		func(ctx SpecContext) {
			ns := newNamespace(ctx)
			url := startConsole()
			answerer, token := person(ctx, ns, "ana", "view", "ergon-gate-approver")
			input := `{"type": "object", "required": ["version"], "properties": {
			"version": {"type": "string", "title": "Version", "pattern": "^v[0-9]+$"},
			"channel": {"type": "string", "enum": ["stable", "beta"], "default": "beta"},
			"notify": {"type": "boolean", "default": false},
			"notes": {"type": "string", "format": "multiline", "description": "<b>shown as text</b>"}}}`
			Expect(k8sClient.Create(ctx, &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "release"},
				Spec: ergonv1alpha1.SceneSpec{Steps: []ergonv1alpha1.Step{
					{Name: "plan", Gate: &ergonv1alpha1.GateStep{Message: "Which version ships?",
						Input: &apiextensionsv1.JSON{Raw: []byte(input)}}},
					busyboxStep("ship", `echo -n shipping {{ .steps.plan.outputs.version | shquote }} > "$ERGON_OUTPUT"`, "plan"),
				}}})).To(Succeed())
			run := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "release-1"},
				Spec: ergonv1alpha1.RunSpec{SceneRef: corev1.LocalObjectReference{Name: "release"}}}
			Expect(k8sClient.Create(ctx, run)).To(Succeed())
			gate := gateOfRun(ctx, ns, "release-1")

			bctx := openBrowser(url, token)
			card := fmt.Sprintf(`#inbox .card.gate[data-gate=%q]`, gate.Name)
			By("finding the question in the inbox, counted on its link")
			Expect(within(bctx, time.Minute, chromedp.Navigate(url+"/#/ns/"+ns+"/inbox"),
				chromedp.WaitVisible(chromedp.CSS(card+` input[data-path="version"]`)))).To(Succeed())
			Expect(within(bctx, 30*time.Second, chromedp.WaitVisible(chromedp.CSS(`#inbox-count`)))).To(Succeed())
			Expect(evalJS[string](bctx, `document.querySelector('#inbox-count').textContent`)).To(Equal("1"))
			Expect(evalJS[string](bctx, `document.querySelector('`+card+` select[data-path="channel"]').value`)).To(Equal(`"beta"`),
				"the default is chosen")
			Expect(evalJS[string](bctx, `document.querySelector('`+card+` textarea[data-path="notes"]').tagName`)).To(Equal("TEXTAREA"))
			Expect(evalJS[int](bctx, `document.querySelectorAll('`+card+` .input-form b').length`)).To(Equal(0), "a description is text, never HTML")
			screenshot(bctx, "question.png")

			By("answering with a version the schema refuses: the webhook's error shows under the field")
			Expect(within(bctx, 30*time.Second,
				chromedp.SetValue(chromedp.CSS(card+` input[data-path="version"]`), "1.0"),
				chromedp.Click(chromedp.CSS(card+` button.decide[data-option="approve"]`)),
				chromedp.WaitVisible(chromedp.CSS(card+` [data-field="version"] .field-error`)))).To(Succeed())
			Expect(evalJS[string](bctx, `document.querySelector('`+card+` [data-field="version"] .field-error').textContent`)).
				To(ContainSubstring(`must match`))
			Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(gate), gate)).To(Succeed())
			Expect(gate.Spec.Decision).To(BeNil(), "nothing was written")
			screenshot(bctx, "refused.png")

			By("answering right: the Run resumes with the values, stamped with who gave them")
			Expect(within(bctx, 30*time.Second,
				chromedp.SetValue(chromedp.CSS(card+` input[data-path="version"]`), "v7"),
				chromedp.SetValue(chromedp.CSS(card+` select[data-path="channel"]`), `"stable"`),
				chromedp.Click(chromedp.CSS(card+` input[data-path="notify"]`)),
				chromedp.Click(chromedp.CSS(card+` button.decide[data-option="approve"]`)),
				chromedp.WaitNotPresent(chromedp.CSS(card+` input[data-path="version"]`)))).To(Succeed())
			run = finished(ctx, run)
			Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded), "%+v", run.Status)
			Expect(stepOf(run, "plan").Output.Preview).To(MatchJSON(`{"version": "v7", "channel": "stable", "notify": true}`))
			Expect(stepOf(run, "ship").Output.Preview).To(Equal("shipping v7"))
			Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(gate), gate)).To(Succeed())
			Expect(gate.Spec.Decision.User).To(Equal(answerer))
			Expect(within(bctx, 30*time.Second, chromedp.WaitNotVisible(chromedp.CSS(`#inbox-count`)))).To(Succeed(),
				"the badge goes once nothing waits")
		})

	It("shows a conversation as a chat that takes the viewer's messages, live, until they end it", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		url := startConsole()
		writer, token := person(ctx, ns, "ana", "view", "ergon-gate-approver")
		deployFakeLLMScript(ctx, ns, `rules:
- match: {lastRole: tool}
  reply: {content: 'Deploying v2. Anything else?'}
- match: {lastContains: 'please deploy'}
  reply:
    toolCalls: [{name: deploy_status, arguments: '{"version": "v2"}'}]
- match: {lastRole: user}
  times: 1
  reply: {content: 'How can I help?'}
mcpTools:
- {name: deploy_status, description: "Whether a version may be deployed.", result: "v2 may be deployed"}
`)
		scene := &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: "chat", Namespace: ns}}
		scene.Spec.Models = map[string]ergonv1alpha1.ModelSpec{"default": {
			BaseURL: ergonv1alpha1.URL(fmt.Sprintf("http://llm.%s.svc/v1", ns)), Model: "fake"}}
		scene.Spec.Steps = []ergonv1alpha1.Step{{Name: "support", Agent: &ergonv1alpha1.AgentStep{Prompt: "Greet the user.",
			AllowHosts: []ergonv1alpha1.Host{ergonv1alpha1.Host(fmt.Sprintf("tracker.%s.svc:8080", ns))},
			Tools: []ergonv1alpha1.AgentTool{{MCP: &ergonv1alpha1.MCPTool{
				URL: ergonv1alpha1.URL(fmt.Sprintf("http://tracker.%s.svc:8080/mcp", ns)), Allow: []string{"deploy_status"}}}},
			Conversation: &ergonv1alpha1.AgentConversation{}}}}
		Expect(k8sClient.Create(ctx, scene)).To(Succeed())
		run := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "chat-1"},
			Spec: ergonv1alpha1.RunSpec{SceneRef: corev1.LocalObjectReference{Name: "chat"}}}
		Expect(k8sClient.Create(ctx, run)).To(Succeed())

		bctx := openBrowser(url, token)
		By("reading the agent's first reply in the chat, with a box to answer it")
		Expect(within(bctx, 2*time.Minute, chromedp.Navigate(url+"/#/ns/"+ns+"/runs/chat-1"),
			chromedp.WaitVisible(chromedp.CSS(`#chat textarea[data-path="message"]`)))).To(Succeed())
		Expect(evalJS[string](bctx, `document.querySelector('#chat .bubble.agent .text').textContent`)).To(Equal("How can I help?"))

		By("sending a message: it shows as the viewer's, and the agent's answer arrives without a reload")
		Expect(within(bctx, 2*time.Minute,
			chromedp.SendKeys(chromedp.CSS(`#chat textarea[data-path="message"]`), "please deploy v2"),
			chromedp.Click(chromedp.CSS(`#chat button.decide[data-option="approve"]`)),
			chromedp.WaitVisible(chromedp.CSS(`#chat .bubble.person`)),
			chromedp.WaitVisible(chromedp.CSS(`#chat .bubble.person ~ .bubble.agent`)))).To(Succeed())
		Eventually(func() string {
			return evalJS[string](bctx, `document.querySelector('#chat .bubble.person .text').textContent`)
		}).Should(Equal("please deploy v2"))
		Eventually(func() string {
			return evalJS[string](bctx, `document.querySelector('#chat .bubble.person .who').textContent`)
		}).Should(HavePrefix(writer))
		Expect(evalJS[string](bctx, `[...document.querySelectorAll('#chat .bubble.agent .text')].pop().textContent`)).
			To(Equal("Deploying v2. Anything else?"))
		By("the agent's tool call shows as a collapsed card above the reply it led to")
		Expect(within(bctx, time.Minute, chromedp.WaitVisible(chromedp.CSS(`#chat .toolcalls[data-before="1"] .toolcall summary`)))).
			To(Succeed())
		Expect(evalJS[string](bctx, `document.querySelector('#chat .toolcalls[data-before="1"] .toolcall summary').textContent`)).
			To(Equal("tool deploy_status"))
		Expect(evalJS[bool](bctx, `document.querySelector('#chat .toolcall').open`)).To(BeFalse(), "collapsed")
		Expect(evalJS[string](bctx, `document.querySelector('#chat .toolcall pre.result').textContent`)).
			To(HavePrefix("v2 may be deployed"))
		screenshot(bctx, "chat.png")

		By("ending it: the Run succeeds with the agent's last reply")
		Expect(within(bctx, 2*time.Minute, chromedp.WaitVisible(chromedp.CSS(`#chat button.decide[data-option="reject"]`)),
			chromedp.Click(chromedp.CSS(`#chat button.decide[data-option="reject"]`)))).To(Succeed())
		run = finished(ctx, run)
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded), "%+v", run.Status)
		Expect(stepOf(run, "support").Output.Preview).To(Equal("Deploying v2. Anything else?"))
		Expect(fakeLLMRequests(ctx, ns)).To(Equal(3), "no turn was asked again")
	})

	It("shows a view-only user the API server's refusal, verbatim, when they approve, and changes nothing", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		url := startConsole()
		viewer, token := person(ctx, ns, "viewer", "view")
		gateScene(ctx, ns, "hold", ergonv1alpha1.GateStep{Message: "Release?"})
		Expect(k8sClient.Create(ctx, &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hold-1"},
			Spec: ergonv1alpha1.RunSpec{SceneRef: corev1.LocalObjectReference{Name: "hold"}}})).To(Succeed())
		gate := gateOfRun(ctx, ns, "hold-1")

		// What the API server answers this user for the same patch, as kubectl would print it.
		as := rest.CopyConfig(cfg)
		as.Impersonate = rest.ImpersonationConfig{UserName: viewer,
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}}
		direct, err := client.New(as, client.Options{Scheme: scheme})
		Expect(err).NotTo(HaveOccurred())
		patched := gate.DeepCopy()
		patched.Spec.Decision = &ergonv1alpha1.GateDecision{Option: "approve"}
		want := direct.Patch(ctx, patched, client.MergeFrom(gate))
		Expect(want).To(HaveOccurred())

		bctx := openBrowser(url, token)
		sel := fmt.Sprintf(`.card.gate[data-gate=%q]`, gate.Name)
		Expect(within(bctx, time.Minute, chromedp.Navigate(url+"/#/ns/"+ns+"/gates"),
			chromedp.WaitVisible(chromedp.CSS(sel+` button.decide[data-option="approve"]`)),
			chromedp.Click(chromedp.CSS(sel+` button.decide[data-option="approve"]`)),
			chromedp.WaitVisible(chromedp.CSS(sel+` .refusal`)))).To(Succeed())
		refusal := evalJS[string](bctx, fmt.Sprintf(`document.querySelector(%q).textContent`, sel+" .refusal"))
		Expect(refusal).To(Equal(want.Error()))
		Expect(refusal).To(ContainSubstring(`cannot patch resource "gates"`))
		screenshot(bctx, "refused.png")

		Consistently(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(gate), gate)).To(Succeed())
			g.Expect(gate.Spec.Decision).To(BeNil())
		}).WithTimeout(3 * time.Second).Should(Succeed())
		Expect(evalJS[int](bctx, `document.querySelectorAll('#pending-gates .card.gate').length`)).To(Equal(1))
	})

	It("lists a Run a Trigger started, and shows an agent step's transcript as text", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		url := startConsole()
		_, token := person(ctx, ns, "reader", "view")
		deployFakeLLM(ctx, ns)
		Expect(k8sClient.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "llm", Namespace: ns},
			StringData: map[string]string{"apiKey": "e2e-console-key"}})).To(Succeed())
		scene := &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: "sprint", Namespace: ns}}
		scene.Spec.Models = map[string]ergonv1alpha1.ModelSpec{"default": {
			BaseURL: ergonv1alpha1.URL(fmt.Sprintf("http://llm.%s.svc/v1", ns)), Model: "fake", Temperature: new("0"), Seed: new(int64(1)),
			APIKeySecretRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "llm"}, Key: "apiKey"},
		}}
		scene.Spec.Steps = []ergonv1alpha1.Step{{Name: "draft", Timeout: &metav1.Duration{Duration: 2 * time.Minute},
			Agent: &ergonv1alpha1.AgentStep{
				Prompt:     "Fetch sprint 43 from the tracker and report what was done.",
				Tools:      []ergonv1alpha1.AgentTool{{Name: ergonv1alpha1.ToolHTTPFetch}},
				AllowHosts: []ergonv1alpha1.Host{ergonv1alpha1.Host(fmt.Sprintf("tracker.%s.svc:8080", ns))}, MaxTurns: new(int32(5)),
			}}}
		Expect(k8sClient.Create(ctx, scene)).To(Succeed())
		Expect(k8sClient.Create(ctx, &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: "notify", Namespace: ns},
			Spec: ergonv1alpha1.SceneSpec{Steps: []ergonv1alpha1.Step{busyboxStep("say", `echo -n told > "$ERGON_OUTPUT"`)}}})).To(Succeed())
		Expect(k8sClient.Create(ctx, &ergonv1alpha1.Trigger{ObjectMeta: metav1.ObjectMeta{Name: "after-sprint", Namespace: ns},
			Spec: ergonv1alpha1.TriggerSpec{SceneRef: corev1.LocalObjectReference{Name: "notify"},
				RunCompleted: &ergonv1alpha1.RunCompletedSource{SceneRef: corev1.LocalObjectReference{Name: "sprint"}}}})).To(Succeed())
		run := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: "sprint-1", Namespace: ns},
			Spec: ergonv1alpha1.RunSpec{SceneRef: corev1.LocalObjectReference{Name: "sprint"}}}
		Expect(k8sClient.Create(ctx, run)).To(Succeed())
		bctx := openBrowser(url, token)

		By("seeing the Run the Trigger starts appear in the run list, filtered by the Trigger")
		Expect(within(bctx, 30*time.Second, chromedp.Navigate(url+"/#/ns/"+ns+"/runs"),
			chromedp.WaitVisible(chromedp.CSS("#live.on")))).To(Succeed())
		Expect(within(bctx, 3*time.Minute, chromedp.WaitReady(chromedp.CSS(`#filter-trigger option[value="after-sprint"]`)))).To(Succeed())
		// Picked and announced in one step, as a person's pick is: a live update between the two
		// would draw the filter's options again with the filter still unset.
		Expect(evalJS[bool](bctx, `(() => { const s = document.getElementById("filter-trigger"); s.value = "after-sprint";
			s.dispatchEvent(new Event("change")); return s.value === "after-sprint"; })()`)).To(BeTrue())
		Eventually(func() []string {
			return evalJS[[]string](bctx, `[...document.querySelectorAll("#runs tbody tr[data-run]")]
				.map((r) => r.getAttribute("data-run") + " " + r.querySelector("td.trigger").textContent)`)
		}).WithTimeout(20 * time.Second).Should(ConsistOf(MatchRegexp(`^after-sprint-\S+ after-sprint$`)))
		screenshot(bctx, "runs.png")

		By("reading the agent step's transcript")
		Expect(finished(ctx, run).Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded))
		Expect(within(bctx, 30*time.Second, chromedp.Navigate(url+"/#/ns/"+ns+"/runs/sprint-1"),
			chromedp.Click(chromedp.CSS(`#steps [data-step="draft"] summary`)),
			chromedp.Click(chromedp.CSS(`#steps [data-step="draft"] button.transcript`)),
			chromedp.WaitVisible(chromedp.CSS(`#steps [data-step="draft"] .transcript .entry.tool`)))).To(Succeed())
		text := evalJS[string](bctx, `document.querySelector('#steps [data-step="draft"] div.transcript').textContent`)
		Expect(text).To(ContainSubstring("http_fetch"))
		Expect(text).To(ContainSubstring("Succeeded"))
		Expect(text).To(ContainSubstring(`"sprint": 43`))
		Expect(text).NotTo(ContainSubstring("e2e-console-key"))
		screenshot(bctx, "transcript.png")
	})
})
