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
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/naming"
)

// Issue 31, "Internal state is trusted only when verified" and "Workspaces belong to their
// user": what RBAC cannot say, the ValidatingAdmissionPolicies of config/policies do. Each
// attack is first shown to be allowed by RBAC, so that the refusal is the policy's.

// refusedByPolicy expects the named admission policy to have refused a request.
func refusedByPolicy(err error, policy string, says ...string) {
	GinkgoHelper()
	Expect(err).To(HaveOccurred(), "the request must be refused")
	Expect(apierrors.IsForbidden(err) || apierrors.IsInvalid(err)).To(BeTrue(), "refused, not failed: %v", err)
	Expect(err.Error()).To(ContainSubstring("ValidatingAdmissionPolicy 'ergon-" + policy + "'"))
	for _, s := range says {
		Expect(err.Error()).To(ContainSubstring(s))
	}
}

// rbacAllows asks the API server whether RBAC lets c do verb on resource.
func rbacAllows(c client.Client, ns, group, resource, subresource, verb string) bool {
	GinkgoHelper()
	review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Group: group, Resource: resource,
			Subresource: subresource, Verb: verb}}}
	Expect(c.Create(ctx, review)).To(Succeed())
	return review.Status.Allowed
}

// grantByAccident gives user, in ns, the rules a careless role would.
func grantByAccident(ns, user string, rules ...rbacv1.PolicyRule) {
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "careless-"}, Rules: rules}
	Expect(admin.Create(ctx, role)).To(Succeed())
	Expect(admin.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "careless-"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}})).To(Succeed())
}

var _ = Describe("Attack: an editor granted status writes by accident", func() {
	It("cannot write a Run's status or a Workspace's; the manager still can", func() {
		ns := newNamespace()
		victim := userClient(ns, "vera", roleErgonEditor)
		mallory := userClient(ns, "mallory", roleEdit)
		grantByAccident(ns, "mallory", rbacv1.PolicyRule{APIGroups: []string{ergonv1alpha1.GroupVersion.Group},
			Resources: []string{"runs/status", "gates/status", "workspaces/status"}, Verbs: []string{"update", "patch"}})
		Expect(rbacAllows(mallory, ns, ergonv1alpha1.GroupVersion.Group, "runs", "status", "update")).To(BeTrue(),
			"the careless role grants it")

		createScene(victim, ns, "build", containerStep("work"))
		run := createRun(victim, ns, "nightly", "build")
		// The manager writes the status: the policy exempts it.
		stepStatus(ns, "nightly", "work", func(s ergonv1alpha1.StepStatus) bool { return s.PodName != "" })

		refusedByPolicy(mallory.Status().Patch(ctx, run, client.RawPatch(types.MergePatchType,
			[]byte(`{"status":{"phase":"Succeeded","outputs":{"work":{"preview":"forged"}}}}`))), "status", "runs/status", "mallory")
		refusedByPolicy(mallory.Status().Patch(ctx, run, client.RawPatch(types.JSONPatchType,
			[]byte(`[{"op":"replace","path":"/status/phase","value":"Succeeded"}]`))), "status")

		Expect(admin.Create(ctx, workspaceOf(ns, "dev", "vera"))).To(Succeed())
		refusedByPolicy(mallory.Status().Patch(ctx, workspaceOf(ns, "dev", "vera"), client.RawPatch(types.MergePatchType,
			[]byte(`{"status":{"phase":"Running"}}`))), "status", "workspaces/status")

		Expect(admin.Get(ctx, client.ObjectKeyFromObject(run), run)).To(Succeed())
		Expect(run.Status.Phase).NotTo(Equal(ergonv1alpha1.RunSucceeded))
		Expect(run.Status.Outputs).NotTo(HaveKey("work"))
	})
})

