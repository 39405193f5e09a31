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
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	triggercontroller "github.com/ergon-dev/ergon/controllers/trigger"
	"github.com/ergon-dev/ergon/internal/naming"
)

// triggerClock is the time of the Trigger controller in every manager the suite starts.
var triggerClock = clocktesting.NewFakeClock(time.Now())

// nextMinute sets the trigger clock to the real time, since Triggers are created at real
// times, and returns the next whole minute, at least five seconds away so a Trigger the test
// creates now surely exists before it. The trigger tests delete their Triggers, so moving the
// clock back disturbs none of them.
func nextMinute() time.Time {
	now := time.Now()
	minute := now.Truncate(time.Minute).Add(time.Minute)
	if minute.Sub(now) < 5*time.Second {
		time.Sleep(minute.Sub(now) + time.Second)
		now = time.Now()
		minute = minute.Add(time.Minute)
	}
	triggerClock.SetTime(now)
	return minute
}

// setTriggerClock moves the trigger clock forward to t.
func setTriggerClock(t time.Time) {
	Expect(t.After(triggerClock.Now())).To(BeTrue(), "the trigger clock only moves forward")
	triggerClock.SetTime(t)
}

// scheduleTrigger creates a Trigger that fires every minute.
func scheduleTrigger(ctx context.Context, ns, name string, edit ...func(*ergonv1alpha1.Trigger)) {
	t := &ergonv1alpha1.Trigger{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: ergonv1alpha1.TriggerSpec{
			SceneRef: corev1.LocalObjectReference{Name: "nightly"},
			Params:   map[string]string{"sprint": "43"},
			Schedule: &ergonv1alpha1.ScheduleSource{Cron: "* * * * *"},
		}}
	for _, e := range edit {
		e(t)
	}
	Expect(k8sClient.Create(ctx, t)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, t))).To(Succeed()) })
}

// triggerRuns lists the Runs a Trigger started, by name.
func triggerRuns(ctx context.Context, ns, trigger string) []string {
	list := &ergonv1alpha1.RunList{}
	Expect(k8sClient.List(ctx, list, client.InNamespace(ns),
		client.MatchingLabels{ergonv1alpha1.LabelTrigger: trigger})).To(Succeed())
	names := make([]string, 0, len(list.Items))
	for _, r := range list.Items {
		names = append(names, r.Name)
	}
	slices.Sort(names)
	return names
}

func getTrigger(ctx context.Context, ns, name string) *ergonv1alpha1.Trigger {
	t := &ergonv1alpha1.Trigger{}
	Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, t)).To(Succeed())
	return t
}

func getRun(ctx context.Context, ns, name string) *ergonv1alpha1.Run {
	r := &ergonv1alpha1.Run{}
	Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, r)).To(Succeed())
	return r
}

// eventReasons lists the reasons of the events about an object.
func eventReasons(ctx context.Context, ns, name string) []string {
	list := &eventsv1.EventList{}
	Expect(k8sClient.List(ctx, list, client.InNamespace(ns))).To(Succeed())
	var reasons []string
	for _, e := range list.Items {
		if e.Regarding.Name == name {
			reasons = append(reasons, e.Reason)
		}
	}
	return reasons
}

func cancelRun(ctx context.Context, ns, name string) {
	run := getRun(ctx, ns, name)
	patch := client.MergeFrom(run.DeepCopy())
	run.Spec.Cancel = true
	Expect(k8sClient.Patch(ctx, run, patch)).To(Succeed())
	Eventually(func() ergonv1alpha1.RunPhase { return getRun(ctx, ns, name).Status.Phase }).
		Should(Equal(ergonv1alpha1.RunCancelled))
}

// runningScene creates the Scene "nightly", whose one step pod the test kubelet keeps
// running, so the Runs of a Trigger stay active until they are cancelled.
func runningScene(ctx context.Context) string {
	kctx, stopKubelet := context.WithCancel(context.Background())
	DeferCleanup(stopKubelet)
	go testKubelet.run(kctx)
	ns := newNamespace(ctx, func(*corev1.Pod) outcome { return outcome{Stay: true} })
	scene := &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: ns}}
	scene.Spec.Params = []ergonv1alpha1.ParamSpec{{Name: "sprint"}}
	scene.Spec.Steps = []ergonv1alpha1.Step{container("wait", "sleep 3600")}
	Expect(k8sClient.Create(ctx, scene)).To(Succeed())
	return ns
}

