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
	"fmt"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	runcontroller "github.com/ergon-dev/ergon/controllers/run"
	"github.com/ergon-dev/ergon/internal/cause"
	"github.com/ergon-dev/ergon/internal/planner"
	"github.com/ergon-dev/ergon/internal/slots"
)

// heldByStatus is what the unfinished Runs of the cluster hold by their status, as a manager
// that starts now counts it: earlier specs may leave Runs running.
func heldByStatus(ctx context.Context) int {
	runs := &ergonv1alpha1.RunList{}
	Expect(k8sClient.List(ctx, runs)).To(Succeed())
	n := 0
	for i := range runs.Items {
		run := &runs.Items[i]
		if run.Status.Phase.Finished() {
			continue
		}
		units := planner.StatusUnits(&run.Status)
		if units > 0 && cause.Of(run).Depth > 0 {
			units-- // a child Run's first unit holds its caller's slot
		}
		n += units
	}
	return n
}

// endOthers cancels the Runs earlier specs left unfinished (envtest deletes no namespace's
// objects) and waits, up to half a minute, until they have ended: a Run of another spec that
// waits for a slot would otherwise take one this spec's Runs are meant to get.
func endOthers(ctx context.Context) {
	unfinished := func() []ergonv1alpha1.Run {
		runs := &ergonv1alpha1.RunList{}
		Expect(k8sClient.List(ctx, runs)).To(Succeed())
		return slices.DeleteFunc(runs.Items, func(r ergonv1alpha1.Run) bool { return r.Status.Phase.Finished() })
	}
	for _, run := range unfinished() {
		if run.Spec.Cancel {
			continue
		}
		patch := client.MergeFrom(run.DeepCopy())
		run.Spec.Cancel = true
		Expect(client.IgnoreNotFound(k8sClient.Patch(ctx, &run, patch))).To(Succeed())
	}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline) && len(unfinished()) > 0; {
		time.Sleep(200 * time.Millisecond)
	}
}

// withSlots runs the spec's Runs on a manager with these slot limits instead of the suite's.
func withSlots(limits slots.Limits) {
	stopMgr()
	DeferCleanup(func() { stopMgr = startManager(suiteConfig()) })
	DeferCleanup(startManager(runcontroller.RunConfig{EntrypointImage: "ergon/manager:test", MaxDepth: 3, Slots: limits}))
}

// runningPods counts the step pods of a namespace that have not ended, by Run.
func runningPods(ctx context.Context, g Gomega, ns string) map[string]int {
	pods := &corev1.PodList{}
	g.Expect(k8sClient.List(ctx, pods, client.InNamespace(ns), client.HasLabels{ergonv1alpha1.LabelAttempt})).To(Succeed())
	byRun := map[string]int{}
	for _, p := range pods.Items {
		if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed && p.DeletionTimestamp.IsZero() {
			byRun[p.Labels[ergonv1alpha1.LabelRun]]++
		}
	}
	return byRun
}

// after succeeds a pod once it has run for d.
func after(d time.Duration) script {
	return func(pod *corev1.Pod) outcome {
		if time.Since(pod.CreationTimestamp.Time) < d {
			return outcome{Stay: true}
		}
		return outcome{Output: "done"}
	}
}

