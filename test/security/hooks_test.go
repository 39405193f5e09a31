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
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/hooks"
)

// Item 8: a stranger who reaches the hooks port, without the key, against the endpoint as
// the manager runs it (its own identity, its default caps), on loopback.

var stolenKey = []byte("hooks-attack-signing-key")

// hooksEndpoint starts the webhook Trigger endpoint on a loopback port with the manager's
// identity until the spec ends, and returns its base URL.
func hooksEndpoint() string {
	c, err := client.New(managerCfg, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
	l, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	addr := l.Addr().String()
	Expect(l.Close()).To(Succeed())
	srv := &hooks.Server{Client: c, SecretReader: c, Clock: clock.RealClock{}, Addr: addr, Rate: 10, Burst: 20}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Start(ctx) }()
	DeferCleanup(func() {
		cancel()
		Eventually(done).Should(Receive(BeNil()))
	})
	url := "http://" + addr
	Eventually(func() error {
		resp, err := http.Get(url + "/")
		if err == nil {
			_ = resp.Body.Close()
		}
		return err
	}).Should(Succeed(), "the hooks endpoint serves")
	return url
}

// hookTarget is a namespace with a Scene and a webhook Trigger whose key is stolenKey.
func hookTarget(format ergonv1alpha1.WebhookFormat, names ...string) string {
	ns := newNamespace()
	Expect(admin.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hook-key"},
		Data: map[string][]byte{"key": stolenKey}})).To(Succeed())
	scene := &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "on-push"}}
	scene.Spec.Params = []ergonv1alpha1.ParamSpec{{Name: "pr"}}
	scene.Spec.Steps = trueSteps()
	Expect(admin.Create(ctx, scene)).To(Succeed())
	for _, name := range names {
		Expect(admin.Create(ctx, &ergonv1alpha1.Trigger{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: ergonv1alpha1.TriggerSpec{SceneRef: corev1.LocalObjectReference{Name: "on-push"},
				Webhook: &ergonv1alpha1.WebhookSource{
					SecretRef: corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "hook-key"}, Key: "key"},
					Format:    format,
					Params:    map[string]string{"pr": "string(body.pr)"},
				}}})).To(Succeed())
	}
	return ns
}

// heldBack is the end of a body, sent only once until is closed.
type heldBack struct {
	last  []byte
	until <-chan struct{}
}

func (h *heldBack) Read(p []byte) (int, error) {
	<-h.until
	if len(h.last) == 0 {
		return 0, io.EOF
	}
	n := copy(p, h.last)
	h.last = h.last[n:]
	return n, nil
}

// trueSteps is a Scene's one step that does nothing.
func trueSteps() []ergonv1alpha1.Step {
	return []ergonv1alpha1.Step{{Name: "s", Container: &ergonv1alpha1.ContainerStep{Image: "busybox", Command: []string{"true"}}}}
}

type hookReply struct {
	status int
	header http.Header
	body   string
}

func post(url string, body []byte, header map[string]string) hookReply {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	Expect(err).NotTo(HaveOccurred())
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	resp.Header.Del("Date")
	return hookReply{status: resp.StatusCode, header: resp.Header, body: string(raw)}
}

func ergonSigned(ts int64, id string, body []byte) map[string]string {
	t := strconv.FormatInt(ts, 10)
	return map[string]string{hooks.HeaderTimestamp: t, hooks.HeaderDelivery: id, hooks.HeaderSignature: hooks.Sign(stolenKey, t, id, body)}
}

func runsIn(ns string) int {
	list := &ergonv1alpha1.RunList{}
	Expect(admin.List(ctx, list, client.InNamespace(ns))).To(Succeed())
	return len(list.Items)
}

