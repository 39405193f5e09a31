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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/identity"
)

// updateAs changes obj as c, reading it again when a controller wrote it meanwhile.
func updateAs(c client.Client, obj client.Object, change func()) {
	GinkgoHelper()
	Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := admin.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		change()
		return c.Update(ctx, obj)
	})).To(Succeed())
}

// One authority: the identity stamped once, and every effect authorized at the effect.
var _ = Describe("Attack 31: Ergon acts for someone other than the person behind the work", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace() })

	identityOf := func(obj client.Object, key string) ergonv1alpha1.UserIdentity {
		GinkgoHelper()
		id, ok, err := identity.Of(obj, key)
		Expect(err).NotTo(HaveOccurred())
		Expect(ok).To(BeTrue(), "no %s on %s", key, obj.GetName())
		return id
	}

	It("stamps a Run with its requester's whole identity, whatever identity the client sent", func() {
		mallory := userClient(ns, "mallory", roleErgonEditor, "night-shift")
		Expect(mallory.Create(ctx, newScene(ns, "s", shStep("one", "true")))).To(Succeed())
		run := newRun(ns, "forged", "s", nil)
		run.Annotations = map[string]string{
			ergonv1alpha1.AnnotationIdentity: identity.Encode(ergonv1alpha1.UserIdentity{Username: "alice", Groups: []string{"system:masters"}}),
		}
		Expect(mallory.Create(ctx, run)).To(Succeed())
		got := &ergonv1alpha1.Run{}
		Expect(admin.Get(ctx, client.ObjectKeyFromObject(run), got)).To(Succeed())
		id := identityOf(got, ergonv1alpha1.AnnotationIdentity)
		Expect(id.Username).To(Equal("mallory"))
		Expect(id.Groups).To(ContainElement("night-shift"))
		Expect(id.Groups).NotTo(ContainElement("system:masters"))
		Expect(got.Annotations[ergonv1alpha1.AnnotationCreatedBy]).To(Equal("mallory"))

		// And nobody changes it afterwards.
		got.Annotations[ergonv1alpha1.AnnotationIdentity] = identity.Encode(ergonv1alpha1.UserIdentity{Username: "alice"})
		refusedNaming(mallory.Update(ctx, got), "metadata.annotations[ergon.dev/identity]")
	})

	It("makes a Trigger act as whoever last changed its spec, and a Scene record its last editor", func() {
		alice := userClient(ns, "alice", roleErgonEditor)
		mallory := userClient(ns, "mallory", roleErgonEditor)
		Expect(alice.Create(ctx, newScene(ns, "s", shStep("one", "true")))).To(Succeed())
		t := &ergonv1alpha1.Trigger{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nightly"},
			Spec: ergonv1alpha1.TriggerSpec{SceneRef: corev1.LocalObjectReference{Name: "s"},
				Schedule: &ergonv1alpha1.ScheduleSource{Cron: "0 3 * * *"}, Suspend: new(true)}}
		Expect(alice.Create(ctx, t)).To(Succeed())
		Expect(identityOf(t, ergonv1alpha1.AnnotationIdentity).Username).To(Equal("alice"))

		// A change of metadata only keeps the identity, even one that tries to set it.
		updateAs(mallory, t, func() {
			t.Labels = map[string]string{"team": "a"}
			t.Annotations[ergonv1alpha1.AnnotationIdentity] = identity.Encode(ergonv1alpha1.UserIdentity{Username: "mallory"})
		})
		Expect(identityOf(t, ergonv1alpha1.AnnotationIdentity).Username).To(Equal("alice"))

		// Mallory's change of the spec makes the Trigger act as Mallory, not Alice.
		updateAs(mallory, t, func() { t.Spec.Schedule.Cron = "*/5 * * * *" })
		Expect(identityOf(t, ergonv1alpha1.AnnotationIdentity).Username).To(Equal("mallory"))
		Expect(t.Annotations[ergonv1alpha1.AnnotationCreator]).To(Equal("alice"), "the creator is history, kept")

		scene := &ergonv1alpha1.Scene{}
		Expect(admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "s"}, scene)).To(Succeed())
		Expect(identityOf(scene, ergonv1alpha1.AnnotationEditor).Username).To(Equal("alice"))
		updateAs(mallory, scene, func() { scene.Spec.Steps[0].Container.Command = []string{"sh", "-c", "echo changed"} })
		Expect(identityOf(scene, ergonv1alpha1.AnnotationEditor).Username).To(Equal("mallory"))
	})

	It("lets a Run act as a ServiceAccount only for a requester who may impersonate it", func() {
		flux := userClient(ns, "flux-sync", roleErgonEditor)
		Expect(flux.Create(ctx, newScene(ns, "s", shStep("one", "true")))).To(Succeed())
		run := newRun(ns, "as-deployer", "s", nil)
		run.Spec.RunAs = "deployer"
		refusedNaming(flux.Create(ctx, run.DeepCopy()), "spec.runAs", "may not impersonate ServiceAccount")

		role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "impersonate-deployer"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"serviceaccounts"},
				ResourceNames: []string{"deployer"}, Verbs: []string{"impersonate"}}}}
		Expect(admin.Create(ctx, role)).To(Succeed())
		Expect(admin.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "flux-impersonates"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "flux-sync"}}})).To(Succeed())
		Eventually(func() error { return flux.Create(ctx, run.DeepCopy()) }).Should(Succeed())
		got := &ergonv1alpha1.Run{}
		Expect(admin.Get(ctx, client.ObjectKeyFromObject(run), got)).To(Succeed())
		Expect(identityOf(got, ergonv1alpha1.AnnotationIdentity).Username).To(Equal("system:serviceaccount:" + ns + ":deployer"))
	})

	It("refuses at the effect a Secret whose read access was revoked after admission, and creates no pod", func() {
		createSecret(ns)
		erin := userClient(ns, "erin", roleEdit) // edit may read Secrets
		scene := newScene(ns, "s", shStep("work", "true"))
		scene.Spec.Finally = []ergonv1alpha1.Step{shStep("report", `echo "$T"`)}
		scene.Spec.Finally[0].Container.Env = []corev1.EnvVar{{Name: "T", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: new(secretKey())}}}
		Expect(erin.Create(ctx, scene)).To(Succeed())
		run := newRun(ns, "later", "s", nil)
		run.Spec.Suspend = true
		Expect(erin.Create(ctx, run)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(run), run)).To(Succeed())
			g.Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSuspended))
		}).Should(Succeed())

		// Erin loses edit; keeps only what lets her run and resume Runs.
		bindings := &rbacv1.RoleBindingList{}
		Expect(admin.List(ctx, bindings, client.InNamespace(ns))).To(Succeed())
		for i := range bindings.Items {
			if b := &bindings.Items[i]; b.RoleRef.Name == roleEdit {
				Expect(admin.Delete(ctx, b)).To(Succeed())
			}
		}
		bindRole(ns, "erin", roleErgonEditor)
		erinNow := userClient(ns, "erin", "")
		Eventually(func() error {
			got := &ergonv1alpha1.Run{}
			if err := erinNow.Get(ctx, client.ObjectKeyFromObject(run), got); err != nil {
				return err
			}
			got.Spec.Suspend = false
			return erinNow.Update(ctx, got)
		}).Should(Succeed())

		// "work" has no kubelet here to end it; cancel, so finally runs.
		Eventually(func() error {
			got := &ergonv1alpha1.Run{}
			if err := erinNow.Get(ctx, client.ObjectKeyFromObject(run), got); err != nil {
				return err
			}
			got.Spec.Cancel = true
			return erinNow.Update(ctx, got)
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(run), run)).To(Succeed())
			var report *ergonv1alpha1.StepStatus
			for i := range run.Status.Steps {
				if run.Status.Steps[i].Name == "report" {
					report = &run.Status.Steps[i]
				}
			}
			g.Expect(report).NotTo(BeNil(), "finally has not started")
			g.Expect(report.Reason).To(Equal(ergonv1alpha1.ReasonNotAuthorized))
			g.Expect(report.Message).To(And(ContainSubstring("erin"), ContainSubstring("get secrets tracker")))
		}).WithTimeout(30 * time.Second).Should(Succeed())
		pods := &corev1.PodList{}
		Expect(admin.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{ergonv1alpha1.LabelStep: "report"})).To(Succeed())
		Expect(pods.Items).To(BeEmpty(), "the finally step's pod was created")
	})
})
