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
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

// gateScene makes a Scene whose one step is a gate, and returns its name.
func gateScene(ns, name string, gate ergonv1alpha1.GateStep) string {
	Expect(admin.Create(ctx, &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: ergonv1alpha1.SceneSpec{Steps: []ergonv1alpha1.Step{{Name: "review", Gate: &gate}}}})).To(Succeed())
	return name
}

// startRun creates a Run of scene as c, and returns it as the API server stored it.
func startRun(c client.Client, ns, name, scene string) *ergonv1alpha1.Run {
	run := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: ergonv1alpha1.RunSpec{SceneRef: corev1.LocalObjectReference{Name: scene}}}
	Expect(c.Create(ctx, run)).To(Succeed())
	return run
}

// gateOf waits for the Gate Ergon creates for run's gate step.
func gateOf(ns, run string) *ergonv1alpha1.Gate {
	var found *ergonv1alpha1.Gate
	Eventually(func(g Gomega) {
		var gates ergonv1alpha1.GateList
		g.Expect(admin.List(ctx, &gates, client.InNamespace(ns))).To(Succeed())
		found = nil
		for i := range gates.Items {
			if gates.Items[i].Spec.RunRef.Name == run {
				found = &gates.Items[i]
			}
		}
		g.Expect(found).NotTo(BeNil(), "the Gate of Run %s", run)
	}).WithTimeout(30 * time.Second).Should(Succeed())
	return found
}

// reread returns the stored Gate.
func reread(gate *ergonv1alpha1.Gate) *ergonv1alpha1.Gate {
	fresh := &ergonv1alpha1.Gate{}
	Expect(admin.Get(ctx, client.ObjectKeyFromObject(gate), fresh)).To(Succeed())
	return fresh
}

// patchGate sends a raw patch of a type as c, as kubectl patch does.
func patchGate(c client.Client, gate *ergonv1alpha1.Gate, pt types.PatchType, patch string) error {
	return c.Patch(ctx, gate.DeepCopy(), client.RawPatch(pt, []byte(patch)))
}

// vote appends c's vote to the Gate's approvals, as `kubectl patch --type json` does: the
// first vote makes the list.
func vote(c client.Client, gate *ergonv1alpha1.Gate, option string) error {
	value := `{"user":"-","option":"` + option + `"}`
	if len(reread(gate).Spec.Approvals) == 0 {
		return patchGate(c, gate, types.JSONPatchType, `[{"op":"add","path":"/spec/approvals","value":[`+value+`]}]`)
	}
	return patchGate(c, gate, types.JSONPatchType, `[{"op":"add","path":"/spec/approvals/-","value":`+value+`}]`)
}

// decide sets the Gate's decision as c, claiming to be someone else.
func decide(c client.Client, gate *ergonv1alpha1.Gate, option string) error {
	return patchGate(c, gate, types.MergePatchType, `{"spec":{"decision":{"option":"`+option+`","user":"somebody-else"}}}`)
}

// refusedWith expects admission to have refused a request, saying why.
func refusedWith(err error, says ...string) {
	GinkgoHelper()
	Expect(err).To(HaveOccurred(), "the attack must be refused")
	Expect(apierrors.IsInvalid(err) || apierrors.IsForbidden(err)).To(BeTrue(), "refused, not failed: %v", err)
	for _, s := range says {
		Expect(err.Error()).To(ContainSubstring(s))
	}
}

