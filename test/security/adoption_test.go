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
	"io"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/naming"
	"github.com/ergon-dev/ergon/internal/outputs/wire"
)

// Item 5 of the hardening issue: no object is adopted by name. Ergon's names are
// deterministic, so a tenant who may create objects in the victim's namespace can create one
// under the name the victim's Run is about to use. The Run must never use it: it names the object
// in its NameTaken condition and does its work under a name it owns (or, where an object cannot
// move, the step fails naming it), and the tenant's object is left alone.

func containerStep(name string, deps ...string) ergonv1alpha1.Step {
	return ergonv1alpha1.Step{Name: name, DependsOn: deps, Container: &ergonv1alpha1.ContainerStep{
		Image: "busybox:test", Command: []string{"sh", "-c", "echo ok"},
	}}
}

func createScene(c client.Client, ns, name string, steps ...ergonv1alpha1.Step) {
	scene := &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	scene.Spec.Steps = steps
	Expect(c.Create(ctx, scene)).To(Succeed())
}

func createRun(c client.Client, ns, name, scene string) *ergonv1alpha1.Run {
	run := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: ergonv1alpha1.RunSpec{SceneRef: corev1.LocalObjectReference{Name: scene}}}
	Expect(c.Create(ctx, run)).To(Succeed())
	return run
}

// stepStatus waits until the Run records a step that satisfies match, and returns it.
func stepStatus(ns, run, step string, match func(ergonv1alpha1.StepStatus) bool) ergonv1alpha1.StepStatus {
	var found ergonv1alpha1.StepStatus
	Eventually(func(g Gomega) {
		r := &ergonv1alpha1.Run{}
		g.Expect(admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: run}, r)).To(Succeed())
		for _, s := range r.Status.Steps {
			if s.Name == step {
				found = s
			}
		}
		g.Expect(found.Name).To(Equal(step), "Run %s records step %s", run, step)
		g.Expect(match(found)).To(BeTrue(), "step %s of Run %s is %s (%s: %s)", step, run, found.Phase, found.Reason, found.Message)
	}).WithTimeout(20 * time.Second).Should(Succeed())
	return found
}

// expectNameTaken waits until the Run's NameTaken condition names the object that held a name.
func expectNameTaken(ns, run, name string) {
	Eventually(func(g Gomega) {
		r := &ergonv1alpha1.Run{}
		g.Expect(admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: run}, r)).To(Succeed())
		c := meta.FindStatusCondition(r.Status.Conditions, ergonv1alpha1.ConditionNameTaken)
		g.Expect(c).NotTo(BeNil(), "Run %s has condition NameTaken", run)
		g.Expect(c.Message).To(ContainSubstring(name))
	}).WithTimeout(20 * time.Second).Should(Succeed())
}

func failedForConflict(s ergonv1alpha1.StepStatus) bool {
	return s.Phase == ergonv1alpha1.StepFailed && s.Reason == ergonv1alpha1.ReasonNameConflict
}

// impostorPod is a pod that looks like a step pod in every label.
func impostorPod(ns, name, run, step string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{
			ergonv1alpha1.LabelManagedBy: ergonv1alpha1.ManagedByErgon, ergonv1alpha1.LabelRun: run,
			ergonv1alpha1.LabelStep: step, ergonv1alpha1.LabelAttempt: "1",
		}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "step", Image: "mallory/forger"}}},
	}
}

// succeedPod plays the kubelet: the step pod ends Succeeded and hands back output inline in
// its termination message, as Ergon's entrypoint does for outputs up to 2 KiB.
func succeedPod(ns, name, output string) {
	msg, err := wire.Write(io.Discard, []byte(output), 0)
	Expect(err).NotTo(HaveOccurred())
	Eventually(func() error {
		pod := &corev1.Pod{}
		if err := admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pod); err != nil {
			return err
		}
		now := metav1.Now()
		pod.Status.Phase = corev1.PodSucceeded
		pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "step", State: corev1.ContainerState{
			Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Message: string(msg), StartedAt: now, FinishedAt: now},
		}}}
		return admin.Status().Update(ctx, pod)
	}).Should(Succeed())
}

