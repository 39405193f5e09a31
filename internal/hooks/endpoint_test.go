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

package hooks

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/cause"
)

var hookKey = []byte("hook-signing-key-0123456789")

func createKeySecret(ctx context.Context, ns, name string) {
	Expect(k8sClient.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Data: map[string][]byte{"key": hookKey}})).To(Succeed())
}

func webhookTrigger(ctx context.Context, ns, name string, params map[string]string, edit ...func(*ergonv1alpha1.Trigger)) {
	t := &ergonv1alpha1.Trigger{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: ergonv1alpha1.TriggerSpec{
			SceneRef: corev1.LocalObjectReference{Name: "on-push"},
			Params:   map[string]string{"fixed": "yes"},
			Webhook: &ergonv1alpha1.WebhookSource{
				SecretRef: corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "hook-key"}, Key: "key"},
				Params:    params,
			},
		}}
	for _, e := range edit {
		e(t)
	}
	Expect(k8sClient.Create(ctx, t)).To(Succeed())
}

// hookClient sends deliveries to a hooks server on loopback in front of the real API server.
type hookClient struct {
	url    string
	clock  *clocktesting.FakeClock
	server *Server
}

func newHookServer(edit ...func(*Server)) *hookClient {
	c := clocktesting.NewFakeClock(time.Now())
	s := &Server{Client: k8sClient, SecretReader: k8sClient, Clock: c, Rate: 1000, Burst: 1000}
	for _, e := range edit {
		e(s)
	}
	srv := httptest.NewServer(s.Handler())
	DeferCleanup(srv.Close)
	return &hookClient{url: srv.URL, clock: c, server: s}
}

type hookAnswer struct {
	status int
	header http.Header
	body   map[string]string
	raw    string
	took   time.Duration
}

func (h *hookClient) send(method, path string, body io.Reader, header map[string]string) hookAnswer {
	req, err := http.NewRequest(method, h.url+path, body)
	Expect(err).NotTo(HaveOccurred())
	for k, v := range header {
		req.Header.Set(k, v)
	}
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	a := hookAnswer{status: resp.StatusCode, header: resp.Header, raw: string(raw), took: time.Since(start)}
	Expect(resp.Header.Get("Content-Type")).To(Equal("application/json"), string(raw))
	Expect(json.Unmarshal(raw, &a.body)).To(Succeed(), "the answer is a JSON object: %s", raw)
	Expect(a.raw).NotTo(ContainSubstring(string(hookKey)), "no answer holds the key")
	Expect(a.raw).NotTo(ContainSubstring("goroutine"), "no answer holds a stack trace")
	return a
}

// ergonHeaders signs body with key at ts, Ergon's way.
func ergonHeaders(key []byte, ts int64, delivery string, body []byte) map[string]string {
	h := map[string]string{
		HeaderSignature: Sign(key, strconv.FormatInt(ts, 10), delivery, body),
		HeaderTimestamp: strconv.FormatInt(ts, 10),
	}
	if delivery != "" {
		h[HeaderDelivery] = delivery
	}
	return h
}

// signed sends a body signed with key at the hook client's time, with an optional delivery id.
func (h *hookClient) signed(path string, body []byte, key []byte, delivery string) hookAnswer {
	return h.send(http.MethodPost, path, bytes.NewReader(body), ergonHeaders(key, h.clock.Now().Unix(), delivery, body))
}

func allRuns(ctx context.Context, ns string) []string {
	list := &ergonv1alpha1.RunList{}
	Expect(k8sClient.List(ctx, list, client.InNamespace(ns))).To(Succeed())
	var names []string
	for _, r := range list.Items {
		names = append(names, r.Name)
	}
	return names
}

