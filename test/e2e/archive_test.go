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
	"os"
	"slices"
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

// archiveStore is the store the chart was installed with: SQLite, its default, or PostgreSQL
// for make test-e2e-postgres (hack/e2e-setup.sh).
func archiveStore() string {
	if s := os.Getenv("ERGON_E2E_ARCHIVE"); s != "" {
		return s
	}
	return "sqlite"
}

var _ = Describe("The archive on a real cluster", func() {
	It("archives a Run that ended into the chart's archive (SQLite, or PostgreSQL) before its time to live deletes it", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		Expect(k8sClient.Create(ctx, &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: "brief", Namespace: ns},
			Spec: ergonv1alpha1.SceneSpec{Steps: []ergonv1alpha1.Step{busyboxStep("say", `echo -n kept > "$ERGON_OUTPUT"`)}}})).
			To(Succeed())
		run := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: "brief-1", Namespace: ns},
			Spec: ergonv1alpha1.RunSpec{SceneRef: corev1.LocalObjectReference{Name: "brief"}, TTLSecondsAfterFinished: new(int32(15))}}
		Expect(k8sClient.Create(ctx, run)).To(Succeed())
		// The Run holds the finalizer until it is archived; a one-step Run can end and be archived
		// between two reads, so the condition stands for the finalizer it was released from.
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(run), run)).To(Succeed())
			held := slices.Contains(run.Finalizers, ergonv1alpha1.FinalizerArchive)
			g.Expect(held || meta.FindStatusCondition(run.Status.Conditions, ergonv1alpha1.ConditionArchived) != nil).
				To(BeTrue(), "the Run holds the archive's finalizer, or was archived")
		}).WithTimeout(30 * time.Second).Should(Succeed())
		var archived *metav1.Condition
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(run), run)).To(Succeed())
			archived = meta.FindStatusCondition(run.Status.Conditions, ergonv1alpha1.ConditionArchived)
			g.Expect(archived).NotTo(BeNil())
			// The condition is written first, then the finalizer released (a second write).
			g.Expect(run.Finalizers).NotTo(ContainElement(ergonv1alpha1.FinalizerArchive))
		}).WithTimeout(2 * time.Minute).Should(Succeed())
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded))
		Expect(archived.Status).To(Equal(metav1.ConditionTrue))
		Expect(archived.Message).To(ContainSubstring(archiveStore()))
		Eventually(func() error {
			return k8sClient.Get(ctx, client.ObjectKeyFromObject(run), &ergonv1alpha1.Run{})
		}).WithTimeout(time.Minute).Should(Satisfy(apierrors.IsNotFound))

		By("reading it back through the API server's aggregator, as a viewer of the namespace")
		tenant(ctx, ns, "archive-viewer", "ergon-viewer")
		Eventually(func(g Gomega) {
			code, out, errOut := ran(ergon(ns, "history", "--as", "archive-viewer"))
			g.Expect(code).To(Equal(0), errOut)
			g.Expect(out).To(MatchRegexp(`brief-1\s+brief\s+Succeeded`))
		}).WithTimeout(2 * time.Minute).WithPolling(5 * time.Second).Should(Succeed())
		code, out, _ := ran(ergon(ns, "history", "--as", "archive-viewer", "--text", "no-such-words"))
		Expect(code).To(Equal(0))
		Expect(out).To(ContainSubstring("No archived Runs found."))

		By("refusing a person who may not get Runs in the namespace")
		code, _, errOut := ran(ergon(ns, "history", "--as", "archive-stranger"))
		Expect(code).To(Equal(1))
		Expect(errOut).To(ContainSubstring("forbidden"))
		code, _, errOut = ran(ergon(ns, "diff", "brief-1", "brief-1", "--as", "archive-stranger"))
		Expect(code).To(Equal(1))
		Expect(errOut).NotTo(ContainSubstring("kept"))

		By("replaying the archived Run's snapshot in a new Run")
		code, out, errOut = ran(ergon(ns, "rerun", "brief-1", "--name", "brief-2", "--follow", "--timeout", "3m"))
		Expect(code).To(Equal(0), errOut)
		Expect(out).To(ContainSubstring("Run brief-2 Succeeded"))
	})
})