var _ = Describe("The step pod slots", Serial, func() {
	BeforeEach(func() {
		kctx, cancel := context.WithCancel(context.Background())
		DeferCleanup(cancel)
		go testKubelet.run(kctx)
	})

	It("are not held by pods a tenant gives Ergon's labels", func(ctx SpecContext) {
		ns := newNamespace(ctx, func(*corev1.Pod) outcome { return outcome{Stay: true} })
		// A total the allocator counts against. What it counts is read from its metrics, not
		// from a room of one slot: earlier specs' Runs (a retry coming due) may take a slot.
		withSlots(slots.Limits{Total: 1000})

		// A tenant's pods that look like running step pods in every label.
		flood := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "flood-"}}
		Expect(k8sClient.Create(ctx, flood)).To(Succeed())
		for i := range 20 {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: flood.Name, Name: fmt.Sprintf("fake-%d", i),
				Labels: map[string]string{ergonv1alpha1.LabelManagedBy: ergonv1alpha1.ManagedByErgon,
					ergonv1alpha1.LabelRun: "r", ergonv1alpha1.LabelStep: "s", ergonv1alpha1.LabelAttempt: "1"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "step", Image: "busybox:test"}}}}
			Expect(k8sClient.Create(ctx, pod)).To(Succeed())
		}

		createScene(ctx, ns, "one", container("only", "sleep 3600"))
		createRun(ctx, ns, "victim", "one", nil)
		Eventually(func(g Gomega) {
			run := &ergonv1alpha1.Run{}
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "victim"}, run)).To(Succeed())
			g.Expect(run.Status.Steps).To(ContainElement(And(HaveField("Name", "only"),
				HaveField("Phase", ergonv1alpha1.StepRunning), HaveField("PodName", Not(BeEmpty())))))
		}).Should(Succeed(), "the Run starts its pod")
		Expect(queueGauge("ergon_queue_slots_held", flood.Name)).To(BeNumerically("<=", 0), "the flood holds no slot")
		Expect(queueGauge("ergon_queue_slots_held", ns)).To(Equal(1.0), "the Run holds its one")
	})

	It("bound a Run's fan-out by the per-Run and per-namespace limits, and say which one binds", func(ctx SpecContext) {
		ns := newNamespace(ctx, after(time.Second))
		withSlots(slots.Limits{PerNamespace: 3, PerRun: 2})
		createScene(ctx, ns, "fan", fanOut(container("each", "echo {{ .item }}"), 0, 1, 2, 3, 4, 5, 6))
		createRun(ctx, ns, "first", "fan", nil)
		createRun(ctx, ns, "second", "fan", nil)

		most, said := map[string]int{}, ""
		Eventually(func(g Gomega) {
			byRun := runningPods(ctx, g, ns)
			total := 0
			for name, n := range byRun {
				most[name] = max(most[name], n)
				total += n
			}
			Expect(total).To(BeNumerically("<=", 3), "the namespace's pods at once: %v", byRun)
			for name, n := range byRun {
				Expect(n).To(BeNumerically("<=", 2), "Run %s's pods at once", name)
			}
			for _, name := range []string{"first", "second"} {
				run := &ergonv1alpha1.Run{}
				g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, run)).To(Succeed())
				for _, s := range run.Status.Steps {
					if s.Reason == ergonv1alpha1.ReasonWaitingForSlot && said == "" {
						said = s.Message
					}
				}
				g.Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded))
			}
		}).WithTimeout(60 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
		Expect(said).To(MatchRegexp(`instances? waits? for a step pod slot: (the Run holds 2 of 2 \(--max-step-pods-per-run\)|` +
			`namespace \S+ holds 3 of 3 \(--max-step-pods-per-namespace\))`))
		Expect(most).To(HaveKeyWithValue("first", 2), "the limits allow each Run 2 at some moment")
	})

	It("give a Run in another namespace a slot while a busy namespace holds every slot it can get", func(ctx SpecContext) {
		endOthers(ctx)
		busy := newNamespace(ctx, after(2*time.Second))
		small := newNamespace(ctx, echoLastArg)
		held := heldByStatus(ctx)
		withSlots(slots.Limits{Total: held + 4, PerNamespace: 4, PerRun: 4})

		items := make([]any, 40)
		for i := range items {
			items[i] = i
		}
		createScene(ctx, busy, "many", fanOut(container("each", "echo {{ .item }}"), 0, items...))
		for i := range 3 {
			createRun(ctx, busy, fmt.Sprintf("big-%d", i), "many", nil)
		}
		// The busy namespace holds what it can (4, fewer when a Run an earlier spec left takes a
		// slot meanwhile) and has units waiting.
		Eventually(func(g Gomega) {
			g.Expect(runningPods(ctx, g, busy)).To(WithTransform(func(m map[string]int) int {
				n := 0
				for _, v := range m {
					n += v
				}
				return n
			}, BeNumerically(">=", 1)))
			g.Expect(queueGauge("ergon_queue_units_waiting", busy)).To(BeNumerically(">", 0))
		}).WithTimeout(20*time.Second).Should(Succeed(), "the busy namespace holds every slot it can get")

		createScene(ctx, small, "chain", container("a", "echo a"), container("b", "echo b", "a"), container("c", "echo c", "b"))
		createRun(ctx, small, "chain", "chain", nil)
		run := &ergonv1alpha1.Run{}
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: small, Name: "chain"}, run)).To(Succeed())
			g.Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded))
		}).WithTimeout(15*time.Second).Should(Succeed(), "the small Run gets a slot as the busy namespace's pods end "+
			"(every 2 s), woken, not at its 30 s retry: %+v", run.Status.Steps)

		busyRun := &ergonv1alpha1.Run{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: busy, Name: "big-0"}, busyRun)).To(Succeed())
		Expect(busyRun.Status.Phase.Finished()).To(BeFalse(), "the busy namespace still has work queued when the small Run ends")

		// The metrics show the busy namespace's slots and queue.
		Expect(queueGauge("ergon_queue_slots_held", busy)).To(BeNumerically(">", 0))
		Expect(queueGauge("ergon_queue_units_waiting", busy)).To(BeNumerically(">", 0))
		Expect(queueGauge("ergon_queue_slot_limit", "namespace")).To(Equal(4.0))
	})
})

