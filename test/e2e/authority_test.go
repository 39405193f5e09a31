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
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/identity"
)

// One authority, against the chart on a real cluster, as impersonated users: the identity is
// the requester's, every effect is authorized when it happens, and what the manager trusts is
// out of tenants' hands.
var _ = Describe("One authority on a real cluster", func() {
	It("stamps a Run with its requester, whatever identity the request carries", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		mallory := tenant(ctx, ns, "mallory", "ergon-editor")
		Expect(mallory.Create(ctx, &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: ns},
			Spec: ergonv1alpha1.SceneSpec{Steps: []ergonv1alpha1.Step{busyboxStep("one", "true")}}})).To(Succeed())
		run := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: "forged", Namespace: ns, Annotations: map[string]string{
			ergonv1alpha1.AnnotationIdentity: identity.Encode(ergonv1alpha1.UserIdentity{Username: "alice", Groups: []string{"system:masters"}}),
		}}, Spec: ergonv1alpha1.RunSpec{SceneRef: corev1.LocalObjectReference{Name: "s"}}}
		Expect(mallory.Create(ctx, run)).To(Succeed())
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(run), run)).To(Succeed())
		id, ok, err := identity.Of(run, ergonv1alpha1.AnnotationIdentity)
		Expect(err).NotTo(HaveOccurred())
		Expect(ok).To(BeTrue())
		Expect(id.Username).To(Equal("mallory"))
		Expect(id.Groups).NotTo(ContainElement("system:masters"))
		Expect(mallory.Patch(ctx, run.DeepCopy(), client.RawPatch(types.MergePatchType,
			[]byte(`{"metadata":{"annotations":{"ergon.dev/identity":"{\"username\":\"alice\"}"}}}`)))).
			To(MatchError(ContainSubstring("ergon.dev/identity")))
	})

	It("refuses at the effect a Secret whose read was revoked after admission, and creates no pod", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		Expect(k8sClient.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "tracker", Namespace: ns},
			StringData: map[string]string{"token": "s3cr3t"}})).To(Succeed())
		erin := tenant(ctx, ns, "erin", "edit") // edit may read Secrets
		read := busyboxStep("read", `test -n "$T"`)
		read.Container.Env = []corev1.EnvVar{{Name: "T", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "tracker"}, Key: "token"}}}}
		Expect(erin.Create(ctx, &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: "reader", Namespace: ns},
			Spec: ergonv1alpha1.SceneSpec{Steps: []ergonv1alpha1.Step{read}}})).To(Succeed())
		run := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: "later", Namespace: ns},
			Spec: ergonv1alpha1.RunSpec{SceneRef: corev1.LocalObjectReference{Name: "reader"}, Suspend: true}}
		Expect(erin.Create(ctx, run)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(run), run)).To(Succeed())
			g.Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSuspended))
		}).WithTimeout(time.Minute).Should(Succeed())

		// Erin loses edit; the Run she started resumes.
		Expect(k8sClient.Delete(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "erin-edit", Namespace: ns}})).To(Succeed())
		Expect(k8sClient.Patch(ctx, &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: "later", Namespace: ns}},
			client.RawPatch(types.MergePatchType, []byte(`{"spec":{"suspend":false}}`)))).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(run), run)).To(Succeed())
			g.Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunFailed))
			g.Expect(run.Status.Steps).To(ContainElement(And(HaveField("Name", "read"),
				HaveField("Reason", ergonv1alpha1.ReasonNotAuthorized),
				HaveField("Message", And(ContainSubstring("erin"), ContainSubstring("get secrets tracker"))))))
		}).WithTimeout(2 * time.Minute).Should(Succeed())
		pods := &corev1.PodList{}
		Expect(k8sClient.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{ergonv1alpha1.LabelStep: "read"})).To(Succeed())
		Expect(pods.Items).To(BeEmpty(), "the step's pod was created")
	})

	It("keeps what the manager trusts out of a tenant's hands, whatever RBAC grants", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		// mallory holds edit, and by accident a role that lets her write Runs' status.
		Expect(k8sClient.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "status-writer", Namespace: ns},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{ergonv1alpha1.GroupVersion.Group}, Resources: []string{"runs/status"},
				Verbs: []string{"get", "update", "patch"}}}})).To(Succeed())
		Expect(k8sClient.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "mallory-status", Namespace: ns},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "status-writer"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "mallory"}}})).To(Succeed())
		mallory := tenant(ctx, ns, "mallory", "edit")

		run := runScene(ctx, ns, "short", busyboxStep("one", "true"))
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(run), run)).To(Succeed())
			g.Expect(run.Status.Phase).NotTo(BeEmpty())
		}).WithTimeout(time.Minute).Should(Succeed())
		Expect(mallory.Status().Patch(ctx, run.DeepCopy(), client.RawPatch(types.MergePatchType,
			[]byte(`{"status":{"phase":"Succeeded"}}`)))).To(MatchError(ContainSubstring("only the Ergon manager writes runs/status")))

		// Internal state: neither planted nor claimed by adding the label.
		planted := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "planted", Namespace: ns,
			Labels: map[string]string{ergonv1alpha1.LabelInternal: "true"}}, Data: map[string]string{"k": "v"}}
		Expect(mallory.Create(ctx, planted)).To(MatchError(ContainSubstring("only the Ergon manager")))
		plain := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "plain", Namespace: ns}, Data: map[string]string{"k": "v"}}
		Expect(mallory.Create(ctx, plain)).To(Succeed())
		internal := []byte(`{"metadata":{"labels":{"` + ergonv1alpha1.LabelInternal + `":"true"}}}`)
		Expect(mallory.Patch(ctx, plain, client.RawPatch(types.MergePatchType, internal))).
			To(MatchError(ContainSubstring("only the Ergon manager")))

		// A Workspace is its user's: mallory cannot make one for alice.
		Expect(mallory.Create(ctx, e2eWorkspace(ns, "alices", "alice"))).To(MatchError(ContainSubstring("belongs to alice")))
	})
})
