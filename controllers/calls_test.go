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
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	runcontroller "github.com/ergon-dev/ergon/controllers/run"
	"github.com/ergon-dev/ergon/internal/cause"
	"github.com/ergon-dev/ergon/internal/naming"
)

// chainTrigger creates a runCompleted Trigger that starts a Run of scene whenever a Run of
// source ends, in any phase.
func chainTrigger(ctx context.Context, ns, name, source, scene string) {
	t := &ergonv1alpha1.Trigger{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: ergonv1alpha1.TriggerSpec{
			SceneRef: corev1.LocalObjectReference{Name: scene},
			RunCompleted: &ergonv1alpha1.RunCompletedSource{SceneRef: corev1.LocalObjectReference{Name: source},
				Phases: []ergonv1alpha1.RunPhase{ergonv1alpha1.RunSucceeded, ergonv1alpha1.RunFailed}},
		}}
	Expect(k8sClient.Create(ctx, t)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, t))).To(Succeed()) })
	Eventually(func(g Gomega) {
		ready := meta.FindStatusCondition(getTrigger(ctx, ns, name).Status.Conditions, ergonv1alpha1.ConditionReady)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Reason).To(Equal(ergonv1alpha1.ReasonWatching))
	}).Should(Succeed())
}

// runsIn lists every Run of the namespace.
func runsIn(ctx context.Context, ns string) []ergonv1alpha1.Run {
	list := &ergonv1alpha1.RunList{}
	Expect(k8sClient.List(ctx, list, client.InNamespace(ns))).To(Succeed())
	return list.Items
}

// limitReached is a Trigger's LimitReached condition, nil while it has none.
func limitReached(ctx context.Context, ns, trigger string) *metav1.Condition {
	return meta.FindStatusCondition(getTrigger(ctx, ns, trigger).Status.Conditions, ergonv1alpha1.ConditionLimitReached)
}

// withLimits runs the rest of the spec under a manager with the given cause caps, and the
// suite's manager again after it.
func withLimits(limits cause.Limits) {
	stopMgr()
	DeferCleanup(func() { stopMgr = startManager(suiteConfig()) })
	stop := startManager(runcontroller.RunConfig{EntrypointImage: "ergon/manager:test", MaxDepth: 3, Causes: limits})
	DeferCleanup(stop)
}

