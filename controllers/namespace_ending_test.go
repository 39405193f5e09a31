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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/controllers/internal/shared"
	"github.com/ergon-dev/ergon/internal/naming"
)

// No namespace controller runs here: a deleted namespace stays Terminating, and the API
// server refuses to create anything in it, as it does while a real one is being emptied.
var _ = Describe("A Run whose namespace is being deleted", func() {
	BeforeEach(func() {
		ctx, cancel := context.WithCancel(context.Background())
		go testKubelet.run(ctx)
		DeferCleanup(cancel)
	})

	It("is not failed for the pods it can no longer create, and its passes end without an error", func(ctx SpecContext) {
		ns := newNamespace(ctx, echoLastArg)
		work := container("work", "done")
		work.DependsOn = []string{"review"}
		createScene(ctx, ns, "gated", ergonv1alpha1.Step{Name: "review", Gate: &ergonv1alpha1.GateStep{Message: "Go?"}}, work)
		createRun(ctx, ns, "g-1", "gated", nil)
		gate := &ergonv1alpha1.Gate{}
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: naming.GateName("g-1", "review")}, gate)).To(Succeed())
		}).Should(Succeed())

		Expect(k8sClient.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		refusal := k8sClient.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: ns}})
		Expect(shared.NamespaceEnding(refusal)).To(BeTrue(), "%v", refusal)
		quiet := shared.QuietWhileNamespaceEnds(reconcile.Func(func(context.Context, ctrl.Request) (ctrl.Result, error) {
			return ctrl.Result{}, refusal
		}))
		Expect(quiet.Reconcile(ctx, ctrl.Request{})).To(Equal(ctrl.Result{}))

		By("deciding the Gate, so that the Run would start its next step")
		patch := client.MergeFrom(gate.DeepCopy())
		gate.Spec.Decision = &ergonv1alpha1.GateDecision{Option: "approve", User: "alice"}
		Expect(k8sClient.Patch(ctx, gate, patch)).To(Succeed())
		Consistently(func(g Gomega) {
			run, work := runStep(ctx, ns, "g-1", "work")
			g.Expect(run.Status.Phase).NotTo(Equal(ergonv1alpha1.RunFailed))
			g.Expect(work.Reason).NotTo(Equal(ergonv1alpha1.ReasonPodRefused))
		}, "3s").Should(Succeed())
	}, SpecTimeout(60*time.Second))
})