var _ = Describe("The webhook Trigger endpoint", func() {
	var (
		ns   string
		path string
		h    *hookClient
		body = []byte(`{"pull_request":{"number":42,"title":"Fix it"},"sprint":{"number":43}}`)
	)
	BeforeEach(func(ctx SpecContext) {
		ns = newNamespace(ctx)
		createKeySecret(ctx, ns, "hook-key")
		webhookTrigger(ctx, ns, "on-push", map[string]string{"pr": "body.pull_request.number", "title": "body.pull_request.title"})
		path = "/hooks/" + ns + "/on-push"
		h = newHookServer()
	})

	It("starts a Run for a signed delivery, with params mapped from the body, and records it", func(ctx SpecContext) {
		accepted := testutil.ToFloat64(deliveries.WithLabelValues("202"))
		a := h.signed(path, body, hookKey, "delivery-1")
		Expect(a.status).To(Equal(http.StatusAccepted), a.raw)
		Expect(testutil.ToFloat64(deliveries.WithLabelValues("202"))).To(Equal(accepted+1), "ergon_hook_deliveries_total{code=202}")
		Expect(a.body).To(HaveKeyWithValue("namespace", ns))
		name := a.body["run"]
		run := getRun(ctx, ns, name)
		Expect(run.Spec.SceneRef.Name).To(Equal("on-push"))
		Expect(run.Spec.Params).To(Equal(map[string]string{"fixed": "yes", "pr": "42", "title": "Fix it"}))
		Expect(run.Labels).To(HaveKeyWithValue(ergonv1alpha1.LabelTrigger, "on-push"))
		Expect(metav1.GetControllerOf(run).Name).To(Equal("on-push"))
		Eventually(func(g Gomega) {
			t := getTrigger(ctx, ns, "on-push")
			g.Expect(t.Status.LastDelivery).NotTo(BeNil())
			g.Expect(t.Status.LastDelivery.ID).To(Equal("delivery-1"))
			g.Expect(t.Status.LastDelivery.Run).To(Equal(name))
		}).Should(Succeed())
	})

	It("answers a retry, signed again later with the same delivery id, with the same Run", func(ctx SpecContext) {
		first := h.signed(path, body, hookKey, "delivery-2")
		Expect(first.status).To(Equal(http.StatusAccepted), first.raw)
		h.clock.Step(time.Minute)
		again := h.signed(path, body, hookKey, "delivery-2")
		Expect(again.status).To(Equal(http.StatusAccepted), again.raw)
		Expect(again.body["run"]).To(Equal(first.body["run"]))
		other := h.signed(path, body, hookKey, "delivery-3")
		Expect(other.body["run"]).NotTo(Equal(first.body["run"]))
		Expect(allRuns(ctx, ns)).To(ConsistOf(first.body["run"], other.body["run"]))
	})

	It("refuses a replay of an accepted request, and its signature under a new timestamp or delivery id", func(ctx SpecContext) {
		ts := h.clock.Now().Unix()
		captured := ergonHeaders(hookKey, ts, "d-1", body)
		first := h.send(http.MethodPost, path, bytes.NewReader(body), captured)
		Expect(first.status).To(Equal(http.StatusAccepted), first.raw)

		replay := h.send(http.MethodPost, path, bytes.NewReader(body), captured)
		Expect(replay.status).To(Equal(http.StatusConflict), replay.raw)
		Expect(replay.body["error"]).To(ContainSubstring("accepted already"))
		Expect(replay.raw).NotTo(ContainSubstring(first.body["run"]), "a replay learns nothing about the Run")

		for name, header := range map[string]map[string]string{
			"a new timestamp":   {HeaderTimestamp: strconv.FormatInt(ts+1, 10), HeaderDelivery: "d-1"},
			"a new delivery id": {HeaderTimestamp: strconv.FormatInt(ts, 10), HeaderDelivery: "d-2"},
			"no delivery id":    {HeaderTimestamp: strconv.FormatInt(ts, 10)},
		} {
			header[HeaderSignature] = captured[HeaderSignature]
			a := h.send(http.MethodPost, path, bytes.NewReader(body), header)
			Expect(a.status).To(Equal(http.StatusUnauthorized), "%s: %s", name, a.raw)
			Expect(a.body["error"]).To(Equal(NotAuthenticated), name)
		}

		// Without a delivery id, too, the same request is accepted once.
		noID := ergonHeaders(hookKey, ts, "", body)
		Expect(h.send(http.MethodPost, path, bytes.NewReader(body), noID).status).To(Equal(http.StatusAccepted))
		Expect(h.send(http.MethodPost, path, bytes.NewReader(body), noID).status).To(Equal(http.StatusConflict))
		Expect(allRuns(ctx, ns)).To(HaveLen(2))

		// Once the timestamp is stale the signature is forgotten, and the replay is refused as stale.
		h.clock.Step(MaxSkew + time.Second)
		h.server.forget(h.clock.Now(), func(types.NamespacedName) bool { return true })
		Expect(h.server.replays.len()).To(BeZero())
		Expect(h.send(http.MethodPost, path, bytes.NewReader(body), captured).status).To(Equal(http.StatusUnauthorized))
	})

	It("accepts GitHub's signature for a Trigger of the github format, and only there", func(ctx SpecContext) {
		webhookTrigger(ctx, ns, "from-github", map[string]string{"pr": "body.pull_request.number"},
			func(t *ergonv1alpha1.Trigger) { t.Spec.Webhook.Format = ergonv1alpha1.WebhookFormatGitHub })
		github := map[string]string{
			HeaderGitHubSignature: SignGitHub(hookKey, body),
			HeaderGitHubDelivery:  "72d3162e-cc78-11e3-81ab-4c9367dc0958",
		}
		a := h.send(http.MethodPost, "/hooks/"+ns+"/from-github", bytes.NewReader(body), github)
		Expect(a.status).To(Equal(http.StatusAccepted), a.raw)
		Expect(getRun(ctx, ns, a.body["run"]).Spec.Params).To(HaveKeyWithValue("pr", "42"))

		By("an Ergon Trigger refuses the body-only signature, however the headers are mixed")
		github[HeaderTimestamp] = strconv.FormatInt(h.clock.Now().Unix(), 10)
		github[HeaderDelivery] = "d"
		a = h.send(http.MethodPost, path, bytes.NewReader(body), github)
		Expect(a.status).To(Equal(http.StatusUnauthorized), a.raw)
		Expect(a.body["error"]).To(Equal(NotAuthenticated))

		By("a GitHub Trigger refuses Ergon's headers")
		a = h.send(http.MethodPost, "/hooks/"+ns+"/from-github", bytes.NewReader(body),
			ergonHeaders(hookKey, h.clock.Now().Unix(), "d", body))
		Expect(a.status).To(Equal(http.StatusUnauthorized), a.raw)
		Expect(allRuns(ctx, ns)).To(HaveLen(1))
	})

	It("gives the same answer, after the same least time, whether the Trigger, its key or the signature is missing", func(ctx SpecContext) {
		const delay = 300 * time.Millisecond
		h = newHookServer(func(s *Server) { s.RefusalDelay = delay })
		Expect(k8sClient.Create(ctx, &ergonv1alpha1.Trigger{ObjectMeta: metav1.ObjectMeta{Name: "cron", Namespace: ns},
			Spec: ergonv1alpha1.TriggerSpec{SceneRef: corev1.LocalObjectReference{Name: "nightly"},
				Schedule: &ergonv1alpha1.ScheduleSource{Cron: "@daily"}}})).To(Succeed())
		webhookTrigger(ctx, ns, "no-secret", nil, func(t *ergonv1alpha1.Trigger) { t.Spec.Webhook.SecretRef.Name = "missing" })
		webhookTrigger(ctx, ns, "no-key", nil, func(t *ergonv1alpha1.Trigger) { t.Spec.Webhook.SecretRef.Key = "other" })
		now := h.clock.Now()
		signedFor := func(trigger string, key []byte) func() hookAnswer {
			return func() hookAnswer { return h.signed("/hooks/"+ns+"/"+trigger, body, key, "d") }
		}
		var first hookAnswer
		unauthenticated := testutil.ToFloat64(deliveries.WithLabelValues("401"))
		for i, tc := range []struct {
			name   string
			answer func() hookAnswer
		}{
			{"no such Trigger", signedFor("nobody", hookKey)},
			{"no such namespace", func() hookAnswer { return h.signed("/hooks/no-such-ns/on-push", body, hookKey, "d") }},
			{"not a webhook Trigger", signedFor("cron", hookKey)},
			{"no key Secret", signedFor("no-secret", hookKey)},
			{"no key in the Secret", signedFor("no-key", hookKey)},
			{"a bad signature", signedFor("on-push", []byte("wrong key"))},
			{"no signature", func() hookAnswer { return h.send(http.MethodPost, path, bytes.NewReader(body), nil) }},
			{"a stale timestamp", func() hookAnswer {
				return h.send(http.MethodPost, path, bytes.NewReader(body), ergonHeaders(hookKey, now.Add(-6*time.Minute).Unix(), "", body))
			}},
			{"GitHub's header", func() hookAnswer {
				return h.send(http.MethodPost, path, bytes.NewReader(body), map[string]string{
					HeaderGitHubSignature: SignGitHub(hookKey, body), HeaderGitHubDelivery: "g"})
			}},
		} {
			By(tc.name)
			a := tc.answer()
			Expect(a.status).To(Equal(http.StatusUnauthorized), "%s: %s", tc.name, a.raw)
			Expect(a.took).To(BeNumerically(">=", delay), "%s was answered before the least time", tc.name)
			a.header.Del("Date")
			if i == 0 {
				first = a
				Expect(a.body["error"]).To(Equal(NotAuthenticated))
				continue
			}
			Expect(a.raw).To(Equal(first.raw), tc.name)
			Expect(a.header).To(Equal(first.header), tc.name)
		}
		Expect(testutil.ToFloat64(deliveries.WithLabelValues("401"))).To(Equal(unauthenticated+9), "ergon_hook_deliveries_total{code=401}")
		Expect(allRuns(ctx, ns)).To(BeEmpty())
	})

	It("refuses, with a JSON reason and without creating a Run, what it cannot accept once signed", func(ctx SpecContext) {
		for _, tc := range []struct {
			name   string
			answer func() hookAnswer
			status int
			reason string
		}{
			{"a body over 1 MiB", func() hookAnswer {
				return h.signed(path, bytes.Repeat([]byte("x"), MaxBodyBytes+1), hookKey, "big")
			}, http.StatusRequestEntityTooLarge, "bytes"},
			{"a body over 1 MiB of unknown length", func() hookAnswer {
				big := bytes.Repeat([]byte("x"), MaxBodyBytes+1)
				return h.send(http.MethodPost, path, io.MultiReader(bytes.NewReader(big)), ergonHeaders(hookKey, h.clock.Now().Unix(), "", big))
			}, http.StatusRequestEntityTooLarge, "bytes"},
			{"a mapping that fails on the body", func() hookAnswer {
				return h.signed(path, []byte(`{"push":{}}`), hookKey, "no-pr")
			}, http.StatusUnprocessableEntity, "spec.webhook.params[pr]"},
			{"a body that is not JSON", func() hookAnswer {
				return h.signed(path, []byte(`pr=42`), hookKey, "form")
			}, http.StatusUnprocessableEntity, "not JSON"},
			{"an unknown path", func() hookAnswer { return h.signed("/hooks/"+ns, body, hookKey, "d") },
				http.StatusNotFound, "POST /hooks/NAMESPACE/TRIGGER"},
			{"a GET", func() hookAnswer { return h.send(http.MethodGet, path, nil, nil) },
				http.StatusMethodNotAllowed, "POST"},
		} {
			By(tc.name)
			a := tc.answer()
			Expect(a.status).To(Equal(tc.status), "%s: %s", tc.name, a.raw)
			Expect(a.body["error"]).To(ContainSubstring(tc.reason), tc.name)
			if tc.status == http.StatusMethodNotAllowed {
				Expect(a.header.Get("Allow")).To(Equal(http.MethodPost))
			}
		}
		Expect(allRuns(ctx, ns)).To(BeEmpty())
		// A refused delivery is not remembered: once fixed, the same id is accepted.
		Expect(h.signed(path, body, hookKey, "no-pr").status).To(Equal(http.StatusAccepted))
	})

	It("refuses signed deliveries to a suspended Trigger", func(ctx SpecContext) {
		webhookTrigger(ctx, ns, "paused", nil, func(t *ergonv1alpha1.Trigger) { t.Spec.Suspend = new(true) })
		a := h.signed("/hooks/"+ns+"/paused", body, hookKey, "d")
		Expect(a.status).To(Equal(http.StatusConflict), a.raw)
		Expect(a.body["error"]).To(ContainSubstring("suspended"))
		Expect(allRuns(ctx, ns)).To(BeEmpty())
	})

	It("refuses signed deliveries to a Trigger whose budget is spent, until it is not", func(ctx SpecContext) {
		webhookTrigger(ctx, ns, "thrifty", nil, func(t *ergonv1alpha1.Trigger) {
			t.Spec.Budget = &ergonv1alpha1.SceneBudget{TokensPerDay: 1000}
		})
		spent := func(status metav1.ConditionStatus) {
			t := &ergonv1alpha1.Trigger{}
			Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "thrifty"}, t)).To(Succeed())
			meta.SetStatusCondition(&t.Status.Conditions, metav1.Condition{Type: ergonv1alpha1.ConditionBudgetExceeded,
				Status: status, Reason: ergonv1alpha1.ReasonBudgetExceeded, Message: "the Runs this Trigger created used 1000 tokens"})
			Expect(k8sClient.Status().Update(ctx, t)).To(Succeed())
		}
		spent(metav1.ConditionTrue)
		a := h.signed("/hooks/"+ns+"/thrifty", body, hookKey, "d")
		Expect(a.status).To(Equal(http.StatusTooManyRequests), a.raw)
		Expect(a.body["error"]).To(ContainSubstring("used 1000 tokens"))
		Expect(allRuns(ctx, ns)).To(BeEmpty())
		spent(metav1.ConditionFalse)
		Expect(h.signed("/hooks/"+ns+"/thrifty", body, hookKey, "d").status).To(Equal(http.StatusAccepted))
	})

	It("limits the deliveries each Trigger accepts and says when to retry", func(ctx SpecContext) {
		limited := newHookServer(func(s *Server) { s.Rate, s.Burst = 0.5, 2 }) // one every two seconds, two at once
		for i := range 2 {
			a := limited.signed(path, body, hookKey, "burst-"+strconv.Itoa(i))
			Expect(a.status).To(Equal(http.StatusAccepted), a.raw)
		}
		a := limited.signed(path, body, hookKey, "burst-2")
		Expect(a.status).To(Equal(http.StatusTooManyRequests), a.raw)
		Expect(a.header.Get("Retry-After")).To(Equal("2"))
		Expect(a.body["error"]).To(ContainSubstring("retry after 2s"))
		Expect(allRuns(ctx, ns)).To(HaveLen(2))

		limited.clock.Step(2 * time.Second)
		a = limited.signed(path, body, hookKey, "burst-2")
		Expect(a.status).To(Equal(http.StatusAccepted), a.raw)
		Expect(strings.HasPrefix(a.body["run"], "on-push-")).To(BeTrue())
	})

	It("starts at most so many Runs per Trigger per minute, answers 429 naming the limit, and counts a retry once", func(ctx SpecContext) {
		capped := newHookServer(func(s *Server) { s.Limits = cause.Limits{MaxPerMinute: 3} })
		for i := range 3 {
			a := capped.signed(path, body, hookKey, "minute-"+strconv.Itoa(i))
			Expect(a.status).To(Equal(http.StatusAccepted), a.raw)
		}
		a := capped.signed(path, body, hookKey, "minute-3")
		Expect(a.status).To(Equal(http.StatusTooManyRequests), a.raw)
		Expect(a.body["error"]).To(ContainSubstring("limit of Runs per Trigger per minute (3)"))
		Expect(a.body["error"]).To(ContainSubstring(cause.FlagMaxPerMinute))
		Expect(a.header.Get("Retry-After")).NotTo(BeEmpty())
		Expect(allRuns(ctx, ns)).To(HaveLen(3))
		// A retry of an accepted delivery, signed again, finds its Run: it starts nothing new.
		capped.clock.Step(time.Second)
		Expect(capped.signed(path, body, hookKey, "minute-0").status).To(Equal(http.StatusAccepted))

		capped.clock.Step(2 * time.Minute)
		a = capped.signed(path, body, hookKey, "minute-3")
		Expect(a.status).To(Equal(http.StatusAccepted), a.raw)
		Expect(allRuns(ctx, ns)).To(HaveLen(4))
	})

	It("reads at most so many bodies at once per Trigger and in all, and refuses the rest without reading them", func(ctx SpecContext) {
		capped := newHookServer(func(s *Server) { s.MaxBodies, s.MaxBodiesPerTrigger, s.RefusalDelay = 3, 2, -1 })
		// Bodies that keep arriving hold their slots until they end.
		var ends []*io.PipeWriter
		answers := make(chan int, 3)
		hold := func(trigger string) {
			r, w := io.Pipe()
			ends = append(ends, w)
			go func() {
				defer GinkgoRecover()
				answers <- capped.send(http.MethodPost, "/hooks/"+ns+"/"+trigger, r, nil).status
			}()
			_, err := w.Write([]byte(`{"pull_request":`))
			Expect(err).NotTo(HaveOccurred())
		}
		hold("on-push")
		hold("on-push")
		Eventually(func() int { _, n := capped.server.slots.inFlight(ns + "/on-push"); return n }).Should(Equal(2))

		a := capped.signed(path, body, hookKey, "third")
		Expect(a.status).To(Equal(http.StatusTooManyRequests), a.raw)
		Expect(a.header.Get("Retry-After")).To(Equal("1"))
		hold("nobody") // a path without a Trigger counts the same
		Eventually(func() int { n, _ := capped.server.slots.inFlight(""); return n }).Should(Equal(3))
		a = capped.signed("/hooks/"+ns+"/elsewhere", body, hookKey, "fourth")
		Expect(a.status).To(Equal(http.StatusServiceUnavailable), a.raw)
		Expect(a.header.Get("Retry-After")).To(Equal("1"))

		for _, w := range ends {
			Expect(w.Close()).To(Succeed())
		}
		for range ends {
			Eventually(answers).Should(Receive(Equal(http.StatusUnauthorized)), "an unsigned body, read to its end, is refused")
		}
		Eventually(func() int { n, _ := capped.server.slots.inFlight(""); return n }).Should(BeZero())
		Expect(capped.signed(path, body, hookKey, "third").status).To(Equal(http.StatusAccepted))
		Expect(allRuns(ctx, ns)).To(HaveLen(1))
	})
})
