//go:build e2e

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

package e2e

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

var _ = Describe("The archive on a real cluster", func() {
	It("archives a Run that ended into the chart's SQLite archive before its time to live deletes it", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		Expect(k8sClient.Create(ctx, &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: "brief", Namespace: ns},
			Spec: ergonv1alpha1.SceneSpec{Steps: []ergonv1alpha1.Step{busyboxStep("say", `echo -n kept > "$ERGON_OUTPUT"`)}}})).
			To(Succeed())
		run := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: "brief-1", Namespace: ns},
			Spec: ergonv1alpha1.RunSpec{SceneRef: corev1.LocalObjectReference{Name: "brief"}, TTLSecondsAfterFinished: new(int32(3))}}
		Expect(k8sClient.Create(ctx, run)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(run), run)).To(Succeed())
			g.Expect(run.Finalizers).To(ContainElement(ergonv1alpha1.FinalizerArchive))
		}).WithTimeout(30 * time.Second).Should(Succeed())
		var archived *metav1.Condition
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(run), run)).To(Succeed())
			archived = meta.FindStatusCondition(run.Status.Conditions, ergonv1alpha1.ConditionArchived)
			g.Expect(archived).NotTo(BeNil())
		}).WithTimeout(2 * time.Minute).Should(Succeed())
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded))
		Expect(archived.Status).To(Equal(metav1.ConditionTrue))
		Expect(archived.Message).To(ContainSubstring("sqlite"))
		Expect(run.Finalizers).NotTo(ContainElement(ergonv1alpha1.FinalizerArchive))
		Eventually(func() error {
			return k8sClient.Get(ctx, client.ObjectKeyFromObject(run), &ergonv1alpha1.Run{})
		}).WithTimeout(time.Minute).Should(Satisfy(apierrors.IsNotFound))
	})
})