var _ = Describe("The step pod slots after a restart", Serial, func() {
	It("still count what the Runs' status holds, so a new manager grants no slot twice", func(ctx SpecContext) {
		kctx, cancel := context.WithCancel(context.Background())
		DeferCleanup(cancel)
		go testKubelet.run(kctx)
		// The namespace's limit, not the total, is what the late Run meets: Runs that earlier
		// specs left take and free slots of the total meanwhile, never of this namespace.
		holder := newNamespace(ctx, func(*corev1.Pod) outcome { return outcome{Stay: true} })
		limits := slots.Limits{Total: 1000, PerNamespace: 2, PerRun: 2}
		stopMgr()
		DeferCleanup(func() { stopMgr = startManager(suiteConfig()) })
		first := startManager(runcontroller.RunConfig{EntrypointImage: "ergon/manager:test", MaxDepth: 3, Slots: limits})
		createScene(ctx, holder, "fan", fanOut(container("each", "echo {{ .item }}"), 0, 1, 2, 3))
		createRun(ctx, holder, "holder", "fan", nil)
		Eventually(func(g Gomega) {
			g.Expect(runningPods(ctx, g, holder)).To(HaveKeyWithValue("holder", 2))
			run := &ergonv1alpha1.Run{}
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: holder, Name: "holder"}, run)).To(Succeed())
			g.Expect(planner.StatusUnits(&run.Status)).To(Equal(2))
		}).WithTimeout(20 * time.Second).Should(Succeed())
		first()

		DeferCleanup(startManager(runcontroller.RunConfig{EntrypointImage: "ergon/manager:test", MaxDepth: 3, Slots: limits}))
		createScene(ctx, holder, "one", container("only", "echo hi"))
		createRun(ctx, holder, "late", "one", nil)
		Eventually(func(g Gomega) {
			run := &ergonv1alpha1.Run{}
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: holder, Name: "late"}, run)).To(Succeed())
			g.Expect(run.Status.Steps).To(ContainElement(And(HaveField("Name", "only"),
				HaveField("Reason", ergonv1alpha1.ReasonWaitingForSlot),
				HaveField("Message", ContainSubstring("(--max-step-pods-per-namespace)")))))
		}).WithTimeout(20*time.Second).Should(Succeed(), "the new manager counts the slots the first one granted")
		Consistently(func(g Gomega) {
			g.Expect(runningPods(ctx, g, holder)).To(Equal(map[string]int{"holder": 2}))
		}).WithTimeout(2 * time.Second).Should(Succeed())
	})
})

// queueGauge reads one ergon_queue_* gauge from the manager's metrics, by its one label.
func queueGauge(name, label string) float64 {
	families, err := metrics.Registry.Gather()
	Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if m.GetLabel()[0].GetValue() == label {
				return m.GetGauge().GetValue()
			}
		}
	}
	return -1
}

func TestTheCacheKeepsWholeOnlyWhatARunControls(t *testing.T) {
	owned := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "out", OwnerReferences: []metav1.OwnerReference{{
		APIVersion: ergonv1alpha1.GroupVersion.String(), Kind: "Run", Name: "r", UID: "u", Controller: new(true)}}},
		Data: map[string]string{"output": "kept"}}
	notController := owned.DeepCopy()
	notController.OwnerReferences[0].Controller = nil
	otherKind := owned.DeepCopy()
	otherKind.OwnerReferences[0].Kind = "Job"
	labelled := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "fake", Namespace: "ns", UID: "p",
		Labels:      map[string]string{ergonv1alpha1.LabelManagedBy: ergonv1alpha1.ManagedByErgon},
		Annotations: map[string]string{"big": string(make([]byte, 100<<10))}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}}}
	cases := []struct {
		name  string
		obj   client.Object
		whole bool
	}{
		{"a ConfigMap a Run controls is kept whole", owned, true},
		{"one a Run owns but does not control is cut", notController, false},
		{"one another kind controls is cut", otherKind, false},
		{"a pod that only carries the label is cut", labelled, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := keepRunControlled(tc.obj)
			if err != nil {
				t.Fatal(err)
			}
			o := got.(client.Object)
			if o.GetName() != tc.obj.GetName() || o.GetUID() != tc.obj.GetUID() {
				t.Fatalf("the cut object lost its identity: %s/%s", o.GetName(), o.GetUID())
			}
			whole := len(o.GetOwnerReferences()) > 0 || len(o.GetLabels()) > 0
			if whole != tc.whole {
				t.Fatalf("kept whole = %v, want %v: %+v", whole, tc.whole, o)
			}
			if !tc.whole {
				switch c := got.(type) {
				case *corev1.ConfigMap:
					if len(c.Data) > 0 {
						t.Fatal("the cut ConfigMap kept its data")
					}
				case *corev1.Pod:
					if len(c.Spec.Containers) > 0 || len(c.Annotations) > 0 {
						t.Fatal("the cut pod kept its spec or annotations")
					}
				}
			}
		})
	}
}