var _ = Describe("Attack: a tenant who may write ConfigMaps forges Ergon's internal state", func() {
	var ns string
	var mallory client.Client
	internal := func(name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
			Labels: map[string]string{ergonv1alpha1.LabelInternal: "true"}}, Data: map[string]string{"k": "v"}}
	}
	BeforeEach(func() {
		ns = newNamespace()
		mallory = userClient(ns, "mallory", roleEdit)
		Expect(rbacAllows(mallory, ns, "", "configmaps", "", "create")).To(BeTrue())
		Expect(rbacAllows(mallory, ns, "", "configmaps", "", "delete")).To(BeTrue())
	})

	It("cannot create a ConfigMap labelled ergon.dev/internal", func() {
		refusedByPolicy(mallory.Create(ctx, internal("planted")), "internal-configmaps", "planted", "mallory")
		Expect(mallory.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "plain"}})).
			To(Succeed(), "other ConfigMaps are the tenant's business")
	})

	It("cannot change, relabel or delete one, nor label one of their own", func() {
		Expect(admin.Create(ctx, internal("state"))).To(Succeed())
		cm := &corev1.ConfigMap{}
		Expect(mallory.Get(ctx, client.ObjectKey{Namespace: ns, Name: "state"}, cm)).To(Succeed())
		cm.Data["k"] = "forged"
		refusedByPolicy(mallory.Update(ctx, cm), "internal-configmaps")
		cm.Data["k"] = "v"
		delete(cm.Labels, ergonv1alpha1.LabelInternal)
		refusedByPolicy(mallory.Update(ctx, cm), "internal-configmaps", "ConfigMap state")
		refusedByPolicy(mallory.Patch(ctx, cm, client.RawPatch(types.MergePatchType,
			[]byte(`{"metadata":{"labels":{"ergon.dev/internal":null}}}`))), "internal-configmaps")
		refusedByPolicy(mallory.Delete(ctx, cm), "internal-configmaps")
		refusedByPolicy(mallory.DeleteAllOf(ctx, &corev1.ConfigMap{}, client.InNamespace(ns)), "internal-configmaps")
		Expect(admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "state"}, cm)).To(Succeed())
		Expect(cm.Labels).To(HaveKeyWithValue(ergonv1alpha1.LabelInternal, "true"))
		Expect(cm.Data).To(HaveKeyWithValue("k", "v"))

		own := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "own"}, Data: map[string]string{"k": "v"}}
		Expect(mallory.Create(ctx, own)).To(Succeed())
		own.Labels = map[string]string{ergonv1alpha1.LabelInternal: "true"}
		refusedByPolicy(mallory.Update(ctx, own), "internal-configmaps", "ConfigMap own")
	})

	It("cannot replace a Run's output: deleting it is refused, and a forged one claiming the Run is not used", func() {
		victim := userClient(ns, "vera", roleErgonEditor)
		createScene(victim, ns, "report", containerStep("draft"),
			ergonv1alpha1.Step{Name: "hold", DependsOn: []string{"draft"},
				Gate: &ergonv1alpha1.GateStep{Options: []string{"go"}, Timeout: &metav1.Duration{Duration: 8 * time.Second}, OnTimeout: "go"}},
			containerStep("publish", "draft", "hold"))
		run := createRun(victim, ns, "weekly", "report")
		running := stepStatus(ns, "weekly", "draft", func(s ergonv1alpha1.StepStatus) bool { return s.PodName != "" })
		succeedPod(ns, running.PodName, strings.Repeat("real ", 300)) // longer than the status preview
		written := stepStatus(ns, "weekly", "draft", func(s ergonv1alpha1.StepStatus) bool {
			return s.Phase == ergonv1alpha1.StepSucceeded
		})
		Expect(written.Output.Ref).NotTo(BeNil())
		name := written.Output.Ref.ConfigMap
		cm := &corev1.ConfigMap{}
		Expect(admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cm)).To(Succeed())
		Expect(cm.Labels).To(HaveKeyWithValue(ergonv1alpha1.LabelInternal, "true"), "the manager labels what it writes")
		refusedByPolicy(mallory.Delete(ctx, cm), "internal-configmaps")

		// Where the policy is missing (or an administrator errs), a forged ConfigMap with the
		// Run's UID as controller is still refused: it lacks the label only the manager sets.
		Expect(admin.Delete(ctx, cm)).To(Succeed())
		Expect(admin.Get(ctx, client.ObjectKeyFromObject(run), run)).To(Succeed())
		Expect(mallory.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
			Labels: map[string]string{ergonv1alpha1.LabelManagedBy: ergonv1alpha1.ManagedByErgon},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: ergonv1alpha1.GroupVersion.String(), Kind: "Run",
				Name: run.Name, UID: run.UID, Controller: new(true)}}},
			Data: map[string]string{"output": "forged"}})).To(Succeed())

		s := stepStatus(ns, "weekly", "publish", failedForConflict) // once the gate times out
		Expect(s.Message).To(ContainSubstring(name))
		Expect(s.Message).To(ContainSubstring("does not carry the label ergon.dev/internal=true"))
	})

	It("cannot make a Run execute a snapshot it planted under the snapshot's name with the Run's UID", func() {
		// The Run waits for its Scene (which someone who may read Secrets may start it before),
		// so its UID is known before it takes its snapshot.
		victim := userClient(ns, "vera", roleEdit)
		run := createRun(victim, ns, "large-1", "large")
		name := naming.SnapshotConfigMapName("large-1")
		Expect(mallory.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
			Labels: map[string]string{ergonv1alpha1.LabelManagedBy: ergonv1alpha1.ManagedByErgon},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: ergonv1alpha1.GroupVersion.String(), Kind: "Run",
				Name: run.Name, UID: run.UID, Controller: new(true)}}},
			Data: map[string]string{"scene.json": `{"steps":[{"name":"evil","container":{"image":"mallory/x","command":["steal"]}}]}`}})).
			To(Succeed())
		padding := string(make([]byte, 30<<10))
		big := func(name string, deps ...string) ergonv1alpha1.Step {
			s := containerStep(name, deps...)
			s.Container.Command = []string{"sh", "-c", "# " + padding}
			return s
		}
		createScene(victim, ns, "large", big("a"), big("b", "a"), big("c", "b"))

		Eventually(func(g Gomega) {
			g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(run), run)).To(Succeed())
			g.Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunFailed))
			c := meta.FindStatusCondition(run.Status.Conditions, ergonv1alpha1.ConditionSucceeded)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal(ergonv1alpha1.ReasonNameConflict))
			g.Expect(c.Message).To(And(ContainSubstring(name), ContainSubstring("ergon.dev/internal")))
		}).WithTimeout(20 * time.Second).Should(Succeed())
		pods := &corev1.PodList{}
		Expect(admin.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{ergonv1alpha1.LabelRun: "large-1"})).To(Succeed())
		Expect(pods.Items).To(BeEmpty(), "nothing of the forged Scene runs")
	})
})