var _ = Describe("Attacks on Gates", func() {
	It("quorum bypass: one approver setting spec.decision cannot decide a Gate that needs three", func() {
		ns := newNamespace()
		vera := userClient(ns, "vera", roleEdit)
		mallory := userClient(ns, "mallory", roleApprover)
		scene := gateScene(ns, "quorum", ergonv1alpha1.GateStep{MinApprovals: new(int32(3))})
		startRun(vera, ns, "deploy", scene)
		gate := gateOf(ns, "deploy")

		refusedWith(decide(mallory, gate, "approve"), "spec.decision", "needs 3 approvals from different people")
		refusedWith(decide(mallory, gate, "reject"), "spec.decision", "add your vote to spec.approvals instead")
		Expect(vote(mallory, gate, "approve")).To(Succeed(), "a vote is how an approver takes part in a quorum")
		// The Gate controller may not have written the Gate's first status yet.
		Eventually(func() ergonv1alpha1.GatePhase { return reread(gate).Status.Phase }).Should(Equal(ergonv1alpha1.GatePending))
		Consistently(func() ergonv1alpha1.GatePhase { return reread(gate).Status.Phase }).
			WithTimeout(2*time.Second).Should(Equal(ergonv1alpha1.GatePending), "one vote of three decides nothing")
		Expect(reread(gate).Spec.Decision).To(BeNil())
	})

	It("vote tampering: nobody rewrites, replaces, reorders or removes a cast vote, even after the Run ends", func() {
		ns := newNamespace()
		vera := userClient(ns, "vera", roleEdit)
		alice := userClient(ns, "alice", roleApprover)
		bob := userClient(ns, "bob", roleApprover, "release-managers")
		mallory := userClient(ns, "mallory", roleApprover)
		scene := gateScene(ns, "quorum", ergonv1alpha1.GateStep{MinApprovals: new(int32(3))})
		startRun(vera, ns, "deploy", scene)
		gate := gateOf(ns, "deploy")
		Expect(vote(alice, gate, "approve")).To(Succeed())
		Expect(vote(bob, gate, "approve")).To(Succeed())
		cast := reread(gate).Spec.Approvals
		Expect(cast).To(HaveLen(2))
		Expect(cast[0].User).To(Equal("alice"))
		Expect(cast[1].User).To(Equal("bob"))
		Expect(cast[1].Groups).To(ContainElement("release-managers"), "stamped from the request")

		attacks := map[string]string{
			"rewrite alice's option":  `[{"op":"replace","path":"/spec/approvals/0/option","value":"reject"}]`,
			"replace alice's vote":    `[{"op":"replace","path":"/spec/approvals/0","value":{"user":"alice","option":"reject"}}]`,
			"rewrite alice's comment": `[{"op":"add","path":"/spec/approvals/0/comment","value":"I approve only if mallory deploys"}]`,
			"reorder the votes":       `[{"op":"move","from":"/spec/approvals/1","path":"/spec/approvals/0"}]`,
			"remove alice's vote":     `[{"op":"remove","path":"/spec/approvals/0"}]`,
			"swap in a vote as mallory": `[{"op":"remove","path":"/spec/approvals/0"},` +
				`{"op":"add","path":"/spec/approvals/-","value":{"user":"mallory","option":"reject"}}]`,
		}
		for name, patch := range attacks {
			By(name)
			refusedWith(patchGate(mallory, gate, types.JSONPatchType, patch), "spec.approvals", "never withdrawn, edited or reordered")
		}
		By("alice editing her own vote")
		refusedWith(patchGate(alice, gate, types.JSONPatchType, `[{"op":"replace","path":"/spec/approvals/0/option","value":"reject"}]`),
			"never withdrawn, edited or reordered")

		By("removing a vote once the Run has ended")
		run := &ergonv1alpha1.Run{}
		Expect(admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "deploy"}, run)).To(Succeed())
		Expect(vera.Patch(ctx, run, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"cancel":true}}`)))).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(run), run)).To(Succeed())
			g.Expect(run.Status.Phase.Finished()).To(BeTrue())
		}).WithTimeout(30 * time.Second).Should(Succeed())
		refusedWith(patchGate(mallory, gate, types.JSONPatchType, `[{"op":"remove","path":"/spec/approvals/0"}]`),
			"never withdrawn, edited or reordered")
		refusedWith(patchGate(mallory, gate, types.JSONPatchType, `[{"op":"replace","path":"/spec/approvals/0/option","value":"reject"}]`),
			"never withdrawn, edited or reordered")
		Expect(reread(gate).Spec.Approvals).To(Equal(cast), "every vote as it was cast")
	})

	It("forged Gate: a tenant allowed by RBAC to create Gates cannot create one", func() {
		ns := newNamespace()
		Expect(admin.Create(ctx, &rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: "security-gate-writer-" + ns},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{ergonv1alpha1.GroupVersion.Group}, Resources: []string{"gates", "runs"},
				Verbs: []string{"create", "get", "list", "update", "patch"}}},
		})).To(Succeed())
		mallory := userClient(ns, "mallory", "security-gate-writer-"+ns)
		vera := userClient(ns, "vera", roleEdit)
		scene := gateScene(ns, "quorum", ergonv1alpha1.GateStep{MinApprovals: new(int32(2))})
		victim := startRun(vera, ns, "deploy", scene)

		forged := &ergonv1alpha1.Gate{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "deploy-review-forged",
				Labels:          map[string]string{ergonv1alpha1.LabelRun: victim.Name, ergonv1alpha1.LabelStep: "review"},
				OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(victim, ergonv1alpha1.GroupVersion.WithKind("Run"))}},
			Spec: ergonv1alpha1.GateSpec{RunRef: corev1.LocalObjectReference{Name: victim.Name}, Step: "review",
				Decision: &ergonv1alpha1.GateDecision{Option: "approve"}},
		}
		err := mallory.Create(ctx, forged)
		refusedWith(err, "only Ergon creates Gates")
		Expect(apierrors.IsForbidden(err)).To(BeTrue())
	})

	It("Gate hijack: an approver cannot change a Gate's runRef, step, labels or owner references", func() {
		ns := newNamespace()
		vera := userClient(ns, "vera", roleEdit)
		mallory := userClient(ns, "mallory", roleApprover)
		scene := gateScene(ns, "quorum", ergonv1alpha1.GateStep{MinApprovals: new(int32(2))})
		startRun(vera, ns, "deploy", scene)
		startRun(vera, ns, "other", scene)
		gate := gateOf(ns, "deploy")
		before := reread(gate)

		for name, attack := range map[string]struct {
			pt    types.PatchType
			patch string
			says  string
		}{
			"runRef":      {types.MergePatchType, `{"spec":{"runRef":{"name":"other"}}}`, "runRef is immutable"},
			"step":        {types.MergePatchType, `{"spec":{"step":"elsewhere"}}`, "only decision and approvals of a Gate can change"},
			"a label":     {types.MergePatchType, `{"metadata":{"labels":{"ergon.dev/run":"other"}}}`, "metadata.labels"},
			"a new label": {types.MergePatchType, `{"metadata":{"labels":{"team":"mallory"}}}`, "metadata.labels"},
			"the owner": {types.JSONPatchType, `[{"op":"replace","path":"/metadata/ownerReferences/0/name","value":"other"}]`,
				"metadata.ownerReferences"},
			"no owner at all": {types.JSONPatchType, `[{"op":"remove","path":"/metadata/ownerReferences"}]`, "metadata.ownerReferences"},
		} {
			By("changing " + name)
			refusedWith(patchGate(mallory, gate, attack.pt, attack.patch), attack.says)
		}
		after := reread(gate)
		Expect(after.Labels).To(Equal(before.Labels))
		Expect(after.OwnerReferences).To(Equal(before.OwnerReferences))
		Expect(after.Spec.RunRef).To(Equal(before.Spec.RunRef))
		Expect(after.Spec.Step).To(Equal(before.Spec.Step))
	})
})
