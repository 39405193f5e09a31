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
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

var _ = Describe("The step pod budget", Serial, func() {
	It("is not held by pods a tenant gives Ergon's labels", func(ctx SpecContext) {
		kctx, cancel := context.WithCancel(context.Background())
		DeferCleanup(cancel)
		go testKubelet.run(kctx)
		ns := newNamespace(ctx, func(*corev1.Pod) outcome { return outcome{Stay: true} })

		// What earlier specs' Runs hold, plus one slot: the Run below needs exactly one.
		held, err := (&RunReconciler{Client: k8sClient}).activeSlots(ctx, &ergonv1alpha1.Run{})
		Expect(err).NotTo(HaveOccurred())
		stopMgr()
		DeferCleanup(func() { stopMgr = startManager(RunConfig{EntrypointImage: "ergon/manager:test", MaxDepth: 3}) })
		stop := startManager(RunConfig{EntrypointImage: "ergon/manager:test", MaxDepth: 3, MaxActivePods: held + 1})
		DeferCleanup(stop)

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
		}).Should(Succeed(), "the Run starts its pod: the flood holds none of the budget")
	})
})

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
