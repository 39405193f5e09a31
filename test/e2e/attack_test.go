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
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

// as is a client whose requests the API server takes as user's, as kubectl --as sends them,
// bound in namespace to the ClusterRoles given.
func as(ctx SpecContext, ns, user string, clusterRoles ...string) client.Client {
	for _, role := range clusterRoles {
		Expect(k8sClient.Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{GenerateName: user + "-", Namespace: ns},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
		})).To(Succeed())
	}
	c := rest.CopyConfig(cfg)
	c.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:authenticated"}}
	cl, err := client.New(c, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
	return cl
}

// gateScene makes a Scene whose one step is a gate.
func gateScene(ctx SpecContext, ns, name string, gate ergonv1alpha1.GateStep) {
	Expect(k8sClient.Create(ctx, &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: ergonv1alpha1.SceneSpec{Steps: []ergonv1alpha1.Step{{Name: "review", Gate: &gate}}}})).To(Succeed())
}

// gateOfRun waits for the Gate of a Run's gate step.
func gateOfRun(ctx SpecContext, ns, run string) *ergonv1alpha1.Gate {
	var found *ergonv1alpha1.Gate
	Eventually(func(g Gomega) {
		var gates ergonv1alpha1.GateList
		g.Expect(k8sClient.List(ctx, &gates, client.InNamespace(ns))).To(Succeed())
		found = nil
		for i := range gates.Items {
			if gates.Items[i].Spec.RunRef.Name == run {
				found = &gates.Items[i]
			}
		}
		if found == nil {
			r := &ergonv1alpha1.Run{}
			if k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: run}, r) == nil && r.Status.Phase.Finished() {
				StopTrying(fmt.Sprintf("Run %s ended without a Gate: %+v", run, r.Status)).Now()
			}
		}
		g.Expect(found).NotTo(BeNil(), "a Gate of Run %s", run)
	}).WithTimeout(time.Minute).Should(Succeed())
	return found
}

func patchAs(ctx SpecContext, c client.Client, gate *ergonv1alpha1.Gate, pt types.PatchType, patch string) error {
	return c.Patch(ctx, gate.DeepCopy(), client.RawPatch(pt, []byte(patch)))
}

const decideApprove = `{"spec":{"decision":{"option":"approve","user":"someone-else"}}}`

var _ = Describe("Attacks on Gates on a real cluster", func() {
	It("refuses a quorum bypass: one approver's decision, then needs two people's votes", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		mallory := as(ctx, ns, "mallory", "ergon-gate-approver")
		alice := as(ctx, ns, "alice", "ergon-gate-approver")
		gateScene(ctx, ns, "quorum", ergonv1alpha1.GateStep{MinApprovals: new(int32(2))})
		run := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "quorum-1"},
			Spec: ergonv1alpha1.RunSpec{SceneRef: corev1.LocalObjectReference{Name: "quorum"}}}
		Expect(k8sClient.Create(ctx, run)).To(Succeed())
		gate := gateOfRun(ctx, ns, run.Name)

		err := patchAs(ctx, mallory, gate, types.MergePatchType, decideApprove)
		Expect(err).To(MatchError(ContainSubstring("needs 2 approvals from different people")))
		first := `[{"op":"add","path":"/spec/approvals","value":[{"user":"-","option":"approve"}]}]`
		vote := `[{"op":"add","path":"/spec/approvals/-","value":{"user":"-","option":"approve"}}]`
		Expect(patchAs(ctx, mallory, gate, types.JSONPatchType, first)).To(Succeed())
		err = patchAs(ctx, mallory, gate, types.JSONPatchType, vote)
		Expect(err).To(HaveOccurred(), "a second vote by the same person")
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(gate), gate)).To(Succeed())
		Expect(gate.Status.Phase).NotTo(Equal(ergonv1alpha1.GateApproved))
		Expect(patchAs(ctx, alice, gate, types.JSONPatchType, vote)).To(Succeed())

		run = finished(ctx, run)
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded), "%+v", run.Status)
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(gate), gate)).To(Succeed())
		Expect(gate.Status.DecidedBy).To(Equal("mallory, alice"))
	})

	It("refuses self-approval through a Trigger: its creator cannot approve the Runs it starts", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		mallory := as(ctx, ns, "mallory", "edit", "ergon-gate-approver")
		alice := as(ctx, ns, "alice", "ergon-gate-approver")
		gateScene(ctx, ns, "build", ergonv1alpha1.GateStep{})
		gateScene(ctx, ns, "deploy", ergonv1alpha1.GateStep{ForbidSelfApproval: true})
		trigger := &ergonv1alpha1.Trigger{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "deploy-after-build",
				Annotations: map[string]string{ergonv1alpha1.AnnotationCreator: "alice"}},
			Spec: ergonv1alpha1.TriggerSpec{SceneRef: corev1.LocalObjectReference{Name: "deploy"},
				RunCompleted: &ergonv1alpha1.RunCompletedSource{SceneRef: corev1.LocalObjectReference{Name: "build"}}},
		}
		Expect(mallory.Create(ctx, trigger)).To(Succeed())
		Expect(trigger.Annotations).To(HaveKeyWithValue(ergonv1alpha1.AnnotationCreator, "mallory"))

		build := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "build-1"},
			Spec: ergonv1alpha1.RunSpec{SceneRef: corev1.LocalObjectReference{Name: "build"}}}
		Expect(mallory.Create(ctx, build)).To(Succeed())
		Expect(patchAs(ctx, alice, gateOfRun(ctx, ns, build.Name), types.MergePatchType, decideApprove)).To(Succeed())

		var deploy *ergonv1alpha1.Run
		Eventually(func(g Gomega) {
			var runs ergonv1alpha1.RunList
			g.Expect(k8sClient.List(ctx, &runs, client.InNamespace(ns),
				client.MatchingLabels{ergonv1alpha1.LabelTrigger: trigger.Name})).To(Succeed())
			g.Expect(runs.Items).To(HaveLen(1))
			deploy = &runs.Items[0]
		}).WithTimeout(2 * time.Minute).Should(Succeed())
		Expect(deploy.Annotations).To(HaveKeyWithValue(ergonv1alpha1.AnnotationCreatedBy, "mallory"))

		gate := gateOfRun(ctx, ns, deploy.Name)
		err := patchAs(ctx, mallory, gate, types.MergePatchType, decideApprove)
		Expect(err).To(MatchError(ContainSubstring("forbids self-approval")))
		Expect(patchAs(ctx, alice, gate, types.MergePatchType, decideApprove)).To(Succeed())
		deploy = finished(ctx, deploy)
		Expect(deploy.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded))
	})
})
