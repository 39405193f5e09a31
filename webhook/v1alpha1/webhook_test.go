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

package v1alpha1

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

func newNamespace(ctx context.Context) string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "webhook-"}}
	Expect(k8sClient.Create(ctx, ns)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, ns))).To(Succeed()) })
	return ns.Name
}

func refused(err error, want ...string) {
	Expect(err).To(HaveOccurred(), "the API server accepted the object")
	Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want Invalid, got %v", err)
	for _, w := range want {
		Expect(err.Error()).To(ContainSubstring(w))
	}
}

func container(name string, command string, deps ...string) ergonv1alpha1.Step {
	return ergonv1alpha1.Step{Name: name, DependsOn: deps, Container: &ergonv1alpha1.ContainerStep{
		Image: "busybox:1.36", Command: []string{"sh", "-c", command}}}
}

func scene(name string, steps ...ergonv1alpha1.Step) ergonv1alpha1.Scene {
	s := ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: name}}
	s.Spec.Steps = steps
	return s
}

func callStep(name, scene string) ergonv1alpha1.Step {
	return ergonv1alpha1.Step{Name: name, Scene: &ergonv1alpha1.SceneCall{Name: ergonv1alpha1.SceneName(scene)}}
}

var _ = Describe("The admission webhooks", func() {
	It("refuse a Scene whose steps form a cycle, naming it", func(ctx SpecContext) {
		s := scene("loop", container("a", "x", "c"), container("b", "x", "a"), container("c", "x", "b"))
		s.Namespace = newNamespace(ctx)
		refused(k8sClient.Create(ctx, &s), "steps form a cycle: a -> c -> b -> a")
	})

	It("refuse a template naming a step that does not run before it", func(ctx SpecContext) {
		s := scene("early", container("a", "echo {{ .steps.b.output | shquote }}"), container("b", "x"))
		s.Namespace = newNamespace(ctx)
		refused(k8sClient.Create(ctx, &s), "spec.steps[0].container.command[2]", `references step "b"`)
	})

	It("refuse Scenes that call each other in a cycle, and warn about Scenes not there yet", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		b := scene("b", callStep("call-a", "a"))
		b.Namespace = ns
		Expect(k8sClient.Create(ctx, &b)).To(Succeed(), "Scene a does not exist yet: a warning, not an error")
		a := scene("a", callStep("call-b", "b"))
		a.Namespace = ns
		refused(k8sClient.Create(ctx, &a), "spec.steps[0].scene.name", "Scenes call each other in a cycle: a -> b -> a")
	})

	It("count what they refuse by kind and operation, and nothing they admit", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		refusals := func(op string) float64 { return testutil.ToFloat64(admissionRefusals.WithLabelValues("Scene", op)) }
		created, updated := refusals("CREATE"), refusals("UPDATE")
		good := scene("fine", container("a", "x"))
		good.Namespace = ns
		Expect(k8sClient.Create(ctx, &good)).To(Succeed())
		Expect(refusals("CREATE")).To(Equal(created), "an admitted Scene counted as refused")
		s := scene("loop", container("a", "x", "b"), container("b", "x", "a"))
		s.Namespace = ns
		refused(k8sClient.Create(ctx, &s), "steps form a cycle")
		Expect(refusals("CREATE")).To(Equal(created + 1))
		good.Spec.Steps = append(good.Spec.Steps, container("b", "x", "c"), container("c", "x", "b"))
		refused(k8sClient.Update(ctx, &good), "steps form a cycle")
		Expect(refusals("UPDATE")).To(Equal(updated + 1))
	})

	It("refuse a Trigger whose schedule does not parse, and one that leaves a required param unset", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		s := scene("report", container("a", `echo "$ERGON_PARAM_sprint"`))
		s.Spec.Params = []ergonv1alpha1.ParamSpec{{Name: "sprint"}}
		s.Namespace = ns
		Expect(k8sClient.Create(ctx, &s)).To(Succeed())
		trigger := func(name, cron string, params map[string]string) *ergonv1alpha1.Trigger {
			return &ergonv1alpha1.Trigger{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: ergonv1alpha1.TriggerSpec{
				SceneRef: corev1.LocalObjectReference{Name: "report"}, Params: params,
				Schedule: &ergonv1alpha1.ScheduleSource{Cron: cron}}}
		}
		refused(k8sClient.Create(ctx, trigger("bad-cron", "every monday", map[string]string{"sprint": "1"})),
			"spec.schedule.cron", "not a cron schedule")
		refused(k8sClient.Create(ctx, trigger("no-sprint", "@daily", nil)), "spec.params[sprint]: Required value")
		Expect(k8sClient.Create(ctx, trigger("good", "0 9 * * MON", map[string]string{"sprint": "43"}))).To(Succeed())
	})

	It("refuse a Run with params its Scene does not have, and accept one whose Scene is still to come", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		s := scene("greet", container("a", "echo hello {{ .params.who | shquote }}"))
		s.Spec.Params = []ergonv1alpha1.ParamSpec{{Name: "who"}}
		s.Namespace = ns
		Expect(k8sClient.Create(ctx, &s)).To(Succeed())

		run := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: "r1", Namespace: ns}, Spec: ergonv1alpha1.RunSpec{
			SceneRef: corev1.LocalObjectReference{Name: "greet"}, Params: map[string]string{"whom": "you"}}}
		refused(k8sClient.Create(ctx, run), `spec.params[whom]: Unsupported value: "whom"`, `spec.params[who]: Required value`)

		later := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: "r2", Namespace: ns}, Spec: ergonv1alpha1.RunSpec{
			SceneRef: corev1.LocalObjectReference{Name: "not-yet"}}}
		Expect(k8sClient.Create(ctx, later)).To(Succeed())
	})

	It("refuse a Run or a Trigger without a Scene's name with a field error, not an internal error", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		run := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: "nameless", Namespace: ns}}
		refused(k8sClient.Create(ctx, run), "spec.sceneRef.name: Required value", "sceneRef.name must name the Scene to run")
		trigger := &ergonv1alpha1.Trigger{ObjectMeta: metav1.ObjectMeta{Name: "nameless", Namespace: ns}, Spec: ergonv1alpha1.TriggerSpec{
			Schedule: &ergonv1alpha1.ScheduleSource{Cron: "@daily"}}}
		refused(k8sClient.Create(ctx, trigger), "spec.sceneRef.name: Required value")
	})
})
