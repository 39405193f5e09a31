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
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/hooks"
)

// hooksURL is the manager's hooks endpoint. The test process runs in the cluster's network
// namespace, so it reaches the pod directly; the Service is checked to point at it.
func hooksURL(ctx SpecContext) string {
	svc := &corev1.Service{}
	Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: managerNamespace, Name: "ergon-hooks"}, svc)).To(Succeed())
	Expect(svc.Spec.Ports).To(HaveLen(1))
	Expect(svc.Spec.Ports[0].TargetPort).To(Equal(intstr.FromString("hooks")))
	var url string
	Eventually(func(g Gomega) {
		pods := &corev1.PodList{}
		g.Expect(k8sClient.List(ctx, pods, client.InNamespace(managerNamespace), client.MatchingLabels(svc.Spec.Selector))).To(Succeed())
		g.Expect(pods.Items).NotTo(BeEmpty())
		pod := pods.Items[0]
		g.Expect(pod.Status.PodIP).NotTo(BeEmpty())
		port := 0
		for _, p := range pod.Spec.Containers[0].Ports {
			if p.Name == "hooks" {
				port = int(p.ContainerPort)
			}
		}
		g.Expect(port).NotTo(BeZero(), "the manager container has a port named hooks")
		url = "http://" + net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(port))
	}).WithTimeout(time.Minute).Should(Succeed())
	return url
}

func runsOfTrigger(ctx SpecContext, ns, trigger string) []ergonv1alpha1.Run {
	list := &ergonv1alpha1.RunList{}
	Expect(k8sClient.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{ergonv1alpha1.LabelTrigger: trigger})).To(Succeed())
	return list.Items
}

var _ = Describe("Triggers on a real cluster", func() {
	It("starts a Run of a * * * * * schedule within its minute", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		scene := &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: "tick", Namespace: ns}}
		scene.Spec.Steps = []ergonv1alpha1.Step{busyboxStep("tick", `echo -n tick > "$ERGON_OUTPUT"`)}
		Expect(k8sClient.Create(ctx, scene)).To(Succeed())
		trigger := &ergonv1alpha1.Trigger{ObjectMeta: metav1.ObjectMeta{Name: "every-minute", Namespace: ns},
			Spec: ergonv1alpha1.TriggerSpec{SceneRef: corev1.LocalObjectReference{Name: "tick"},
				Schedule: &ergonv1alpha1.ScheduleSource{Cron: "* * * * *", ConcurrencyPolicy: ergonv1alpha1.ForbidConcurrent}}}
		Expect(k8sClient.Create(ctx, trigger)).To(Succeed())

		var next time.Time
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(trigger), trigger)).To(Succeed())
			g.Expect(trigger.Status.NextScheduleTime).NotTo(BeNil())
			next = trigger.Status.NextScheduleTime.Time
		}).WithTimeout(30 * time.Second).Should(Succeed())

		// The Run is created at its minute; a few seconds allow for the API round trips.
		var run ergonv1alpha1.Run
		Eventually(func(g Gomega) {
			runs := runsOfTrigger(ctx, ns, "every-minute")
			g.Expect(runs).NotTo(BeEmpty())
			run = runs[0]
		}).WithTimeout(time.Until(next) + 15*time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())
		Expect(run.CreationTimestamp.Time).To(BeTemporally("~", next, 15*time.Second))
		Expect(finished(ctx, &run).Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded))
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(trigger), trigger)).To(Succeed())
		Expect(trigger.Status.LastScheduleTime).NotTo(BeNil())
		Expect(trigger.Status.LastScheduleTime.Time).To(BeTemporally("==", next))
		// Stop it before the next minute adds Runs the namespace deletion has to wait for.
		Expect(k8sClient.Delete(ctx, trigger)).To(Succeed())
	})

	It("starts a Run for a signed delivery to the hooks Service's pod, and the same one for its retry", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		key := []byte("e2e-signing-key")
		Expect(k8sClient.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "hook", Namespace: ns},
			Data: map[string][]byte{"key": key}})).To(Succeed())
		scene := &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: "on-push", Namespace: ns}}
		scene.Spec.Params = []ergonv1alpha1.ParamSpec{{Name: "pr"}}
		scene.Spec.Steps = []ergonv1alpha1.Step{busyboxStep("echo", `echo -n "pr {{ .params.pr }}" > "$ERGON_OUTPUT"`)}
		Expect(k8sClient.Create(ctx, scene)).To(Succeed())
		trigger := &ergonv1alpha1.Trigger{ObjectMeta: metav1.ObjectMeta{Name: "push", Namespace: ns},
			Spec: ergonv1alpha1.TriggerSpec{SceneRef: corev1.LocalObjectReference{Name: "on-push"},
				Webhook: &ergonv1alpha1.WebhookSource{
					SecretRef: corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "hook"}, Key: "key"},
					Params:    map[string]string{"pr": "body.pull_request.number"},
				}}}
		Expect(k8sClient.Create(ctx, trigger)).To(Succeed())
		url := hooksURL(ctx) + "/hooks/" + ns + "/push"

		body := []byte(`{"pull_request":{"number":7}}`)
		deliver := func() (int, map[string]string) {
			ts := time.Now().Unix()
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
			Expect(err).NotTo(HaveOccurred())
			req.Header.Set(hooks.HeaderSignature, hooks.Sign(key, ts, body))
			req.Header.Set(hooks.HeaderTimestamp, strconv.FormatInt(ts, 10))
			req.Header.Set(hooks.HeaderDelivery, "e2e-1")
			resp, err := http.DefaultClient.Do(req)
			Expect(err).NotTo(HaveOccurred())
			defer func() { _ = resp.Body.Close() }()
			raw, err := io.ReadAll(resp.Body)
			Expect(err).NotTo(HaveOccurred())
			answer := map[string]string{}
			Expect(json.Unmarshal(raw, &answer)).To(Succeed(), string(raw))
			return resp.StatusCode, answer
		}
		var first map[string]string
		// The manager's cache sees the new Trigger within moments.
		Eventually(func(g Gomega) {
			status, answer := deliver()
			g.Expect(status).To(Equal(http.StatusAccepted), fmt.Sprint(answer))
			first = answer
		}).WithTimeout(30 * time.Second).Should(Succeed())
		Expect(first).To(HaveKeyWithValue("namespace", ns))
		status, again := deliver()
		Expect(status).To(Equal(http.StatusAccepted))
		Expect(again["run"]).To(Equal(first["run"]))

		run := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: first["run"], Namespace: ns}}
		Expect(finished(ctx, run).Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded))
		Expect(run.Spec.Params).To(HaveKeyWithValue("pr", "7"))
		Expect(runsOfTrigger(ctx, ns, "push")).To(HaveLen(1))
	})
})
