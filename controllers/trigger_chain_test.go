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
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	triggercontroller "github.com/ergon-dev/ergon/controllers/trigger"
	"github.com/ergon-dev/ergon/internal/naming"
)

func sceneWithParams(ctx context.Context, ns, name string, params []string, steps ...ergonv1alpha1.Step) {
	scene := &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	for _, p := range params {
		scene.Spec.Params = append(scene.Spec.Params, ergonv1alpha1.ParamSpec{Name: p})
	}
	scene.Spec.Steps = steps
	Expect(k8sClient.Create(ctx, scene)).To(Succeed())
}

var _ = Describe("runCompleted Triggers", Serial, func() {
	BeforeEach(func() {
		ctx, cancel := context.WithCancel(context.Background())
		go testKubelet.run(ctx)
		DeferCleanup(cancel)
	})

	It("start one Run per source Run that ends in a listed phase, with params from its outputs, even across a restart", func(ctx SpecContext) {
		ns := newNamespace(ctx, func(pod *corev1.Pod) outcome {
			if strings.Contains(strings.Join(stepArgs(pod), " "), "fail") {
				return outcome{ExitCode: 1}
			}
			return echoLastArg(pod)
		})
		sceneWithParams(ctx, ns, "ingest", []string{"what"}, container("report", "{{ .params.what }}"))
		sceneWithParams(ctx, ns, "publish", []string{"body"}, container("post", "posted"))
		// A Run that ended before the Trigger existed starts nothing.
		before := createRun(ctx, ns, "before", "ingest", map[string]string{"what": "old news"})
		finished(ctx, ns, before.Name)
		time.Sleep(1100 * time.Millisecond) // finish times are kept in whole seconds

		trigger := &ergonv1alpha1.Trigger{ObjectMeta: metav1.ObjectMeta{Name: "chain", Namespace: ns},
			Spec: ergonv1alpha1.TriggerSpec{
				SceneRef: corev1.LocalObjectReference{Name: "publish"},
				RunCompleted: &ergonv1alpha1.RunCompletedSource{
					SceneRef: corev1.LocalObjectReference{Name: "ingest"},
					Phases:   []ergonv1alpha1.RunPhase{ergonv1alpha1.RunSucceeded},
					Params:   map[string]string{"body": "run.outputs.report.preview + ' from ' + run.name"},
				},
			}}
		Expect(k8sClient.Create(ctx, trigger)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, trigger))).To(Succeed()) })
		Eventually(func(g Gomega) {
			ready := meta.FindStatusCondition(getTrigger(ctx, ns, "chain").Status.Conditions, ergonv1alpha1.ConditionReady)
			g.Expect(ready).NotTo(BeNil())
			g.Expect(ready.Reason).To(Equal(ergonv1alpha1.ReasonWatching))
		}).Should(Succeed())

		good := createRun(ctx, ns, "good", "ingest", map[string]string{"what": "fresh news"})
		bad := createRun(ctx, ns, "bad", "ingest", map[string]string{"what": "fail"})
		Expect(finished(ctx, ns, good.Name).Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded))
		Expect(finished(ctx, ns, bad.Name).Status.Phase).To(Equal(ergonv1alpha1.RunFailed))
		good = getRun(ctx, ns, good.Name)

		want := naming.ChainedRunName("chain", string(good.UID))
		Eventually(func() []string { return triggerRuns(ctx, ns, "chain") }).Should(Equal([]string{want}))
		Expect(getRun(ctx, ns, want).Spec.Params).To(Equal(map[string]string{"body": "fresh news from good"}))
		Expect(getRun(ctx, ns, want).Spec.SceneRef.Name).To(Equal("publish"))
		Eventually(func(g Gomega) {
			t := getTrigger(ctx, ns, "chain")
			g.Expect(t.Status.LastRun).To(Equal(want))
			g.Expect(t.Status.HandledRuns).To(ContainElement(string(good.UID)))
		}).Should(Succeed())

		// A restart reconciles every Trigger again; nothing new starts.
		stopMgr()
		stopMgr = startManager(suiteConfig())
		Consistently(func() []string { return triggerRuns(ctx, ns, "chain") }, "2s").Should(Equal([]string{want}))

		// The chained Run finishing does not make the source Run count again.
		Expect(finished(ctx, ns, want).Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded))
		Consistently(func() []string { return triggerRuns(ctx, ns, "chain") }, "1s").Should(Equal([]string{want}))
	})

	It("reports a failing mapping as a Warning and starts nothing for that Run", func(ctx SpecContext) {
		ns := newNamespace(ctx, echoLastArg)
		createScene(ctx, ns, "ingest", container("report", "x"))
		trigger := &ergonv1alpha1.Trigger{ObjectMeta: metav1.ObjectMeta{Name: "broken", Namespace: ns},
			Spec: ergonv1alpha1.TriggerSpec{
				SceneRef: corev1.LocalObjectReference{Name: "publish"},
				RunCompleted: &ergonv1alpha1.RunCompletedSource{
					SceneRef: corev1.LocalObjectReference{Name: "ingest"},
					Params:   map[string]string{"body": "run.outputs.missing.preview"},
				},
			}}
		Expect(k8sClient.Create(ctx, trigger)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, trigger))).To(Succeed()) })
		Eventually(func() []metav1.Condition { return getTrigger(ctx, ns, "broken").Status.Conditions }).ShouldNot(BeEmpty())
		run := createRun(ctx, ns, "source", "ingest", nil)
		finished(ctx, ns, run.Name)
		Eventually(func() []string { return eventReasons(ctx, ns, "broken") }).Should(ContainElement(triggercontroller.EventMappingFailed))
		Consistently(func() []string { return triggerRuns(ctx, ns, "broken") }, "1s").Should(BeEmpty())
	})
})

var _ = Describe("Webhook Triggers in the controller", func() {
	It("report their path, and whether their key Secret is there", func(ctx SpecContext) {
		ns := newNamespace(ctx, nil)
		trigger := webhookTrigger(ctx, ns, "hook", nil)
		Eventually(func(g Gomega) {
			t := getTrigger(ctx, ns, "hook")
			g.Expect(t.Status.WebhookPath).To(Equal("/hooks/" + ns + "/hook"))
			ready := meta.FindStatusCondition(t.Status.Conditions, ergonv1alpha1.ConditionReady)
			g.Expect(ready).NotTo(BeNil())
			g.Expect(ready.Reason).To(Equal(ergonv1alpha1.ReasonSecretNotFound))
			g.Expect(ready.Message).To(ContainSubstring("spec.webhook.secretRef"))
		}).Should(Succeed())

		createKeySecret(ctx, ns)
		// The controller does not watch Secrets; any change to the Trigger looks again.
		patch := client.MergeFrom(trigger.DeepCopy())
		trigger.Annotations = map[string]string{"touched": "yes"}
		Expect(k8sClient.Patch(ctx, trigger, patch)).To(Succeed())
		Eventually(func(g Gomega) {
			ready := meta.FindStatusCondition(getTrigger(ctx, ns, "hook").Status.Conditions, ergonv1alpha1.ConditionReady)
			g.Expect(ready.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(ready.Reason).To(Equal(ergonv1alpha1.ReasonListening))
			g.Expect(ready.Message).NotTo(ContainSubstring(string(hookKey)))
		}).Should(Succeed())
	})
})
