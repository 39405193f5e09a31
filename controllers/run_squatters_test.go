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
	"github.com/ergon-dev/ergon/internal/naming"
)

// expectSquatterNamed waits for an Event of obj that names the squatter, and checks that the
// squatter is still there, untouched: same UID, no owner.
func expectSquatterNamed(ctx context.Context, ns, regarding string, squatter client.Object) {
	Eventually(func(g Gomega) {
		told := warnings(ctx, ns, regarding, ergonv1alpha1.ReasonNameSquatted)
		g.Expect(told).NotTo(BeEmpty())
		g.Expect(told[0].Note).To(ContainSubstring(squatter.GetName()))
		g.Expect(told[0].Note).To(ContainSubstring(string(squatter.GetUID())))
	}).Should(Succeed())
	now, _ := squatter.DeepCopyObject().(client.Object)
	Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(squatter), now)).To(Succeed())
	Expect(now.GetUID()).To(Equal(squatter.GetUID()))
	Expect(now.GetOwnerReferences()).To(BeEmpty())
}

// expectNameTaken checks a Run's NameTaken condition names the squatter.
func expectNameTaken(run *ergonv1alpha1.Run, squatter string) {
	taken := meta.FindStatusCondition(run.Status.Conditions, ergonv1alpha1.ConditionNameTaken)
	Expect(taken).NotTo(BeNil())
	Expect(taken.Status).To(Equal(metav1.ConditionTrue))
	Expect(taken.Message).To(ContainSubstring(squatter))
}

var _ = Describe("Names that cannot be squatted", func() {
	BeforeEach(func() {
		ctx, cancel := context.WithCancel(context.Background())
		go testKubelet.run(ctx)
		DeferCleanup(cancel)
	})

	It("a pod under a step pod's name does not stop the step: it runs in a pod under another name", func(ctx SpecContext) {
		ns := newNamespace(ctx, echoLastArg)
		squatter := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: naming.StepPodName("sq-1", "work", 1), Namespace: ns},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "other", Image: "busybox:test"}}}}
		Expect(k8sClient.Create(ctx, squatter)).To(Succeed())
		createScene(ctx, ns, "sq", container("work", "done"), container("after", "after {{ .steps.work.output }}", "work"))
		createRun(ctx, ns, "sq-1", "sq", nil)

		run := finished(ctx, ns, "sq-1")
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded))
		Expect(stepStatus(run, "after").Output.Preview).To(Equal("after done"))
		Expect(stepStatus(run, "work").PodName).NotTo(Equal(squatter.Name))
		expectNameTaken(run, squatter.Name)
		expectSquatterNamed(ctx, ns, "sq-1", squatter)
	})

	It("a pod under a container tool call's pod name does not stop the call: it runs in a pod under another name",
		func(ctx SpecContext) {
			seen := &toolPods{}
			ns := newNamespace(ctx, linterScript(seen, func(*corev1.Pod) outcome { return outcome{Output: "2 findings"} }))
			name := naming.ToolCallName("l-1", "check", "call_9")
			squatter := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "other", Image: "busybox:test"}}}}
			Expect(k8sClient.Create(ctx, squatter)).To(Succeed())
			linterScene(ctx, ns)
			createRun(ctx, ns, "l-1", "linter", nil)

			run := finished(ctx, ns, "l-1")
			Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded), "%v", run.Status.Conditions)
			Expect(toolResultsOf(ctx, ns, "l-1", "check").Results).To(ConsistOf(HaveField("Content", "2 findings")))
			pods := seen.all()
			Expect(pods).To(HaveLen(1), "one pod for the call")
			Expect(pods[0].Name).NotTo(Equal(name))
			Expect(pods[0].Annotations).To(HaveKeyWithValue(ergonv1alpha1.AnnotationStandsFor, name))
			expectNameTaken(run, squatter.Name)
			expectSquatterNamed(ctx, ns, "l-1", squatter)
		})

	It("a pod under a fan-out unit's pod name does not stop the unit", func(ctx SpecContext) {
		ns := newNamespace(ctx, echoLastArg)
		squatter := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: naming.UnitPodName("fan-1", "shard", 1, 0, 1), Namespace: ns},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "other", Image: "busybox:test"}}}}
		Expect(k8sClient.Create(ctx, squatter)).To(Succeed())
		createScene(ctx, ns, "fan", fanOut(container("shard", "item {{ .item }}"), 0, 0, 1, 2))
		createRun(ctx, ns, "fan-1", "fan", nil)

		run := finished(ctx, ns, "fan-1")
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded), "%v", run.Status.Conditions)
		Expect(stepStatus(run, "shard").Output.Preview).To(ContainSubstring("item 1"))
		expectNameTaken(run, squatter.Name)
		expectSquatterNamed(ctx, ns, "fan-1", squatter)
	})

	It("a ConfigMap under a step's output ConfigMap's name does not stop the Run: the output is kept under another name",
		func(ctx SpecContext) {
			ns := newNamespace(ctx, echoLastArg)
			squatter := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: naming.OutputConfigMapName("big-1", "work"), Namespace: ns},
				Data: map[string]string{"output": "not the output"}}
			Expect(k8sClient.Create(ctx, squatter)).To(Succeed())
			large := strings.Repeat("x", 3000)
			createScene(ctx, ns, "big", container("work", large), container("after", "{{ len .steps.work.output }}", "work"))
			createRun(ctx, ns, "big-1", "big", nil)

			run := finished(ctx, ns, "big-1")
			Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded), "%v", run.Status.Conditions)
			work := stepStatus(run, "work")
			Expect(work.Output.Ref).NotTo(BeNil())
			Expect(work.Output.Ref.ConfigMap).NotTo(Equal(squatter.Name))
			Expect(stepStatus(run, "after").Output.Preview).To(Equal("3000"))
			kept := &corev1.ConfigMap{}
			Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: work.Output.Ref.ConfigMap}, kept)).To(Succeed())
			Expect(kept.Data["output"]).To(Equal(large))
			expectNameTaken(run, squatter.Name)
			expectSquatterNamed(ctx, ns, "big-1", squatter)
		})

	It("a Run under a child Run's name does not stop the scene step: the child runs under another name", func(ctx SpecContext) {
		ns := newNamespace(ctx, echoLastArg)
		squatter := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: naming.ChildRunName("call-1", "callee", nil), Namespace: ns},
			Spec: ergonv1alpha1.RunSpec{SceneRef: corev1.LocalObjectReference{Name: "nowhere"}}}
		Expect(k8sClient.Create(ctx, squatter)).To(Succeed())
		createScene(ctx, ns, "callee", container("inner", "inner done"))
		createScene(ctx, ns, "caller", ergonv1alpha1.Step{Name: "call", Scene: &ergonv1alpha1.SceneCall{Name: "callee"}})
		createRun(ctx, ns, "call-1", "caller", nil)

		run := finished(ctx, ns, "call-1")
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded), "%v", run.Status.Conditions)
		call := stepStatus(run, "call")
		Expect(call.ChildRun).NotTo(Equal(squatter.Name))
		Expect(call.Output.Preview).To(Equal("inner done"))
		expectNameTaken(run, squatter.Name)
		expectSquatterNamed(ctx, ns, "call-1", squatter)
		Expect(getRun(ctx, ns, squatter.Name).Spec.Cancel).To(BeFalse())
	})

	It("a Gate under a gate step's Gate name does not stop the step: it waits on a Gate under another name", func(ctx SpecContext) {
		ns := newNamespace(ctx, echoLastArg)
		squatter := &ergonv1alpha1.Gate{ObjectMeta: metav1.ObjectMeta{Name: naming.GateName("ask-1", "approve"), Namespace: ns},
			Spec: ergonv1alpha1.GateSpec{RunRef: corev1.LocalObjectReference{Name: "ask-1"}, Step: "approve", Message: "mine"}}
		Expect(k8sClient.Create(ctx, squatter)).To(Succeed())
		createScene(ctx, ns, "ask", ergonv1alpha1.Step{Name: "approve", Gate: &ergonv1alpha1.GateStep{Message: "go?"}})
		createRun(ctx, ns, "ask-1", "ask", nil)

		var gate string
		Eventually(func(g Gomega) {
			_, approve := runStep(ctx, ns, "ask-1", "approve")
			g.Expect(approve.Phase).To(Equal(ergonv1alpha1.StepWaiting))
			g.Expect(approve.Gate).NotTo(BeEmpty())
			gate = approve.Gate
		}).Should(Succeed())
		Expect(gate).NotTo(Equal(squatter.Name))
		own := &ergonv1alpha1.Gate{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: gate}, own)).To(Succeed())
		Expect(own.Spec.Message).To(Equal("go?"))
		Consistently(func() ergonv1alpha1.StepPhase {
			_, approve := runStep(ctx, ns, "ask-1", "approve")
			return approve.Phase
		}, "1s").Should(Equal(ergonv1alpha1.StepWaiting))
		expectNameTaken(getRun(ctx, ns, "ask-1"), squatter.Name)
		expectSquatterNamed(ctx, ns, "ask-1", squatter)
	})
})