var _ = Describe("Schedule Triggers", Serial, func() {
	// Unless a test creates it, no Scene "nightly" exists, so the Runs a schedule starts wait
	// for it and stay active.

	It("starts one Run per scheduled time, named by its unix minute, and says when the next is due", func(ctx SpecContext) {
		ns := newNamespace(ctx, nil)
		minute := nextMinute()
		scheduleTrigger(ctx, ns, "every-minute")

		Eventually(func(g Gomega) {
			t := getTrigger(ctx, ns, "every-minute")
			g.Expect(t.Status.NextScheduleTime).NotTo(BeNil())
			g.Expect(t.Status.NextScheduleTime.Time).To(BeTemporally("==", minute))
			ready := meta.FindStatusCondition(t.Status.Conditions, ergonv1alpha1.ConditionReady)
			g.Expect(ready).NotTo(BeNil())
			g.Expect(ready.Reason).To(Equal(ergonv1alpha1.ReasonScheduled))
		}).Should(Succeed())
		Consistently(func() []string { return triggerRuns(ctx, ns, "every-minute") }, "500ms").Should(BeEmpty())

		setTriggerClock(minute.Add(time.Second))
		first := naming.ScheduledRunName("every-minute", minute)
		Eventually(func() []string { return triggerRuns(ctx, ns, "every-minute") }).Should(Equal([]string{first}))
		run := getRun(ctx, ns, first)
		Expect(run.Spec.SceneRef.Name).To(Equal("nightly"))
		Expect(run.Spec.Params).To(Equal(map[string]string{"sprint": "43"}))
		Expect(run.Labels).To(HaveKeyWithValue(ergonv1alpha1.LabelManagedBy, ergonv1alpha1.ManagedByErgon))
		Expect(metav1.GetControllerOf(run)).NotTo(BeNil())
		Expect(metav1.GetControllerOf(run).Kind).To(Equal("Trigger"))
		Eventually(func(g Gomega) {
			t := getTrigger(ctx, ns, "every-minute")
			// Not written yet is a try that fails, not a nil dereference that ends the spec.
			g.Expect(t.Status.LastScheduleTime).NotTo(BeNil())
			g.Expect(t.Status.NextScheduleTime).NotTo(BeNil())
			g.Expect(t.Status.LastScheduleTime.Time).To(BeTemporally("==", minute))
			g.Expect(t.Status.NextScheduleTime.Time).To(BeTemporally("==", minute.Add(time.Minute)))
			g.Expect(t.Status.Active).To(Equal([]string{first}))
			g.Expect(t.Status.ActiveCount).To(BeEquivalentTo(1))
			g.Expect(t.Status.LastRun).To(Equal(first))
		}).Should(Succeed())

		// The controller requeued itself for the next minute; only the clock moves.
		setTriggerClock(minute.Add(time.Minute))
		second := naming.ScheduledRunName("every-minute", minute.Add(time.Minute))
		Eventually(func() []string { return triggerRuns(ctx, ns, "every-minute") }).Should(ConsistOf(first, second))
		Consistently(func() []string { return triggerRuns(ctx, ns, "every-minute") }, "1s").Should(HaveLen(2))
	})

	It("starts only the most recent of many missed times, and warns about more than 100", func(ctx SpecContext) {
		ns := newNamespace(ctx, nil)
		minute := nextMinute()
		scheduleTrigger(ctx, ns, "missed")
		Eventually(func() *metav1.Time { return getTrigger(ctx, ns, "missed").Status.NextScheduleTime }).ShouldNot(BeNil())

		// Three hours pass at once, as if the manager had been down.
		late := minute.Add(3*time.Hour + 20*time.Second)
		setTriggerClock(late)
		want := naming.ScheduledRunName("missed", minute.Add(3*time.Hour))
		Eventually(func() []string { return triggerRuns(ctx, ns, "missed") }).Should(Equal([]string{want}))
		Consistently(func() []string { return triggerRuns(ctx, ns, "missed") }, "1s").Should(HaveLen(1))
		Eventually(func() []string { return eventReasons(ctx, ns, "missed") }).Should(ContainElement(triggercontroller.EventTooManyMissed))
	})

	It("gives up a missed time past the starting deadline and starts the next on time", func(ctx SpecContext) {
		ns := newNamespace(ctx, nil)
		minute := nextMinute()
		scheduleTrigger(ctx, ns, "deadline", func(t *ergonv1alpha1.Trigger) {
			t.Spec.Schedule.StartingDeadlineSeconds = ptr.To[int64](30)
		})
		Eventually(func() *metav1.Time { return getTrigger(ctx, ns, "deadline").Status.NextScheduleTime }).ShouldNot(BeNil())

		setTriggerClock(minute.Add(45 * time.Second)) // 45s late for minute, deadline 30s
		Eventually(func(g Gomega) {
			next := getTrigger(ctx, ns, "deadline").Status.NextScheduleTime
			g.Expect(next).NotTo(BeNil())
			g.Expect(next.Time).To(BeTemporally("==", minute.Add(time.Minute)))
		}).Should(Succeed())
		Expect(triggerRuns(ctx, ns, "deadline")).To(BeEmpty())

		setTriggerClock(minute.Add(time.Minute + 10*time.Second)) // within the deadline
		Eventually(func() []string { return triggerRuns(ctx, ns, "deadline") }).
			Should(Equal([]string{naming.ScheduledRunName("deadline", minute.Add(time.Minute))}))
	})

	It("with Forbid, skips a time while a Run is active and starts it when that Run ends", func(ctx SpecContext) {
		ns := runningScene(ctx)
		minute := nextMinute()
		scheduleTrigger(ctx, ns, "forbid", func(t *ergonv1alpha1.Trigger) {
			t.Spec.Schedule.ConcurrencyPolicy = ergonv1alpha1.ForbidConcurrent
		})
		Eventually(func() *metav1.Time { return getTrigger(ctx, ns, "forbid").Status.NextScheduleTime }).ShouldNot(BeNil())
		first := naming.ScheduledRunName("forbid", minute)
		setTriggerClock(minute.Add(time.Second))
		Eventually(func() []string { return triggerRuns(ctx, ns, "forbid") }).Should(Equal([]string{first}))

		setTriggerClock(minute.Add(time.Minute + time.Second))
		Eventually(func() []string { return eventReasons(ctx, ns, "forbid") }).Should(ContainElement(triggercontroller.EventRunSkipped))
		Consistently(func() []string { return triggerRuns(ctx, ns, "forbid") }, "1s").Should(Equal([]string{first}))

		// The active Run ends; the owed time starts (no starting deadline), as in a CronJob.
		cancelRun(ctx, ns, first)
		second := naming.ScheduledRunName("forbid", minute.Add(time.Minute))
		Eventually(func() []string { return triggerRuns(ctx, ns, "forbid") }).Should(ConsistOf(first, second))
		Eventually(func(g Gomega) {
			t := getTrigger(ctx, ns, "forbid")
			g.Expect(t.Status.Active).To(Equal([]string{second}))
			g.Expect(t.Status.LastScheduleTime.Time).To(BeTemporally("==", minute.Add(time.Minute)))
		}).Should(Succeed())
	})

	It("with Replace, cancels the active Run and starts the new one", func(ctx SpecContext) {
		ns := runningScene(ctx)
		minute := nextMinute()
		scheduleTrigger(ctx, ns, "replace", func(t *ergonv1alpha1.Trigger) {
			t.Spec.Schedule.ConcurrencyPolicy = ergonv1alpha1.ReplaceConcurrent
		})
		Eventually(func() *metav1.Time { return getTrigger(ctx, ns, "replace").Status.NextScheduleTime }).ShouldNot(BeNil())
		first := naming.ScheduledRunName("replace", minute)
		setTriggerClock(minute.Add(time.Second))
		Eventually(func() []string { return triggerRuns(ctx, ns, "replace") }).Should(Equal([]string{first}))

		setTriggerClock(minute.Add(time.Minute + time.Second))
		second := naming.ScheduledRunName("replace", minute.Add(time.Minute))
		Eventually(func() []string { return triggerRuns(ctx, ns, "replace") }).Should(ConsistOf(first, second))
		Expect(getRun(ctx, ns, first).Spec.Cancel).To(BeTrue())
		Expect(getRun(ctx, ns, second).Spec.Cancel).To(BeFalse())
		Eventually(func() ergonv1alpha1.RunPhase { return getRun(ctx, ns, first).Status.Phase }).Should(Equal(ergonv1alpha1.RunCancelled))
		Eventually(func() []string { return getTrigger(ctx, ns, "replace").Status.Active }).Should(Equal([]string{second}))
	})

	It("starts nothing while suspended and says so", func(ctx SpecContext) {
		ns := newNamespace(ctx, nil)
		minute := nextMinute()
		scheduleTrigger(ctx, ns, "suspended", func(t *ergonv1alpha1.Trigger) { t.Spec.Suspend = new(true) })
		Eventually(func(g Gomega) {
			t := getTrigger(ctx, ns, "suspended")
			ready := meta.FindStatusCondition(t.Status.Conditions, ergonv1alpha1.ConditionReady)
			g.Expect(ready).NotTo(BeNil())
			g.Expect(ready.Status).To(Equal(metav1.ConditionTrue), "suspended is what the spec asks: Flux and Argo CD see it healthy")
			g.Expect(ready.Reason).To(Equal(ergonv1alpha1.ReasonSuspended))
			g.Expect(ready.ObservedGeneration).To(Equal(t.Generation))
			g.Expect(t.Status.NextScheduleTime).To(BeNil())
		}).Should(Succeed())
		setTriggerClock(minute.Add(time.Second))
		Consistently(func() []string { return triggerRuns(ctx, ns, "suspended") }, "1s").Should(BeEmpty())
	})

	It("keeps only as many finished Runs as the history limits say", func(ctx SpecContext) {
		kctx, stopKubelet := context.WithCancel(context.Background())
		DeferCleanup(stopKubelet)
		go testKubelet.run(kctx)
		ns := newNamespace(ctx, echoLastArg)
		createScene(ctx, ns, "nightly", container("only", "done"))
		minute := nextMinute()
		scheduleTrigger(ctx, ns, "history", func(t *ergonv1alpha1.Trigger) {
			t.Spec.Params = nil
			t.Spec.SuccessfulRunsHistoryLimit = ptr.To[int32](2)
		})
		Eventually(func() *metav1.Time { return getTrigger(ctx, ns, "history").Status.NextScheduleTime }).ShouldNot(BeNil())
		var names []string
		for i := range 4 {
			at := minute.Add(time.Duration(i) * time.Minute)
			setTriggerClock(at.Add(time.Second))
			name := naming.ScheduledRunName("history", at)
			names = append(names, name)
			Eventually(func() ergonv1alpha1.RunPhase {
				r := &ergonv1alpha1.Run{}
				if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, r); err != nil {
					return ""
				}
				return r.Status.Phase
			}).WithTimeout(20 * time.Second).Should(Equal(ergonv1alpha1.RunSucceeded))
		}
		Eventually(func() []string { return triggerRuns(ctx, ns, "history") }).Should(ConsistOf(names[2], names[3]))
		Eventually(func(g Gomega) {
			t := getTrigger(ctx, ns, "history")
			g.Expect(t.Status.LastSuccessfulTime).NotTo(BeNil())
			g.Expect(t.Status.Active).To(BeEmpty())
		}).Should(Succeed())
		Expect(eventReasons(ctx, ns, "history")).To(ContainElement(triggercontroller.EventRunDeleted))
	})
})
