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

package controllers

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
	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/hooks"
)

var hookKey = []byte("hook-signing-key-0123456789")

func createKeySecret(ctx context.Context, ns string) {
	Expect(k8sClient.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "hook-key", Namespace: ns},
		Data: map[string][]byte{"key": hookKey}})).To(Succeed())
}

func webhookTrigger(ctx context.Context, ns, name string, params map[string]string,
	edit ...func(*ergonv1alpha1.Trigger)) *ergonv1alpha1.Trigger {
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
	DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, t))).To(Succeed()) })
	return t
}

// hookClient sends deliveries to a hooks server in front of the real API server.
type hookClient struct {
	url   string
	clock *clocktesting.FakeClock
}

func newHookServer(r rate.Limit, burst int) *hookClient {
	c := clocktesting.NewFakeClock(time.Now())
	// The server reads Triggers and Secrets straight from the API server here; the manager
	// gives it its cache for Triggers.
	srv := httptest.NewServer((&hooks.Server{Client: k8sClient, SecretReader: k8sClient, Clock: c, Rate: r, Burst: burst}).Handler())
	DeferCleanup(srv.Close)
	return &hookClient{url: srv.URL, clock: c}
}

type hookAnswer struct {
	status int
	header http.Header
	body   map[string]string
	raw    string
}

func (h *hookClient) send(method, path string, body []byte, header map[string]string) hookAnswer {
	req, err := http.NewRequest(method, h.url+path, bytes.NewReader(body))
	Expect(err).NotTo(HaveOccurred())
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	a := hookAnswer{status: resp.StatusCode, header: resp.Header, raw: string(raw)}
	Expect(resp.Header.Get("Content-Type")).To(Equal("application/json"), string(raw))
	Expect(json.Unmarshal(raw, &a.body)).To(Succeed(), "the answer is a JSON object: %s", raw)
	Expect(a.raw).NotTo(ContainSubstring(string(hookKey)), "no answer holds the key")
	Expect(a.raw).NotTo(ContainSubstring("goroutine"), "no answer holds a stack trace")
	return a
}

