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
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/naming"
)

// closedGate waits for a Gate to be closed because its Run ended in phase end, and checks
// what says so: the Decided condition of its generation and an Event on it.
func closedGate(ctx context.Context, ns, name string, end ergonv1alpha1.RunPhase) {
	GinkgoHelper()
	gate := &ergonv1alpha1.Gate{}
	Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, gate)).To(Succeed())
		g.Expect(gate.Status.Phase).To(Equal(ergonv1alpha1.GateClosed))
	}).Should(Succeed())
	c := meta.FindStatusCondition(gate.Status.Conditions, ergonv1alpha1.ConditionDecided)
	Expect(c).NotTo(BeNil())
	Expect(c.Status).To(Equal(metav1.ConditionFalse))
	Expect(c.Reason).To(Equal(ergonv1alpha1.ReasonRunFinished))
	Expect(c.Message).To(ContainSubstring("ended " + string(end) + " before anyone decided"))
	Expect(c.ObservedGeneration).To(Equal(gate.Generation))
	Expect(gate.Status.DecidedBy).To(BeEmpty())
	Eventually(func(g Gomega) {
		list := &eventsv1.EventList{}
		g.Expect(k8sClient.List(ctx, list, client.InNamespace(ns))).To(Succeed())
		var reasons []string
		for _, e := range list.Items {
			if e.Regarding.Kind == "Gate" && e.Regarding.Name == name {
				reasons = append(reasons, e.Reason)
			}
		}
		g.Expect(reasons).To(ContainElement("GateClosed"))
	}).Should(Succeed())
}

var _ = Describe("The Gates of a Run that ends undecided", func() {
	BeforeEach(func() {
		ctx, cancel := context.WithCancel(context.Background())
		go testKubelet.run(ctx)
		DeferCleanup(cancel)
	})

	It("are closed when the Run is cancelled: a gate step's and a tool call's", func(ctx SpecContext) {
		ns := newNamespace(ctx, agentScript(fetchCall))
		Expect(k8sClient.Create(ctx, &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: "writer", Namespace: ns},
			Spec: ergonv1alpha1.SceneSpec{Models: models, Steps: []ergonv1alpha1.Step{
				{Name: "review", Gate: &ergonv1alpha1.GateStep{Message: "Ship it?"}},
				{Name: "work", Agent: &ergonv1alpha1.AgentStep{Prompt: "Write.",
					Tools: []ergonv1alpha1.AgentTool{{Name: "http_fetch", RequireApproval: true}}}},
			}},
		})).To(Succeed())
		createRun(ctx, ns, "w-1", "writer", nil)
		stepGate := naming.GateName("w-1", "review")
		callGate := naming.ToolCallName("w-1", "work", "call_2")
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: callGate}, &ergonv1alpha1.Gate{})).To(Succeed())
		}).Should(Succeed())
		for _, name := range []string{stepGate, callGate} {
			Eventually(func(g Gomega) {
				gate := &ergonv1alpha1.Gate{}
				g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, gate)).To(Succeed())
				g.Expect(gate.Status.Phase).To(Equal(ergonv1alpha1.GatePending))
			}).Should(Succeed())
		}

		run := &ergonv1alpha1.Run{}
		Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "w-1"}, run)).To(Succeed())
		Expect(k8sClient.Patch(ctx, run, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"cancel":true}}`)))).To(Succeed())
		Expect(finished(ctx, ns, "w-1").Status.Phase).To(Equal(ergonv1alpha1.RunCancelled))
		closedGate(ctx, ns, stepGate, ergonv1alpha1.RunCancelled)
		closedGate(ctx, ns, callGate, ergonv1alpha1.RunCancelled)
		expectHealth(ctx, "Gate", ns, callGate, current)

		By("a decision that gets through anyway (this suite has no admission) decides nothing")
		gate := &ergonv1alpha1.Gate{}
		Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: stepGate}, gate)).To(Succeed())
		patch := client.MergeFrom(gate.DeepCopy())
		gate.Spec.Decision = &ergonv1alpha1.GateDecision{Option: "approve", User: "alice"}
		Expect(k8sClient.Patch(ctx, gate, patch)).To(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: stepGate}, gate)).To(Succeed())
			g.Expect(gate.Status.Phase).To(Equal(ergonv1alpha1.GateClosed))
		}, "1s").Should(Succeed())
	}, SpecTimeout(60*time.Second))

	It("are closed when the Run times out", func(ctx SpecContext) {
		ns := newNamespace(ctx, echoLastArg)
		createScene(ctx, ns, "gated", ergonv1alpha1.Step{Name: "review", Gate: &ergonv1alpha1.GateStep{Message: "Go?"}})
		Expect(k8sClient.Create(ctx, &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: "g-1", Namespace: ns},
			Spec: ergonv1alpha1.RunSpec{SceneRef: corev1.LocalObjectReference{Name: "gated"},
				Timeout: &metav1.Duration{Duration: 2 * time.Second}}})).To(Succeed())
		name := naming.GateName("g-1", "review")
		Expect(finished(ctx, ns, "g-1").Status.Phase).To(Equal(ergonv1alpha1.RunFailed))
		closedGate(ctx, ns, name, ergonv1alpha1.RunFailed)
	}, SpecTimeout(60*time.Second))
})