var _ = Describe("A schedule Trigger whose Run's name is taken", Serial, func() {
	It("starts the Run under another name, and names the Run that held the name", func(ctx SpecContext) {
		ns := newNamespace(ctx, nil)
		minute := nextMinute()
		squatter := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: naming.ScheduledRunName("squatted", minute), Namespace: ns},
			Spec: ergonv1alpha1.RunSpec{SceneRef: corev1.LocalObjectReference{Name: "nowhere"}}}
		Expect(k8sClient.Create(ctx, squatter)).To(Succeed())
		scheduleTrigger(ctx, ns, "squatted")
		Eventually(func(g Gomega) {
			g.Expect(getTrigger(ctx, ns, "squatted").Status.NextScheduleTime).NotTo(BeNil())
		}).Should(Succeed())

		setTriggerClock(minute.Add(time.Second))
		var started string
		Eventually(func(g Gomega) {
			runs := triggerRuns(ctx, ns, "squatted")
			g.Expect(runs).To(HaveLen(1))
			started = runs[0]
		}).Should(Succeed())
		Expect(started).NotTo(Equal(squatter.Name))
		run := getRun(ctx, ns, started)
		Expect(metav1.GetControllerOf(run).Kind).To(Equal("Trigger"))
		Eventually(func(g Gomega) {
			t := getTrigger(ctx, ns, "squatted")
			g.Expect(t.Status.LastRun).To(Equal(started))
			g.Expect(t.Status.Active).To(Equal([]string{started}))
			taken := meta.FindStatusCondition(t.Status.Conditions, ergonv1alpha1.ConditionNameTaken)
			g.Expect(taken).NotTo(BeNil())
			g.Expect(taken.Message).To(ContainSubstring(squatter.Name))
		}).Should(Succeed())
		expectSquatterNamed(ctx, ns, "squatted", squatter)
		Consistently(func() []string { return triggerRuns(ctx, ns, "squatted") }, "1s").Should(HaveLen(1))
	})
})