// signed sends a body signed with key at the hook client's time, with an optional delivery id.
func (h *hookClient) signed(path string, body []byte, key []byte, delivery string) hookAnswer {
	ts := h.clock.Now().Unix()
	header := map[string]string{
		hooks.HeaderSignature: hooks.Sign(key, body),
		hooks.HeaderTimestamp: strconv.FormatInt(ts, 10),
	}
	if delivery != "" {
		header[hooks.HeaderDelivery] = delivery
	}
	return h.send(http.MethodPost, path, body, header)
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
		ns = newNamespace(ctx, nil)
		createKeySecret(ctx, ns)
		webhookTrigger(ctx, ns, "on-push", map[string]string{"pr": "body.pull_request.number", "title": "body.pull_request.title"})
		path = "/hooks/" + ns + "/on-push"
		h = newHookServer(1000, 1000)
	})

	It("starts a Run for a signed delivery, with params mapped from the body, and records it", func(ctx SpecContext) {
		a := h.signed(path, body, hookKey, "delivery-1")
		Expect(a.status).To(Equal(http.StatusAccepted), a.raw)
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

	It("answers a retried delivery with the same Run and creates nothing new", func(ctx SpecContext) {
		first := h.signed(path, body, hookKey, "delivery-2")
		Expect(first.status).To(Equal(http.StatusAccepted), first.raw)
		h.clock.Step(time.Minute) // the sender signs the retry again, later
		again := h.signed(path, body, hookKey, "delivery-2")
		Expect(again.status).To(Equal(http.StatusAccepted), again.raw)
		Expect(again.body["run"]).To(Equal(first.body["run"]))
		other := h.signed(path, body, hookKey, "delivery-3")
		Expect(other.body["run"]).NotTo(Equal(first.body["run"]))
		Expect(allRuns(ctx, ns)).To(ConsistOf(first.body["run"], other.body["run"]))
	})

	It("answers a replayed request without a delivery id with the same Run", func(ctx SpecContext) {
		req := map[string]string{
			hooks.HeaderSignature: hooks.Sign(hookKey, body),
			hooks.HeaderTimestamp: strconv.FormatInt(h.clock.Now().Unix(), 10),
		}
		first := h.send(http.MethodPost, path, body, req)
		Expect(first.status).To(Equal(http.StatusAccepted), first.raw)
		replay := h.send(http.MethodPost, path, body, req)
		Expect(replay.status).To(Equal(http.StatusAccepted), replay.raw)
		Expect(replay.body["run"]).To(Equal(first.body["run"]))
		Expect(allRuns(ctx, ns)).To(HaveLen(1))
	})

	It("accepts GitHub's signature header with its delivery id", func(ctx SpecContext) {
		a := h.send(http.MethodPost, path, body, map[string]string{
			hooks.HeaderGitHubSignature: hooks.Sign(hookKey, body),
			hooks.HeaderGitHubDelivery:  "72d3162e-cc78-11e3-81ab-4c9367dc0958",
		})
		Expect(a.status).To(Equal(http.StatusAccepted), a.raw)
		Expect(getRun(ctx, ns, a.body["run"]).Spec.Params).To(HaveKeyWithValue("pr", "42"))
	})

	It("refuses, with a JSON reason and without creating a Run, every delivery it cannot accept", func(ctx SpecContext) {
		stale := h.clock.Now().Add(-6 * time.Minute).Unix()
		for _, tc := range []struct {
			name   string
			answer func() hookAnswer
			status int
			reason string
		}{
			{"a bad signature", func() hookAnswer { return h.signed(path, body, []byte("wrong key"), "d") },
				http.StatusUnauthorized, "does not match"},
			{"no signature", func() hookAnswer { return h.send(http.MethodPost, path, body, nil) },
				http.StatusUnauthorized, "not signed"},
			{"a bad GitHub signature", func() hookAnswer {
				return h.send(http.MethodPost, path, body, map[string]string{
					hooks.HeaderGitHubSignature: hooks.Sign([]byte("wrong"), body), hooks.HeaderGitHubDelivery: "g"})
			}, http.StatusUnauthorized, "does not match"},
			{"a stale timestamp", func() hookAnswer {
				return h.send(http.MethodPost, path, body, map[string]string{
					hooks.HeaderSignature: hooks.Sign(hookKey, body), hooks.HeaderTimestamp: strconv.FormatInt(stale, 10)})
			}, http.StatusUnauthorized, "X-Ergon-Timestamp"},
			{"a body over 1 MiB", func() hookAnswer {
				return h.signed(path, bytes.Repeat([]byte("x"), hooks.MaxBodyBytes+1), hookKey, "big")
			}, http.StatusRequestEntityTooLarge, "bytes"},
			{"a mapping that fails on the body", func() hookAnswer {
				return h.signed(path, []byte(`{"push":{}}`), hookKey, "no-pr")
			}, http.StatusUnprocessableEntity, "spec.webhook.params[pr]"},
			{"a body that is not JSON", func() hookAnswer {
				return h.signed(path, []byte(`pr=42`), hookKey, "form")
			}, http.StatusUnprocessableEntity, "not JSON"},
			{"an unknown Trigger", func() hookAnswer {
				return h.signed("/hooks/"+ns+"/nobody", body, hookKey, "d")
			}, http.StatusNotFound, "no webhook Trigger nobody"},
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
	})

	It("refuses deliveries to a Trigger that is not a webhook, or is suspended", func(ctx SpecContext) {
		scheduleTrigger(ctx, ns, "cron", "@daily")
		a := h.signed("/hooks/"+ns+"/cron", body, hookKey, "d")
		Expect(a.status).To(Equal(http.StatusNotFound), a.raw)

		webhookTrigger(ctx, ns, "paused", nil, func(t *ergonv1alpha1.Trigger) { t.Spec.Suspend = new(true) })
		a = h.signed("/hooks/"+ns+"/paused", body, hookKey, "d")
		Expect(a.status).To(Equal(http.StatusConflict), a.raw)
		Expect(a.body["error"]).To(ContainSubstring("suspended"))
		Expect(allRuns(ctx, ns)).To(BeEmpty())
	})

	It("limits the deliveries each Trigger accepts and says when to retry", func(ctx SpecContext) {
		limited := newHookServer(0.5, 2) // a delivery every two seconds, two at once
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
})
