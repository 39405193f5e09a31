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
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

// runNamed waits for a Run that matches and returns it.
func runNamed(ns string, match func(*ergonv1alpha1.Run) bool, what string) *ergonv1alpha1.Run {
	var found *ergonv1alpha1.Run
	Eventually(func(g Gomega) {
		var runs ergonv1alpha1.RunList
		g.Expect(admin.List(ctx, &runs, client.InNamespace(ns))).To(Succeed())
		found = nil
		for i := range runs.Items {
			if match(&runs.Items[i]) {
				found = &runs.Items[i]
			}
		}
		g.Expect(found).NotTo(BeNil(), what)
	}).WithTimeout(30 * time.Second).Should(Succeed())
	return found
}

var _ = Describe("Attacks on who is behind a Run", func() {
	It("self-approval through a Trigger: the Trigger's creator cannot approve the Runs it starts", func() {
		ns := newNamespace()
		mallory := userClient(ns, "mallory", roleEdit)
		bindRole(ns, "mallory", roleApprover)
		alice := userClient(ns, "alice", roleApprover)
		source := gateScene(ns, "build", ergonv1alpha1.GateStep{})
		target := gateScene(ns, "deploy", ergonv1alpha1.GateStep{ForbidSelfApproval: true})

		By("creating a Trigger that claims alice made it")
		trigger := &ergonv1alpha1.Trigger{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "deploy-after-build",
				Annotations: map[string]string{ergonv1alpha1.AnnotationCreator: "alice"}},
			Spec: ergonv1alpha1.TriggerSpec{SceneRef: corev1.LocalObjectReference{Name: target},
				RunCompleted: &ergonv1alpha1.RunCompletedSource{SceneRef: corev1.LocalObjectReference{Name: source}}},
		}
		Expect(mallory.Create(ctx, trigger)).To(Succeed())
		Expect(trigger.Annotations).To(HaveKeyWithValue(ergonv1alpha1.AnnotationCreator, "mallory"), "stamped from the request")
		By("rewriting the Trigger's creator afterwards")
		Expect(mallory.Patch(ctx, trigger, client.RawPatch(types.MergePatchType,
			[]byte(`{"metadata":{"annotations":{"ergon.dev/creator":"alice"}}}`)))).To(Succeed())
		Expect(trigger.Annotations).To(HaveKeyWithValue(ergonv1alpha1.AnnotationCreator, "mallory"), "the record never changes")

		By("letting a build Run succeed, so that the Trigger starts a deploy Run")
		startRun(mallory, ns, "build-1", source)
		Expect(decide(alice, gateOf(ns, "build-1"), "approve")).To(Succeed())
		deploy := runNamed(ns, func(r *ergonv1alpha1.Run) bool { return r.Spec.SceneRef.Name == target }, "a Run the Trigger starts")
		Expect(deploy.Annotations).To(HaveKeyWithValue(ergonv1alpha1.AnnotationCreatedBy, "mallory"))

		gate := gateOf(ns, deploy.Name)
		refusedWith(decide(mallory, gate, "approve"), "mallory created Run "+deploy.Name, "forbids self-approval")
		Expect(decide(alice, gate, "approve")).To(Succeed(), "another approver may")
	})

	It("self-approval through a child Run: the parent's creator cannot approve a sub-scene's Gate", func() {
		ns := newNamespace()
		mallory := userClient(ns, "mallory", roleEdit)
		bindRole(ns, "mallory", roleApprover)
		child := gateScene(ns, "release", ergonv1alpha1.GateStep{ForbidSelfApproval: true})
		Expect(admin.Create(ctx, &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ship"},
			Spec: ergonv1alpha1.SceneSpec{Steps: []ergonv1alpha1.Step{{Name: "release",
				Scene: &ergonv1alpha1.SceneCall{Name: ergonv1alpha1.SceneName(child)}}}}})).
			To(Succeed())
		startRun(mallory, ns, "ship-1", "ship")

		sub := runNamed(ns, func(r *ergonv1alpha1.Run) bool { return r.Spec.SceneRef.Name == child }, "the child Run")
		Expect(sub.Annotations).To(HaveKeyWithValue(ergonv1alpha1.AnnotationCreatedBy, "mallory"))
		Expect(sub.Annotations).To(HaveKeyWithValue(ergonv1alpha1.AnnotationDepth, "1"))
		refusedWith(decide(mallory, gateOf(ns, sub.Name), "approve"), "mallory created Run "+sub.Name, "forbids self-approval")
	})

	It("forged creator or depth: a tenant cannot set or change Ergon's annotations on a Run", func() {
		ns := newNamespace()
		mallory := userClient(ns, "mallory", roleEdit)
		creator := userClient(ns, "rita", roleRunCreator)
		scene := gateScene(ns, "deploy", ergonv1alpha1.GateStep{ForbidSelfApproval: true})
		annotated := func(name string, annotations map[string]string) *ergonv1alpha1.Run {
			return &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: annotations},
				Spec: ergonv1alpha1.RunSpec{SceneRef: corev1.LocalObjectReference{Name: scene}}}
		}

		By("creating a Run that claims alice created it")
		for c, user := range map[client.Client]string{mallory: "mallory", creator: "rita"} {
			run := annotated("claims-"+user, map[string]string{ergonv1alpha1.AnnotationCreatedBy: "alice"})
			Expect(c.Create(ctx, run)).To(Succeed())
			Expect(run.Annotations).To(HaveKeyWithValue(ergonv1alpha1.AnnotationCreatedBy, user), "stamped from the request")
		}
		By("creating a Run as deep as the limit, or with another reserved annotation")
		for _, key := range []string{ergonv1alpha1.AnnotationDepth, "ergon.dev/anything"} {
			refusedWith(mallory.Create(ctx, annotated("deep", map[string]string{key: "3"})),
				"metadata.annotations["+key+"]", "set by Ergon only")
			refusedWith(creator.Create(ctx, annotated("deep", map[string]string{key: "3"})), "set by Ergon only")
		}

		By("changing them on a Run of one's own")
		run := annotated("mine", nil)
		Expect(mallory.Create(ctx, run)).To(Succeed())
		for _, patch := range []string{
			`{"metadata":{"annotations":{"ergon.dev/created-by":"alice"}}}`,
			`{"metadata":{"annotations":{"ergon.dev/created-by":null}}}`,
			`{"metadata":{"annotations":{"ergon.dev/depth":"3"}}}`,
		} {
			refusedWith(mallory.Patch(ctx, run.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(patch))),
				"metadata.annotations[ergon.dev/", "never")
		}
		Expect(admin.Get(ctx, client.ObjectKeyFromObject(run), run)).To(Succeed())
		Expect(run.Annotations).To(HaveLen(2))
		Expect(run.Annotations).To(HaveKeyWithValue(ergonv1alpha1.AnnotationCreatedBy, "mallory"))
		Expect(run.Annotations).To(HaveKeyWithValue(ergonv1alpha1.AnnotationIdentity, ContainSubstring(`"username":"mallory"`)))
		Expect(mallory.Patch(ctx, run.DeepCopy(), client.RawPatch(types.MergePatchType,
			[]byte(`{"metadata":{"annotations":{"team":"payments"}}}`)))).To(Succeed(), "other annotations are the tenant's")
	})
})
