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
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/naming"
)

var _ = Describe("A Trigger's budget", Serial, func() {
	It("skips the Runs it would start once the Runs it created in the last day spent it, telling so once", func(ctx SpecContext) {
		kctx, stopKubelet := context.WithCancel(context.Background())
		DeferCleanup(stopKubelet)
		go testKubelet.run(kctx)
		ns := newNamespace(ctx, func(*corev1.Pod) outcome {
			return outcome{Output: "ok", Transcript: pricedTranscript(1, 300, 100, "0.02")}
		})
		scene := &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: ns}}
		scene.Spec.Params = []ergonv1alpha1.ParamSpec{{Name: "sprint"}}
		scene.Spec.Models = map[string]ergonv1alpha1.ModelSpec{"default": {BaseURL: "http://llm.models.svc/v1", Model: "small"}}
		scene.Spec.Steps = []ergonv1alpha1.Step{{Name: "think", Agent: &ergonv1alpha1.AgentStep{Prompt: "Think."}}}
		Expect(k8sClient.Create(ctx, scene)).To(Succeed())

		minute := nextMinute()
		scheduleTrigger(ctx, ns, "thrifty", func(t *ergonv1alpha1.Trigger) {
			t.Spec.Budget = &ergonv1alpha1.SceneBudget{CostPerDay: "0.02"}
			t.Spec.SuccessfulRunsHistoryLimit = new(int32(0)) // the budget keeps the day's Runs all the same
		})
		Eventually(func(g Gomega) {
			c := meta.FindStatusCondition(getTrigger(ctx, ns, "thrifty").Status.Conditions, ergonv1alpha1.ConditionBudgetExceeded)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		}).Should(Succeed())

		setTriggerClock(minute.Add(time.Second))
		first := naming.ScheduledRunName("thrifty", minute)
		Eventually(func() []string { return triggerRuns(ctx, ns, "thrifty") }).Should(Equal([]string{first}))
		Expect(finished(ctx, ns, first).Status.Usage.Cost).To(Equal("0.02"))
		Eventually(func(g Gomega) {
			c := meta.FindStatusCondition(getTrigger(ctx, ns, "thrifty").Status.Conditions, ergonv1alpha1.ConditionBudgetExceeded)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(c.Message).To(ContainSubstring("cost 0.02 in the last 24 hours, its budget.costPerDay is 0.02"))
		}).Should(Succeed())

		for i := 1; i <= 2; i++ {
			due := minute.Add(time.Duration(i) * time.Minute)
			setTriggerClock(due.Add(time.Second))
			Eventually(func() time.Time {
				if last := getTrigger(ctx, ns, "thrifty").Status.LastScheduleTime; last != nil {
					return last.Time
				}
				return time.Time{}
			}).
				Should(BeTemporally("==", due), "the due time is passed over")
			Consistently(func() []string { return triggerRuns(ctx, ns, "thrifty") }, "1s").Should(Equal([]string{first}),
				"no Run starts, and the finished one is kept beyond the history limit while it counts")
		}
		Expect(getTrigger(ctx, ns, "thrifty").Status.LastRun).To(Equal(first))
		count := func() int {
			n := 0
			for _, r := range eventReasons(ctx, ns, "thrifty") {
				if r == ergonv1alpha1.ReasonBudgetExceeded {
					n++
				}
			}
			return n
		}
		Eventually(count).Should(Equal(1))
		Consistently(count, "1s").Should(Equal(1), "told once per window, not at every due time")
	})
})