var _ = Describe("Call graphs", Serial, func() {
	BeforeEach(func() {
		ctx, cancel := context.WithCancel(context.Background())
		go testKubelet.run(ctx)
		DeferCleanup(cancel)
		// The Trigger controller's clock reads the real time, and stays there.
		triggerClock.SetTime(time.Now())
	})

	It("stop a cycle of runCompleted Triggers at the cause depth, with a condition and an Event naming the limit",
		func(ctx SpecContext) {
			ns := newNamespace(ctx, echoLastArg)
			createScene(ctx, ns, "ping", container("hit", "ping"))
			createScene(ctx, ns, "pong", container("hit", "pong"))
			// ping's end starts pong, pong's end starts ping: a cycle admission can only warn about.
			chainTrigger(ctx, ns, "to-pong", "ping", "pong")
			chainTrigger(ctx, ns, "to-ping", "pong", "ping")

			first := createRun(ctx, ns, "serve", "ping", nil)
			// serve (depth 0) → pong (1) → ping (2) → pong (3); the next ping would be 4, past 3.
			Eventually(func(g Gomega) {
				c := limitReached(ctx, ns, "to-ping")
				g.Expect(c).NotTo(BeNil())
				g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
				g.Expect(c.Reason).To(Equal(ergonv1alpha1.ReasonDepthExceeded))
				g.Expect(c.Message).To(ContainSubstring("nest deeper than 3"))
				g.Expect(c.Message).To(ContainSubstring(cause.FlagMaxDepth))
			}).WithTimeout(60 * time.Second).Should(Succeed())
			Expect(eventReasons(ctx, ns, "to-ping")).To(ContainElement(ergonv1alpha1.ReasonDepthExceeded))
			Consistently(func() int { return len(runsIn(ctx, ns)) }, "2s").Should(Equal(4))

			served := getRun(ctx, ns, first.Name)
			for _, run := range runsIn(ctx, ns) {
				if run.Name == first.Name {
					Expect(run.Annotations).NotTo(HaveKey(ergonv1alpha1.AnnotationCauseRoot), "a Run a person created is its own root")
					continue
				}
				Expect(run.Annotations).To(HaveKeyWithValue(ergonv1alpha1.AnnotationCauseRoot, cause.RootKey(served)))
			}
			// The ping that ended the chain is the one at depth 2; the pong after it, at depth 3, started nothing.
			Expect(limitReached(ctx, ns, "to-pong").Status).To(Equal(metav1.ConditionFalse))
		})

	It("fail a fan-out of sub-scenes past the child Runs cap, creating no child Run beyond it", func(ctx SpecContext) {
		withLimits(cause.Limits{MaxChildren: 3})
		ns := newNamespace(ctx, echoLastArg)
		createScene(ctx, ns, "leaf", container("work", "leaf"))
		createScene(ctx, ns, "fan", ergonv1alpha1.Step{Name: "each",
			ForEach: &ergonv1alpha1.ForEach{Items: &apiextensionsv1.JSON{Raw: []byte(`[0,1,2,3,4,5]`)}},
			Scene:   &ergonv1alpha1.SceneCall{Name: "leaf"}})
		createRun(ctx, ns, "wide", "fan", nil)
		run := finished(ctx, ns, "wide")
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunFailed))
		each := stepStatus(run, "each")
		Expect(each.Reason).To(Equal(ergonv1alpha1.ReasonInstanceFailed))
		Expect(each.Message).To(ContainSubstring("limit of child Runs per Run (3)"))
		Expect(each.Message).To(ContainSubstring(cause.FlagMaxChildren))
		Expect(each.Instances.Failures[0].Reason).To(Equal(ergonv1alpha1.ReasonChildRunsExceeded))
		Consistently(func() int {
			list := &ergonv1alpha1.RunList{}
			Expect(k8sClient.List(ctx, list, client.InNamespace(ns),
				client.MatchingLabels{ergonv1alpha1.LabelParentRun: "wide"})).To(Succeed())
			return len(list.Items)
		}, "1s").Should(Equal(3))
		child := getRun(ctx, ns, naming.UnitChildRunName("wide", "each", 0, 0))
		Expect(child.Annotations).To(HaveKeyWithValue(ergonv1alpha1.AnnotationDepth, "1"))
		Expect(child.Annotations).To(HaveKeyWithValue(ergonv1alpha1.AnnotationCauseRoot, cause.RootKey(run)))
	})

	It("fail a sub-scene step once its root has caused as many Runs as it may, whatever the path", func(ctx SpecContext) {
		withLimits(cause.Limits{MaxCaused: 2})
		ns := newNamespace(ctx, echoLastArg)
		createScene(ctx, ns, "leaf", container("work", "leaf"))
		createScene(ctx, ns, "other", container("work", "other"))
		// top calls mid, which calls leaf, then other: top causes mid and leaf, and other would be the third.
		createScene(ctx, ns, "mid", ergonv1alpha1.Step{Name: "call", Scene: &ergonv1alpha1.SceneCall{Name: "leaf"}})
		createScene(ctx, ns, "top",
			ergonv1alpha1.Step{Name: "one", Scene: &ergonv1alpha1.SceneCall{Name: "mid"}},
			ergonv1alpha1.Step{Name: "two", DependsOn: []string{"one"}, Scene: &ergonv1alpha1.SceneCall{Name: "other"}})
		createRun(ctx, ns, "top-1", "top", nil)
		run := finished(ctx, ns, "top-1")
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunFailed))
		two := stepStatus(run, "two")
		Expect(two.Reason).To(Equal(ergonv1alpha1.ReasonCausedRunsExceeded), two.Message)
		Expect(two.Message).To(ContainSubstring("limit of Runs one root may cause (2)"))
		Expect(two.Message).To(ContainSubstring(cause.FlagMaxCaused))
		Expect(runsIn(ctx, ns)).To(HaveLen(3))
	})

	It("refuse a burst of chained Runs past a Trigger's Runs per minute, and start the rest when the minute frees",
		func(ctx SpecContext) {
			withLimits(cause.Limits{MaxPerMinute: 3})
			ns := newNamespace(ctx, echoLastArg)
			createScene(ctx, ns, "src", container("work", "src"))
			createScene(ctx, ns, "dst", container("work", "dst"))
			chainTrigger(ctx, ns, "burst", "src", "dst")
			for i := range 5 {
				createRun(ctx, ns, fmt.Sprintf("src-%d", i), "src", nil)
			}
			for i := range 5 {
				finished(ctx, ns, fmt.Sprintf("src-%d", i))
			}
			Eventually(func(g Gomega) {
				c := limitReached(ctx, ns, "burst")
				g.Expect(c).NotTo(BeNil())
				g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
				g.Expect(c.Reason).To(Equal(ergonv1alpha1.ReasonRateLimited))
				g.Expect(c.Message).To(ContainSubstring("(3)"))
				g.Expect(c.Message).To(ContainSubstring(cause.FlagMaxPerMinute))
			}).Should(Succeed())
			Consistently(func() []string { return triggerRuns(ctx, ns, "burst") }, "2s").Should(HaveLen(3))
			Expect(eventReasons(ctx, ns, "burst")).To(ContainElement(ergonv1alpha1.ReasonRateLimited))

			// The two Runs that wait start once the minute frees.
			setTriggerClock(triggerClock.Now().Add(2 * time.Minute))
			Eventually(func() []string { return triggerRuns(ctx, ns, "burst") }).Should(HaveLen(5))
		})
})