var _ = Describe("Attack: a tenant with edit takes over another person's Workspace", func() {
	var ns string
	var alice, bob, carol, guest client.Client
	BeforeEach(func() {
		ns = newNamespace()
		alice = userClient(ns, "ws-owner-alice", roleEdit)
		bob = userClient(ns, "ws-bob", roleEdit)
		carol = userClient(ns, "ws-admin-carol", roleErgonAdmin)
		guest = userClient(ns, "ws-guest-gil", roleWorkspaceUser)
		Expect(rbacAllows(bob, ns, ergonv1alpha1.GroupVersion.Group, "workspaces", "", "update")).To(BeTrue())
	})

	It("cannot create one for someone else; its user can", func() {
		refusedByPolicy(bob.Create(ctx, workspaceOf(ns, "dev", "ws-owner-alice")), "workspace-owner",
			"Workspace dev belongs to ws-owner-alice", "ws-bob may not")
		Expect(alice.Create(ctx, workspaceOf(ns, "dev", "ws-owner-alice"))).To(Succeed())
	})

	It("cannot edit or delete the user's Workspace; the user can, and so can a holder of the verb admin", func() {
		Expect(alice.Create(ctx, workspaceOf(ns, "dev", "ws-owner-alice"))).To(Succeed())
		ws := &ergonv1alpha1.Workspace{}
		Expect(bob.Get(ctx, client.ObjectKey{Namespace: ns, Name: "dev"}, ws)).To(Succeed())
		ws.Spec.Image = "mallory/backdoor:1"
		refusedByPolicy(bob.Update(ctx, ws), "workspace-owner", "may change it")
		refusedByPolicy(bob.Delete(ctx, ws), "workspace-owner", "may delete it")

		Expect(alice.Get(ctx, client.ObjectKey{Namespace: ns, Name: "dev"}, ws)).To(Succeed())
		ws.Spec.Image = "busybox:1.37"
		Expect(alice.Update(ctx, ws)).To(Succeed(), "the user edits their own")

		Expect(carol.Get(ctx, client.ObjectKey{Namespace: ns, Name: "dev"}, ws)).To(Succeed())
		ws.Spec.Image = "busybox:1.38"
		Expect(carol.Update(ctx, ws)).To(Succeed(), "the verb admin edits anyone's")
		Expect(carol.Create(ctx, workspaceOf(ns, "other", "ws-owner-alice"))).To(Succeed(), "and creates one for anyone")
		Expect(carol.Delete(ctx, ws)).To(Succeed())
		Expect(alice.Delete(ctx, workspaceOf(ns, "other", "ws-owner-alice"))).To(Succeed(), "the user deletes their own")
	})

	It("lets someone granted use touch the Workspace, and change nothing else", func() {
		Expect(alice.Create(ctx, workspaceOf(ns, "dev", "ws-owner-alice"))).To(Succeed())
		touch := `{"metadata":{"annotations":{"` + ergonv1alpha1.AnnotationWorkspaceTouch + `":"2026-01-02T03:04:05Z"}}}`
		grantByAccident(ns, "ws-guest-gil", rbacv1.PolicyRule{APIGroups: []string{ergonv1alpha1.GroupVersion.Group},
			Resources: []string{"workspaces"}, Verbs: []string{"patch"}})
		ws := workspaceOf(ns, "dev", "ws-owner-alice")
		Expect(guest.Patch(ctx, ws, client.RawPatch(types.MergePatchType, []byte(touch)))).To(Succeed())
		refusedByPolicy(guest.Patch(ctx, ws, client.RawPatch(types.MergePatchType,
			[]byte(`{"metadata":{"annotations":{"note":"mine now"}}}`))), "workspace-owner")
		refusedByPolicy(guest.Patch(ctx, ws, client.RawPatch(types.MergePatchType,
			[]byte(`{"spec":{"image":"mallory/backdoor:1"}}`))), "workspace-owner")
		refusedByPolicy(bob.Patch(ctx, ws, client.RawPatch(types.MergePatchType, []byte(touch))), "workspace-owner",
			"ws-bob may not")
	})
})
