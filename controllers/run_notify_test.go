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
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	runcontroller "github.com/ergon-dev/ergon/controllers/run"
	"github.com/ergon-dev/ergon/internal/notify"
)

// The suite's managers notify one channel, "ops": a receiver on loopback (allow-listed past
// the address guard, as an admin allows an in-cluster receiver), signing with notifyKey.
var (
	suiteNotifier runcontroller.Notifier
	suiteReceiver = &notifyReceiver{}
)

const notifyKey = "the-ops-key"

type notifyReceiver struct {
	mu  sync.Mutex
	got []received
}

type received struct {
	header http.Header
	body   []byte
}

func (r *notifyReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, received{header: req.Header.Clone(), body: body})
}

// of is what the receiver got about a Run.
func (r *notifyReceiver) of(run string) []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []received
	for _, g := range r.got {
		var m notify.Message
		if json.Unmarshal(g.body, &m) == nil && m.Run == run {
			out = append(out, g)
		}
	}
	return out
}

func startNotifier() runcontroller.Notifier {
	srv := httptest.NewServer(suiteReceiver)
	u, err := url.Parse(srv.URL)
	Expect(err).NotTo(HaveOccurred())
	keyFile := filepath.Join(GinkgoT().TempDir(), "key")
	Expect(os.WriteFile(keyFile, []byte(notifyKey), 0o600)).To(Succeed())
	path := filepath.Join(GinkgoT().TempDir(), "channels.yaml")
	Expect(os.WriteFile(path, []byte(`channels: [{name: ops, url: '`+srv.URL+`/hook', keyFile: `+keyFile+
		`, allowHosts: ['`+u.Host+`']}]
consoleURL: https://console.example`), 0o600)).To(Succeed())
	cfg, err := notify.Load(path)
	Expect(err).NotTo(HaveOccurred())
	n := notify.New(cfg, nil, nil)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { _ = n.Start(ctx) }()
	DeferCleanup(func() { cancel(); srv.Close() })
	return n
}

var _ = Describe("A Scene's notifications", func() {
	It("tell the admin's channel, signed, that a Gate waits, and say in an Event when the channel is not one", func(ctx SpecContext) {
		ns := newNamespace(ctx, echoLastArg)
		input := `{"type":"object","properties":{"version":{"type":"string"}}}`
		for name, channel := range map[string]string{"told": "ops", "untold": "chat"} {
			scene := &ergonv1alpha1.Scene{}
			scene.Name, scene.Namespace = name, ns
			scene.Spec.Notify = &ergonv1alpha1.SceneNotify{Channel: channel}
			scene.Spec.Steps = []ergonv1alpha1.Step{{Name: "ask", Gate: &ergonv1alpha1.GateStep{Message: "Which version?\nSay it.",
				Input: &apiextensionsv1.JSON{Raw: []byte(input)}}}}
			Expect(k8sClient.Create(ctx, scene)).To(Succeed())
			createRun(ctx, ns, name+"-1", name, nil)
		}

		var got []received
		Eventually(func() []received { got = suiteReceiver.of("told-1"); return got }).Should(HaveLen(1))
		Consistently(func() []received { return suiteReceiver.of("told-1") }).WithTimeout(time.Second).Should(HaveLen(1),
			"once per Gate, however often the Run is reconciled")
		var m notify.Message
		Expect(json.Unmarshal(got[0].body, &m)).To(Succeed())
		gate := &ergonv1alpha1.Gate{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: m.Gate}, gate)).To(Succeed())
		Expect(m).To(And(HaveField("Event", "GateOpened"), HaveField("Namespace", ns), HaveField("Step", "ask"),
			HaveField("GateUID", string(gate.UID)), HaveField("Question", "Which version?\nSay it."), HaveField("Asks", "input"),
			HaveField("Fields", []string{"version"}), HaveField("Link", "https://console.example/#/ns/"+ns+"/runs/told-1")))
		h := got[0].header
		Expect(h.Get(notify.HeaderDelivery)).To(Equal(string(gate.UID)))
		Expect(h.Get(notify.HeaderSignature)).To(Equal(notify.Sign([]byte(notifyKey), h.Get(notify.HeaderTimestamp),
			string(gate.UID), got[0].body)))

		Eventually(func(g Gomega) {
			events := &eventsv1.EventList{}
			g.Expect(k8sClient.List(ctx, events, client.InNamespace(ns))).To(Succeed())
			var notes []string
			for _, e := range events.Items {
				if e.Reason == reasonNotificationFailed && e.Regarding.Name == "untold-1" {
					notes = append(notes, e.Note)
				}
			}
			g.Expect(notes).To(ContainElement(ContainSubstring(
				`spec.notify.channel: the notification that Gate untold-1-ask-`)))
			g.Expect(notes).To(ContainElement(ContainSubstring(`no such notification channel "chat"; the cluster's: [ops]`)))
		}).Should(Succeed())
		Expect(suiteReceiver.of("untold-1")).To(BeEmpty())
	})
})
