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

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	runcontroller "github.com/ergon-dev/ergon/controllers/run"
	"github.com/ergon-dev/ergon/internal/naming"
	"github.com/ergon-dev/ergon/internal/planner"
)

// bigOutputs answers the pods of step big with an output of n bytes, and every other pod with
// its last argument.
func bigOutputs(n int) script {
	return func(pod *corev1.Pod) outcome {
		if pod.Labels[ergonv1alpha1.LabelStep] == naming.LabelValue("big") {
			return outcome{Output: strings.Repeat("b", n)}
		}
		return echoLastArg(pod)
	}
}

var _ = Describe("Outputs that cannot be kept", func() {
	BeforeEach(func() {
		kctx, stop := context.WithCancel(context.Background())
		DeferCleanup(stop)
		go testKubelet.run(kctx)
	})

	It("fails a fan-out whose fan-in is more than a ConfigMap keeps, and the Run finishes", func(ctx SpecContext) {
		ns := newNamespace(ctx, bigOutputs(400_000))
		createScene(ctx, ns, "wide", fanOut(container("big", "x"), 0, 0, 1, 2), container("after", "x", "big"))
		createRun(ctx, ns, "r", "wide", nil)
		run := finished(ctx, ns, "r")
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunFailed), "%+v", run.Status.Steps)
		big := stepStatus(run, "big")
		Expect(big.Reason).To(Equal(ergonv1alpha1.ReasonOutputTooLarge))
		Expect(big.Message).To(ContainSubstring("JSON array of its 3 instances' outputs"))
		Expect(big.Message).To(ContainSubstring("1,047,552"))
		Expect(big.StoredBytes).To(BeEquivalentTo(3 * 400_000))
		Expect(run.Status.Storage).NotTo(BeNil())
		Expect(run.Status.Storage.ConfigMaps).To(BeEquivalentTo(3))
		Expect(stepStatus(run, "after").Reason).To(Equal(ergonv1alpha1.ReasonRunFailing))
	})

	It("fails a step whose output ConfigMap a full quota refuses, instead of trying the write again", func(ctx SpecContext) {
		ns := newNamespace(ctx, bigOutputs(4000))
		// No quota controller runs here: the quota's status is written by hand. It is full.
		quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "configmaps", Namespace: ns},
			Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourceConfigMaps: resource.MustParse("1")}}}
		Expect(k8sClient.Create(ctx, quota)).To(Succeed())
		quota.Status = corev1.ResourceQuotaStatus{Hard: quota.Spec.Hard,
			Used: corev1.ResourceList{corev1.ResourceConfigMaps: resource.MustParse("1")}}
		Expect(k8sClient.Status().Update(ctx, quota)).To(Succeed())
		Eventually(func() error {
			probe := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "probe-", Namespace: ns}}
			return k8sClient.Create(ctx, probe, client.DryRunAll)
		}).Should(MatchError(ContainSubstring("exceeded quota")))

		createScene(ctx, ns, "one", container("big", "x"))
		createRun(ctx, ns, "r", "one", nil)
		run := finished(ctx, ns, "r")
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunFailed), "%+v", run.Status.Steps)
		big := stepStatus(run, "big")
		Expect(big.Reason).To(Equal(ergonv1alpha1.ReasonOutputError))
		Expect(big.Message).To(ContainSubstring("exceeded quota"))
		Expect(big.Output).To(BeNil())
	})
})

var _ = Describe("The manager's limits on units and stored outputs", Serial, func() {
	It("fail a step past them with the limit named, keep nothing past them, and show what the Run keeps", func(ctx SpecContext) {
		kctx, cancel := context.WithCancel(context.Background())
		DeferCleanup(cancel)
		go testKubelet.run(kctx)
		ns := newNamespace(ctx, bigOutputs(2000))
		limits := planner.Limits{UnitsPerStep: 10, StepOutputBytes: 5000, RunOutputBytes: 1 << 20, ConfigMapsPerRun: 100}
		stopMgr()
		DeferCleanup(func() { stopMgr = startManager(suiteConfig()) })
		stop := startManager(runcontroller.RunConfig{EntrypointImage: "ergon/manager:test", MaxDepth: 3, Limits: limits})
		DeferCleanup(stop)

		items := make([]any, 40)
		for i := range items {
			items[i] = i
		}
		createScene(ctx, ns, "forty", fanOut(container("each", "x"), 0, items...))
		createScene(ctx, ns, "heavy", fanOut(container("big", "x"), 1, 0, 1, 2, 3))
		createRun(ctx, ns, "forty-1", "forty", nil)
		createRun(ctx, ns, "heavy-1", "heavy", nil)

		By("a 40-item fan-out against 10 units a step")
		run := finished(ctx, ns, "forty-1")
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunFailed))
		each := stepStatus(run, "each")
		Expect(each.Reason).To(Equal(ergonv1alpha1.ReasonUnitLimitReached))
		Expect(each.Message).To(ContainSubstring("--max-units-per-step"))
		pods := &corev1.PodList{}
		Expect(k8sClient.List(ctx, pods, client.InNamespace(ns),
			client.MatchingLabels{ergonv1alpha1.LabelRun: naming.LabelValue("forty-1")})).To(Succeed())
		Expect(pods.Items).To(BeEmpty(), "no unit was made")

		By("instances of 2,000 bytes against 5,000 bytes a step")
		run = finished(ctx, ns, "heavy-1")
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunFailed))
		big := stepStatus(run, "big")
		Expect(big.Reason).To(Equal(ergonv1alpha1.ReasonOutputTooLarge), big.Message)
		Expect(big.Message).To(ContainSubstring("--max-step-output-bytes"))
		Expect(big.Instances.States).To(Equal("SSFK"))
		Expect(big.StoredBytes).To(BeEquivalentTo(4000))
		Expect(run.Status.Storage).To(Equal(&ergonv1alpha1.StorageStatus{Bytes: 4000, ConfigMaps: 2,
			MaxBytes: 1 << 20, MaxConfigMaps: 100, MaxStepBytes: 5000}))
		cm := &corev1.ConfigMap{}
		err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: naming.UnitOutputConfigMapName("heavy-1", "big", 2, 0)}, cm)
		Expect(client.IgnoreNotFound(err)).To(Succeed())
		Expect(err).To(HaveOccurred(), "the output past the limit was not written")
	})
})
