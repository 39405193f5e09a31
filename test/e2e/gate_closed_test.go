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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

var _ = Describe("A Gate whose Run is cancelled on a real cluster", func() {
	It("is closed, and an impersonated approver can no longer decide it", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		carol := as(ctx, ns, "carol", "ergon-gate-approver")
		gateScene(ctx, ns, "release", ergonv1alpha1.GateStep{})
		run := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "release-1"},
			Spec: ergonv1alpha1.RunSpec{SceneRef: corev1.LocalObjectReference{Name: "release"}}}
		Expect(k8sClient.Create(ctx, run)).To(Succeed())
		gate := gateOfRun(ctx, ns, run.Name)

		Expect(k8sClient.Patch(ctx, run, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"cancel":true}}`)))).To(Succeed())
		Expect(finished(ctx, run).Status.Phase).To(Equal(ergonv1alpha1.RunCancelled))
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(gate), gate)).To(Succeed())
			g.Expect(gate.Status.Phase).To(Equal(ergonv1alpha1.GateClosed))
		}).WithTimeout(time.Minute).Should(Succeed())

		err := patchAs(ctx, carol, gate, types.MergePatchType, `{"spec":{"decision":{"option":"approve"}}}`)
		Expect(err).To(MatchError(And(ContainSubstring("spec.decision"), ContainSubstring("is Closed"))))
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(gate), gate)).To(Succeed())
		Expect(gate.Spec.Decision).To(BeNil())
	})
})
