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
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

// waitForReady does what `kubectl wait --for=condition=Ready scene/NAME --timeout=T` does:
// it polls the Scene until its Ready condition is True for its current generation, and fails
// when the timeout passes first.
func waitForReady(ctx context.Context, ns, name string, timeout time.Duration) error {
	var last *metav1.Condition
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		scene := &ergonv1alpha1.Scene{}
		if err := k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, scene); err != nil {
			return false, nil // as kubectl wait does, try again until the timeout
		}
		last = meta.FindStatusCondition(scene.Status.Conditions, ergonv1alpha1.ConditionReady)
		return last != nil && last.Status == metav1.ConditionTrue && last.ObservedGeneration == scene.Generation, nil
	})
	if err != nil && last != nil {
		return fmt.Errorf("%w: Ready is %s (%s: %s)", err, last.Status, last.Reason, last.Message)
	}
	return err
}

// sceneReady reads a Scene's Ready condition once it describes the Scene's generation.
func sceneReady(ctx context.Context, ns, name string) func(Gomega) *metav1.Condition {
	return func(g Gomega) *metav1.Condition {
		scene := &ergonv1alpha1.Scene{}
		g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, scene)).To(Succeed())
		g.Expect(scene.Status.ObservedGeneration).To(Equal(scene.Generation))
		ready := meta.FindStatusCondition(scene.Status.Conditions, ergonv1alpha1.ConditionReady)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.ObservedGeneration).To(Equal(scene.Generation))
		return ready
	}
}

func callStep(name, scene string) ergonv1alpha1.Step {
	return ergonv1alpha1.Step{Name: name, Scene: &ergonv1alpha1.SceneCall{Name: ergonv1alpha1.SceneName(scene)}}
}

var _ = Describe("The Scene controller", func() {
	It("makes kubectl wait --for=condition=Ready return for a good Scene and not for one calling a missing Scene", func(ctx SpecContext) {
		ns := newNamespace(ctx, nil)
		createScene(ctx, ns, "good", container("a", "echo {{ .params.who | shquote }}"), container("b", "b", "a"))
		editScene(ctx, ns, "good", func(s *ergonv1alpha1.Scene) {
			s.Spec.Params = []ergonv1alpha1.ParamSpec{{Name: "who", Default: new("me")}}
		})
		Expect(waitForReady(ctx, ns, "good", 10*time.Second)).To(Succeed())

		scene := &ergonv1alpha1.Scene{}
		Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "good"}, scene)).To(Succeed())
		Expect(scene.Status.StepCount).To(Equal(int32(2)))
		Expect(scene.Status.Params).To(Equal([]string{"who"}))
		Expect(scene.Status.Calls).To(BeEmpty())
		Expect(meta.FindStatusCondition(scene.Status.Conditions, ergonv1alpha1.ConditionReady).Reason).To(Equal(ergonv1alpha1.ReasonCompiled))

		createScene(ctx, ns, "caller", container("a", "a"), callStep("child", "callee"))
		err := waitForReady(ctx, ns, "caller", 3*time.Second)
		Expect(err).To(HaveOccurred(), "a Scene calling a missing Scene must not be Ready")
		Expect(wait.Interrupted(err)).To(BeTrue(), "it should time out, not fail: %v", err)
		Expect(err.Error()).To(ContainSubstring(ergonv1alpha1.ReasonSceneRefMissing))
		Expect(err.Error()).To(ContainSubstring(`"callee"`))

		// The callee appearing wakes the caller: the watch, not a periodic retry.
		createScene(ctx, ns, "callee", container("x", "x"))
		Expect(waitForReady(ctx, ns, "caller", 10*time.Second)).To(Succeed())
		Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "caller"}, scene)).To(Succeed())
		Expect(scene.Status.Calls).To(Equal([]string{"callee"}))

		// And the callee going makes it not Ready again.
		Expect(k8sClient.Delete(ctx, &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: "callee", Namespace: ns}})).To(Succeed())
		Eventually(func(g Gomega) string { return sceneReady(ctx, ns, "caller")(g).Reason }).
			Should(Equal(ergonv1alpha1.ReasonSceneRefMissing))
		Eventually(func() []string { return eventReasons(ctx, ns, "caller") }).
			Should(ContainElements(ergonv1alpha1.ReasonSceneRefMissing, ergonv1alpha1.ReasonCompiled))
	})

	It("reports a Scene that does not compile, naming the field, and Ready again once fixed", func(ctx SpecContext) {
		ns := newNamespace(ctx, nil)
		createScene(ctx, ns, "broken", container("a", "{{ .steps.nowhere.output }}"))
		Eventually(func(g Gomega) {
			ready := sceneReady(ctx, ns, "broken")(g)
			g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(ready.Reason).To(Equal(ergonv1alpha1.ReasonCompileFailed))
			g.Expect(ready.Message).To(ContainSubstring("spec.steps[0]"))
		}).Should(Succeed())
		Expect(waitForReady(ctx, ns, "broken", time.Second)).NotTo(Succeed())

		editScene(ctx, ns, "broken", func(s *ergonv1alpha1.Scene) { s.Spec.Steps[0].Container.Command = []string{"sh", "-c", "fixed"} })
		Expect(waitForReady(ctx, ns, "broken", 10*time.Second)).To(Succeed())
	})

	It("waits for the Workspace a Scene names", func(ctx SpecContext) {
		ns := newNamespace(ctx, nil)
		scene := &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: "in-workspace", Namespace: ns}}
		scene.Spec.Steps = []ergonv1alpha1.Step{container("a", "a")}
		scene.Spec.Workspace = &corev1.LocalObjectReference{Name: "desk"}
		Expect(k8sClient.Create(ctx, scene)).To(Succeed())
		Eventually(func(g Gomega) string { return sceneReady(ctx, ns, "in-workspace")(g).Reason }).
			Should(Equal(ergonv1alpha1.ReasonWorkspaceMissing))

		Expect(k8sClient.Create(ctx, newWorkspace(ns, "desk"))).To(Succeed())
		Expect(waitForReady(ctx, ns, "in-workspace", 10*time.Second)).To(Succeed())
	})
})