var _ = Describe("An unauthenticated sender at the hooks port", func() {
	var base string
	BeforeEach(func() { base = hooksEndpoint() })

	It("cannot replay a captured delivery, with its own headers or new ones", func() {
		ns := hookTarget(ergonv1alpha1.WebhookFormatErgon, "push")
		url := base + "/hooks/" + ns + "/push"
		body := []byte(`{"pr":7}`)
		var captured map[string]string
		// The manager's client reads the new Trigger at once; the sender's first try may still race it.
		Eventually(func() int {
			captured = ergonSigned(time.Now().Unix(), "d-1", body)
			return post(url, body, captured).status
		}).Should(Equal(http.StatusAccepted))
		Expect(runsIn(ns)).To(Equal(1))

		Expect(post(url, body, captured).status).To(Equal(http.StatusConflict), "the same request again")
		ts, _ := strconv.ParseInt(captured[hooks.HeaderTimestamp], 10, 64)
		for name, edit := range map[string]func(h map[string]string){
			"a fresh timestamp": func(h map[string]string) { h[hooks.HeaderTimestamp] = strconv.FormatInt(ts+30, 10) },
			"a new delivery id": func(h map[string]string) { h[hooks.HeaderDelivery] = "d-2" },
			"no delivery id":    func(h map[string]string) { delete(h, hooks.HeaderDelivery) },
			"another body":      func(map[string]string) {},
			"as GitHub's headers": func(h map[string]string) {
				h[hooks.HeaderGitHubSignature], h[hooks.HeaderGitHubDelivery] = h[hooks.HeaderSignature], "gh-1"
				delete(h, hooks.HeaderSignature)
			},
		} {
			h := maps.Clone(captured)
			edit(h)
			sent := body
			if name == "another body" {
				sent = []byte(`{"pr":8}`)
			}
			Expect(post(url, sent, h).status).To(Equal(http.StatusUnauthorized), name)
		}
		Expect(runsIn(ns)).To(Equal(1), "no replay started a Run")
	})

	It("cannot downgrade an Ergon Trigger to GitHub's body-only signature", func() {
		// The same key signs for a GitHub Trigger, whose deliveries carry no timestamp: one
		// captured there must not be accepted by the Ergon Trigger, nor again by the GitHub one.
		ns := hookTarget(ergonv1alpha1.WebhookFormatGitHub, "from-github")
		Expect(admin.Create(ctx, &ergonv1alpha1.Trigger{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "push"},
			Spec: ergonv1alpha1.TriggerSpec{SceneRef: corev1.LocalObjectReference{Name: "on-push"},
				Params: map[string]string{"pr": "1"},
				Webhook: &ergonv1alpha1.WebhookSource{SecretRef: corev1.SecretKeySelector{
					LocalObjectReference: corev1.LocalObjectReference{Name: "hook-key"}, Key: "key"}}}})).To(Succeed())
		body := []byte(`{"pr":9}`)
		github := map[string]string{hooks.HeaderGitHubSignature: githubSignature(stolenKey, body), hooks.HeaderGitHubDelivery: "gh-1"}
		Eventually(func() int { return post(base+"/hooks/"+ns+"/from-github", body, github).status }).Should(Equal(http.StatusAccepted))

		github[hooks.HeaderGitHubDelivery] = "gh-2"
		Expect(post(base+"/hooks/"+ns+"/from-github", body, github).status).To(Equal(http.StatusConflict),
			"the same signature with a new delivery id, within the window")
		github[hooks.HeaderTimestamp] = strconv.FormatInt(time.Now().Unix(), 10)
		github[hooks.HeaderDelivery] = "gh-3"
		down := post(base+"/hooks/"+ns+"/push", body, github)
		Expect(down.status).To(Equal(http.StatusUnauthorized), down.body)
		Expect(runsIn(ns)).To(Equal(1))
	})

	It("cannot tell which Triggers and key Secrets exist from the answers", func() {
		ns := hookTarget(ergonv1alpha1.WebhookFormatErgon, "push")
		Expect(admin.Create(ctx, &ergonv1alpha1.Trigger{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "keyless"},
			Spec: ergonv1alpha1.TriggerSpec{SceneRef: corev1.LocalObjectReference{Name: "on-push"},
				Params: map[string]string{"pr": "1"},
				Webhook: &ergonv1alpha1.WebhookSource{SecretRef: corev1.SecretKeySelector{
					LocalObjectReference: corev1.LocalObjectReference{Name: "no-such-secret"}, Key: "key"}}}})).To(Succeed())
		body := []byte(`{"pr":1}`)
		guess := func(ts int64) map[string]string {
			t := strconv.FormatInt(ts, 10)
			return map[string]string{hooks.HeaderTimestamp: t, hooks.HeaderDelivery: "x",
				hooks.HeaderSignature: hooks.Sign([]byte("a guessed key"), t, "x", body)}
		}
		now := time.Now().Unix()
		answers := map[string]hookReply{
			"no such namespace":       post(base+"/hooks/no-such-namespace/push", body, guess(now)),
			"no such Trigger":         post(base+"/hooks/"+ns+"/nobody", body, guess(now)),
			"a Trigger without a key": post(base+"/hooks/"+ns+"/keyless", body, guess(now)),
			"a bad signature":         post(base+"/hooks/"+ns+"/push", body, guess(now)),
			"no signature":            post(base+"/hooks/"+ns+"/push", body, nil),
		}
		want := answers["no such Trigger"]
		Expect(want.status).To(Equal(http.StatusUnauthorized), want.body)
		for name, got := range answers {
			Expect(got).To(Equal(want), "%q is answered unlike a Trigger that does not exist", name)
		}
	})

	It("cannot make the manager hold more than its caps with 300 concurrent 1 MiB unsigned bodies, and admission keeps answering", func() {
		const senders = 300
		ns := hookTarget(ergonv1alpha1.WebhookFormatErgon, "push", "build", "deploy")
		paths := []string{"push", "build", "deploy", "nobody", "nothing", "nowhere"}
		flood := bytes.Repeat([]byte(`{"pr":"`+strings.Repeat("x", 1000)+`"}`), hooks.MaxBodyBytes/1012)
		bogus := "sha256=" + strings.Repeat("0", 64) // well formed, so a Trigger that maps params keeps the body

		// Collect promptly, so the heap measured is close to what is live.
		defer debug.SetGCPercent(debug.SetGCPercent(20))
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		peak := before.HeapAlloc
		stopSampling := make(chan struct{})
		sampled := make(chan struct{})
		go func() {
			defer close(sampled)
			var m runtime.MemStats
			for {
				select {
				case <-stopSampling:
					return
				case <-time.After(2 * time.Millisecond):
				}
				runtime.ReadMemStats(&m)
				peak = max(peak, m.HeapAlloc)
			}
		}()

		transport := &http.Transport{DisableKeepAlives: true, MaxConnsPerHost: 0}
		defer transport.CloseIdleConnections()
		httpClient := &http.Client{Transport: transport, Timeout: time.Minute}
		// Each sender sends all of its body but the last byte, and holds that back until told:
		// the most the manager could be made to hold at once is every body, were it to read them.
		start, finish := make(chan struct{}), make(chan struct{})
		var wg sync.WaitGroup
		var mu sync.Mutex
		statuses := map[int]int{}
		var failures []error
		answered := func() int {
			mu.Lock()
			defer mu.Unlock()
			n := len(failures)
			for _, c := range statuses {
				n += c
			}
			return n
		}
		for i := range senders {
			wg.Go(func() {
				<-start
				body := io.MultiReader(bytes.NewReader(flood[:len(flood)-1]), &heldBack{last: flood[len(flood)-1:], until: finish})
				req, _ := http.NewRequest(http.MethodPost, base+"/hooks/"+ns+"/"+paths[i%len(paths)], body)
				req.ContentLength = int64(len(flood))
				if i%2 == 0 {
					req.Header.Set(hooks.HeaderSignature, bogus)
					req.Header.Set(hooks.HeaderTimestamp, strconv.FormatInt(time.Now().Unix(), 10))
				}
				resp, err := httpClient.Do(req)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					failures = append(failures, err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
				statuses[resp.StatusCode]++
			})
		}
		close(start)
		// The senders the caps refuse are answered at once, without their bodies being read;
		// the rest hold their slots. (Were there no caps, none would be answered: the wait
		// ends after a few seconds with every body held, which the bound below catches.)
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline) && answered() < senders-hooks.DefaultMaxBodies; {
			time.Sleep(10 * time.Millisecond)
		}
		// Admission, served by the same manager process, answers during the flood.
		var admission []time.Duration
		for i := range 5 {
			scene := &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("during-flood-%d", i)}}
			scene.Spec.Steps = trueSteps()
			t0 := time.Now()
			Expect(admin.Create(ctx, scene)).To(Succeed())
			admission = append(admission, time.Since(t0))
		}
		close(finish)
		wg.Wait()
		close(stopSampling)
		<-sampled

		growth := int64(peak) - int64(before.HeapAlloc)
		// What the caps allow: every body slot holding a whole body (and the read that finds
		// its end), each connection's buffers and goroutine, and the collector's 20% headroom.
		bound := int64(hooks.DefaultMaxBodies*(hooks.MaxBodyBytes+64<<10)) + senders*64<<10 + int64(before.HeapAlloc)/5 + 16<<20
		AddReportEntry("hooks flood", fmt.Sprintf("heap before %d MiB, peak growth %d MiB (bound %d MiB); answers %v; "+
			"send errors %d; Scene admission during the flood %v", before.HeapAlloc>>20, growth>>20, bound>>20, statuses,
			len(failures), admission))
		Expect(growth).To(BeNumerically("<", bound), "the heap grew by %d MiB during the flood", growth>>20)

		// Every post was refused: unauthenticated, or for the caps. A post refused for the caps
		// is answered without its body being read and the connection closed, so a sender still
		// writing may see the reset before the answer; nothing else may go wrong.
		for _, err := range failures {
			Expect(errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)).To(BeTrue(),
				"a post failed other than by a refusal it was still sending into: %v", err)
		}
		total := len(failures)
		for status, n := range statuses {
			Expect(status).To(BeElementOf(http.StatusUnauthorized, http.StatusTooManyRequests, http.StatusServiceUnavailable))
			total += n
		}
		Expect(total).To(Equal(senders))
		Expect(statuses[http.StatusTooManyRequests]+statuses[http.StatusServiceUnavailable]).To(BeNumerically(">", 0),
			"300 bodies at once exceed the caps")
		Expect(runsIn(ns)).To(BeZero())

		// And the endpoint still accepts a genuine delivery after it.
		body := []byte(`{"pr":1}`)
		Expect(post(base+"/hooks/"+ns+"/push", body, ergonSigned(time.Now().Unix(), "after", body)).status).To(Equal(http.StatusAccepted))
	})
})

// githubSignature is the signature header GitHub sends: sha256= and the hex HMAC-SHA256 of
// the raw body with the webhook's key.
func githubSignature(key, body []byte) string {
	mac := hmac.New(sha256.New, key)
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}