var _ = Describe("Adoption by name (issue item 5)", func() {
	var ns string
	var mallory, victim client.Client
	BeforeEach(func() {
		ns = newNamespace()
		mallory = userClient(ns, "mallory", roleEdit)
		victim = userClient(ns, "victoria", roleErgonEditor)
	})

	It("does not adopt a step pod a tenant created under the attempt's name, and leaves it alone", func() {
		createScene(victim, ns, "build", containerStep("work"))
		name := naming.StepPodName("nightly", "work", 1)
		forged := impostorPod(ns, name, "nightly", "work")
		Expect(mallory.Create(ctx, forged)).To(Succeed(), "edit may create pods")

		createRun(victim, ns, "nightly", "build")
		s := stepStatus(ns, "nightly", "work", func(s ergonv1alpha1.StepStatus) bool { return s.PodName != "" && s.PodName != name })
		own := &corev1.Pod{}
		Expect(admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: s.PodName}, own)).To(Succeed())
		Expect(own.OwnerReferences).To(ConsistOf(HaveField("Name", "nightly")), "the attempt runs under a name the Run owns")
		expectNameTaken(ns, "nightly", name)

		pod := &corev1.Pod{}
		Expect(admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pod)).To(Succeed(), "the manager does not delete it")
		Expect(pod.UID).To(Equal(forged.UID))
		Expect(pod.OwnerReferences).To(BeEmpty(), "the manager does not take it over")
		Consistently(func() []metav1.OwnerReference {
			_ = admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pod)
			return pod.OwnerReferences
		}).WithTimeout(2 * time.Second).Should(BeEmpty())
	})

	It("does not use a child Run a tenant created under the child's name", func() {
		createScene(victim, ns, "leaf", containerStep("work"))
		createScene(victim, ns, "tree", ergonv1alpha1.Step{Name: "call", Scene: &ergonv1alpha1.SceneCall{Name: "leaf"}})
		name := naming.ChildRunName("root", "leaf", nil)
		createRun(mallory, ns, name, "leaf")

		createRun(victim, ns, "root", "tree")
		s := stepStatus(ns, "root", "call", func(s ergonv1alpha1.StepStatus) bool { return s.ChildRun != "" && s.ChildRun != name })
		own := &ergonv1alpha1.Run{}
		Expect(admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: s.ChildRun}, own)).To(Succeed())
		Expect(own.OwnerReferences).To(ConsistOf(HaveField("Name", "root")), "the call runs under a name the Run owns")
		expectNameTaken(ns, "root", name)

		child := &ergonv1alpha1.Run{}
		Expect(admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, child)).To(Succeed())
		Expect(child.OwnerReferences).To(BeEmpty(), "the tenant's Run is not taken over")
		Expect(child.Spec.Cancel).To(BeFalse(), "the tenant's Run is not cancelled")
	})

	It("does not wait on a Gate someone else created under the Gate's name", func() {
		createScene(victim, ns, "ask", ergonv1alpha1.Step{Name: "review",
			Gate: &ergonv1alpha1.GateStep{Options: []string{"approve", "reject"}}})
		name := naming.GateName("ask-1", "review")
		gate := &ergonv1alpha1.Gate{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: ergonv1alpha1.GateSpec{RunRef: corev1.LocalObjectReference{Name: "ask-1"}, Step: "review",
				Options: []string{"approve", "reject"}}}
		err := mallory.Create(ctx, gate)
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "edit may not create Gates: %v", err)
		// Someone who may (a cluster admin, another controller) still does not decide this Run.
		if err := admin.Create(ctx, gate); err != nil {
			// Admission may refuse Gates from anyone but the manager; then the Run creates its
			// own Gate and waits on it.
			createRun(victim, ns, "ask-1", "ask")
			stepStatus(ns, "ask-1", "review", func(s ergonv1alpha1.StepStatus) bool {
				return s.Phase == ergonv1alpha1.StepWaiting && s.Gate == name
			})
			Eventually(func(g Gomega) {
				g.Expect(admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, gate)).To(Succeed())
				g.Expect(gate.OwnerReferences).To(ConsistOf(HaveField("Name", "ask-1")))
			}).Should(Succeed())
			return
		}
		createRun(victim, ns, "ask-1", "ask")
		s := stepStatus(ns, "ask-1", "review", failedForConflict)
		Expect(s.Message).To(ContainSubstring(name))
	})

	It("does not use an output ConfigMap a tenant created under the output's name", func() {
		createScene(victim, ns, "report", containerStep("draft"), containerStep("publish", "draft"))
		name := naming.OutputConfigMapName("weekly", "draft")
		Expect(mallory.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
			Labels: map[string]string{ergonv1alpha1.LabelManagedBy: ergonv1alpha1.ManagedByErgon}},
			Data: map[string]string{"output": "forged"}})).To(Succeed())

		createRun(victim, ns, "weekly", "report")
		running := stepStatus(ns, "weekly", "draft", func(s ergonv1alpha1.StepStatus) bool { return s.PodName != "" })
		// An output larger than the status preview is kept in the output ConfigMap.
		succeedPod(ns, running.PodName, strings.Repeat("real ", 300))

		s := stepStatus(ns, "weekly", "draft", func(s ergonv1alpha1.StepStatus) bool {
			return s.Phase == ergonv1alpha1.StepSucceeded
		})
		Expect(s.Output).NotTo(BeNil())
		Expect(s.Output.Ref).NotTo(BeNil())
		Expect(s.Output.Ref.ConfigMap).NotTo(Equal(name), "the output is kept under a name the Run owns")
		expectNameTaken(ns, "weekly", name)
		forged := &corev1.ConfigMap{}
		Expect(admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, forged)).To(Succeed())
		Expect(forged.Data).To(Equal(map[string]string{"output": "forged"}), "the tenant's ConfigMap is left alone")
		stepStatus(ns, "weekly", "publish", func(s ergonv1alpha1.StepStatus) bool { return s.PodName != "" })
	})

	It("does not use an output ConfigMap replaced after the step wrote it, even one that claims the Run as owner", func() {
		createScene(victim, ns, "report", containerStep("draft"),
			ergonv1alpha1.Step{Name: "hold", DependsOn: []string{"draft"},
				Gate: &ergonv1alpha1.GateStep{Options: []string{"go"}, Timeout: &metav1.Duration{Duration: 8 * time.Second}, OnTimeout: "go"}},
			containerStep("publish", "draft", "hold"))
		run := createRun(victim, ns, "weekly-2", "report")
		running := stepStatus(ns, "weekly-2", "draft", func(s ergonv1alpha1.StepStatus) bool { return s.PodName != "" })
		succeedPod(ns, running.PodName, strings.Repeat("real ", 300))
		written := stepStatus(ns, "weekly-2", "draft", func(s ergonv1alpha1.StepStatus) bool {
			return s.Phase == ergonv1alpha1.StepSucceeded
		})
		Expect(written.Output.Ref).NotTo(BeNil())

		// While the gate holds the Run, the tenant tries to swap the ConfigMap for one of the same
		// name whose owner reference claims the Run. The admission policy refuses the tenant;
		// where it is not installed, the tenant could (the administrator plays them), and with
		// the internal label too: only the recorded size and digest tell them apart.
		name := written.Output.Ref.ConfigMap
		Expect(admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "weekly-2"}, run)).To(Succeed())
		err := mallory.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "the tenant may not delete the Run's output: %v", err)
		Expect(admin.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})).To(Succeed())
		Expect(admin.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
			Labels: map[string]string{ergonv1alpha1.LabelManagedBy: ergonv1alpha1.ManagedByErgon, ergonv1alpha1.LabelInternal: "true"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: ergonv1alpha1.GroupVersion.String(), Kind: "Run",
				Name: run.Name, UID: run.UID, Controller: new(true)}}},
			Data: map[string]string{"output": strings.Repeat("fake ", 300)}})).To(Succeed())

		s := stepStatus(ns, "weekly-2", "publish", failedForConflict) // once the gate times out
		Expect(s.Message).To(ContainSubstring(name))
		Expect(s.Message).To(ContainSubstring("does not hold the output"))
	})

	It("does not start from a Scene snapshot ConfigMap a tenant created under the snapshot's name", func() {
		// A Scene too large for the Run's status is snapshotted into a ConfigMap.
		padding := strings.Repeat("x", 30<<10)
		big := func(name string, deps ...string) ergonv1alpha1.Step {
			s := containerStep(name, deps...)
			s.Container.Command = []string{"sh", "-c", "# " + padding}
			return s
		}
		createScene(victim, ns, "large", big("a"), big("b", "a"), big("c", "b"))
		name := naming.SnapshotConfigMapName("large-1")
		Expect(mallory.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
			Labels: map[string]string{ergonv1alpha1.LabelManagedBy: ergonv1alpha1.ManagedByErgon}},
			Data: map[string]string{"scene.json": `{"steps":[{"name":"evil","container":{"image":"mallory/x","command":["steal"]}}]}`}})).
			To(Succeed())

		createRun(victim, ns, "large-1", "large")
		Eventually(func(g Gomega) {
			run := &ergonv1alpha1.Run{}
			g.Expect(admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "large-1"}, run)).To(Succeed())
			g.Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunFailed))
			c := meta.FindStatusCondition(run.Status.Conditions, ergonv1alpha1.ConditionSucceeded)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal(ergonv1alpha1.ReasonNameConflict))
			g.Expect(c.Message).To(ContainSubstring(name))
		}).WithTimeout(20 * time.Second).Should(Succeed())
		pods := &corev1.PodList{}
		Expect(admin.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{ergonv1alpha1.LabelRun: "large-1"})).To(Succeed())
		Expect(pods.Items).To(BeEmpty(), "nothing of the forged Scene runs")
	})

	It("gives Run a-b step c and Run a step b-c two names, and each Run its own pod", func() {
		createScene(victim, ns, "one", containerStep("c"))
		createScene(victim, ns, "two", containerStep("b-c"))
		createRun(victim, ns, "a-b", "one")
		createRun(victim, ns, "a", "two")
		first := stepStatus(ns, "a-b", "c", func(s ergonv1alpha1.StepStatus) bool { return s.PodName != "" })
		second := stepStatus(ns, "a", "b-c", func(s ergonv1alpha1.StepStatus) bool { return s.PodName != "" })
		Expect(first.PodName).NotTo(Equal(second.PodName))
		for run, pod := range map[string]string{"a-b": first.PodName, "a": second.PodName} {
			p := &corev1.Pod{}
			Eventually(func() error { return admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: pod}, p) }).Should(Succeed())
			Expect(p.OwnerReferences).To(ConsistOf(HaveField("Name", run)))
		}
		Consistently(func() ergonv1alpha1.StepPhase {
			return stepStatus(ns, "a", "b-c", func(ergonv1alpha1.StepStatus) bool { return true }).Phase
		}).WithTimeout(2*time.Second).Should(Equal(ergonv1alpha1.StepPending),
			"no kubelet runs here: the Run's own pod waits to start, and nothing fails with NameConflict")
	})
})
