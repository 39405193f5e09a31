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
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/authz"
	"github.com/ergon-dev/ergon/internal/identity"
)

// Every effect is authorized at the effect, against the Run's identity and the last editor of
// every Scene the Run runs, by the real API server's RBAC (controllers/run/authority.go).
var _ = Describe("One authority at the effect", func() {
	BeforeEach(func() {
		ctx, cancel := context.WithCancel(context.Background())
		go testKubelet.run(ctx)
		DeferCleanup(cancel)
	})

	alice := ergonv1alpha1.UserIdentity{Username: "alice", UID: "a-1", Groups: []string{"system:authenticated", "team"}}

	// secretStep reads Secret name in its env.
	secretStep := func(step, name string) ergonv1alpha1.Step {
		s := container(step, "echo hi")
		s.Container.Env = []corev1.EnvVar{{Name: "TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: "token"}}}}
		return s
	}
	// runAs creates a Run that acts for who (as admission would stamp it).
	runAs := func(ctx context.Context, ns, name, scene string, who ergonv1alpha1.UserIdentity) {
		run := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: ergonv1alpha1.RunSpec{SceneRef: corev1.LocalObjectReference{Name: scene}}}
		identity.Stamp(run, ergonv1alpha1.AnnotationIdentity, who)
		run.Annotations[ergonv1alpha1.AnnotationCreatedBy] = who.Username
		Expect(k8sClient.Create(ctx, run)).To(Succeed())
	}
	// grant lets alice do verbs on resources (of the core group, or of Ergon's) in ns.
	grant := func(ctx context.Context, ns, group string, resources, names, verbs []string) {
		role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{GenerateName: "grant-", Namespace: ns},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{group}, Resources: resources, ResourceNames: names, Verbs: verbs}}}
		Expect(k8sClient.Create(ctx, role)).To(Succeed())
		Expect(k8sClient.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{GenerateName: "grant-", Namespace: ns},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: alice.Username}}})).To(Succeed())
	}
	podsOf := func(ctx context.Context, ns string) []corev1.Pod {
		pods := &corev1.PodList{}
		Expect(k8sClient.List(ctx, pods, client.InNamespace(ns))).To(Succeed())
		return pods.Items
	}

	It("does nothing for a Run without an identity", func(ctx SpecContext) {
		ns := newNamespace(ctx, echoLastArg)
		createScene(ctx, ns, "plain", container("one", "hello"))
		run := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: "nobody", Namespace: ns},
			Spec: ergonv1alpha1.RunSpec{SceneRef: corev1.LocalObjectReference{Name: "plain"}}}
		// Garbage where the identity goes is no identity either.
		run.Annotations = map[string]string{ergonv1alpha1.AnnotationIdentity: `{"groups":["system:masters"]}`}
		Expect(k8sClient.Create(ctx, run)).To(Succeed())
		done := finished(ctx, ns, "nobody")
		Expect(done.Status.Phase).To(Equal(ergonv1alpha1.RunFailed))
		Expect(done.Status.Conditions).To(ContainElement(HaveField("Reason", ergonv1alpha1.ReasonNoIdentity)))
		Expect(podsOf(ctx, ns)).To(BeEmpty())
	})

	It("refuses a Secret read from spec.finally for a person who may not read it, and creates no pod", func(ctx SpecContext) {
		ns := newNamespace(ctx, echoLastArg)
		scene := &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: "cleanup", Namespace: ns}}
		scene.Spec.Steps = []ergonv1alpha1.Step{container("work", "ok")}
		scene.Spec.Finally = []ergonv1alpha1.Step{secretStep("leak", "admin-token")}
		Expect(k8sClient.Create(ctx, scene)).To(Succeed())
		grant(ctx, ns, ergonv1alpha1.GroupVersion.Group, []string{"runs", "scenes"}, nil, []string{"get", "create"})
		runAs(ctx, ns, "by-alice", "cleanup", alice)

		done := finished(ctx, ns, "by-alice")
		leak := stepStatus(done, "leak")
		Expect(leak.Phase).To(Equal(ergonv1alpha1.StepFailed))
		Expect(leak.Reason).To(Equal(ergonv1alpha1.ReasonNotAuthorized))
		Expect(leak.Message).To(And(ContainSubstring("alice"), ContainSubstring("get secrets admin-token in namespace "+ns)))
		for _, p := range podsOf(ctx, ns) {
			Expect(p.Labels[ergonv1alpha1.LabelStep]).NotTo(Equal("leak"), "a pod of the refused step was created")
		}
		Expect(stepStatus(done, "work").Phase).To(Equal(ergonv1alpha1.StepSucceeded))
	})

	It("runs the same step once the person may read the Secret", func(ctx SpecContext) {
		ns := newNamespace(ctx, echoLastArg)
		createScene(ctx, ns, "reads", secretStep("read", "team-token"))
		grant(ctx, ns, "", []string{"secrets"}, []string{"team-token"}, []string{"get"})
		grant(ctx, ns, ergonv1alpha1.GroupVersion.Group, []string{"runs", "scenes"}, nil, []string{"get", "create"})
		runAs(ctx, ns, "allowed", "reads", alice)
		Expect(finished(ctx, ns, "allowed").Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded))
	})

	It("asks again when a pod that waited for room in a quota is created, and fails its attempt once the person lost the right",
		func(ctx SpecContext) {
			ns := newNamespace(ctx, echoLastArg)
			setUsed := fullPodQuota(ctx, ns)

			createScene(ctx, ns, "reads", secretStep("read", "team-token"))
			secretRole := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "team-token", Namespace: ns},
				Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"},
					ResourceNames: []string{"team-token"}, Verbs: []string{"get"}}}}
			Expect(k8sClient.Create(ctx, secretRole)).To(Succeed())
			secretBinding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "team-token", Namespace: ns},
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: secretRole.Name},
				Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: alice.Username}}}
			Expect(k8sClient.Create(ctx, secretBinding)).To(Succeed())
			grant(ctx, ns, ergonv1alpha1.GroupVersion.Group, []string{"runs", "scenes"}, nil, []string{"get", "create"})
			mayRead := func(g Gomega) bool {
				sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: alice.Username,
					Groups: alice.Groups, ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: "get",
						Resource: "secrets", Name: "team-token"}}}
				g.Expect(k8sClient.Create(ctx, sar)).To(Succeed())
				return sar.Status.Allowed
			}
			Eventually(mayRead).Should(BeTrue(), "RBAC sees the new binding")
			runAs(ctx, ns, "waits", "reads", alice)
			Eventually(func(g Gomega) {
				read := stepOf(g, getRun(ctx, ns, "waits"), "read")
				g.Expect(read.Reason).To(Equal(ergonv1alpha1.ReasonExceededQuota))
			}).WithTimeout(20 * time.Second).Should(Succeed())

			By("alice loses the right while her pod waits; then there is room")
			Expect(k8sClient.Delete(ctx, secretBinding)).To(Succeed())
			Eventually(mayRead).Should(BeFalse(), "RBAC sees the binding gone")
			time.Sleep(authz.DefaultTTL) // what the manager decided before is reused no longer
			setUsed("0")
			Eventually(func(g Gomega) {
				read := stepOf(g, getRun(ctx, ns, "waits"), "read")
				g.Expect(read.Phase).To(Equal(ergonv1alpha1.StepFailed))
				g.Expect(read.Reason).To(Equal(ergonv1alpha1.ReasonNotAuthorized))
				g.Expect(read.Message).To(ContainSubstring("get secrets team-token in namespace " + ns))
			}).WithTimeout(40 * time.Second).Should(Succeed())
			for _, p := range podsOf(ctx, ns) {
				Expect(p.Labels[ergonv1alpha1.LabelStep]).NotTo(Equal("read"), "the pod was created for a right she no longer has")
			}
		})

	It("refuses what the Run's person may do when the Scene's last editor may not", func(ctx SpecContext) {
		ns := newNamespace(ctx, echoLastArg)
		// Mallory edited the Scene to read a Secret only alice may read, and alice runs it.
		scene := &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: "borrowed", Namespace: ns}}
		scene.Spec.Steps = []ergonv1alpha1.Step{secretStep("read", "alices-token")}
		identity.Stamp(scene, ergonv1alpha1.AnnotationEditor, ergonv1alpha1.UserIdentity{Username: "mallory"})
		Expect(k8sClient.Create(ctx, scene)).To(Succeed())
		grant(ctx, ns, "", []string{"secrets"}, []string{"alices-token"}, []string{"get"})
		grant(ctx, ns, ergonv1alpha1.GroupVersion.Group, []string{"runs", "scenes"}, nil, []string{"get", "create"})
		runAs(ctx, ns, "by-alice", "borrowed", alice)

		done := finished(ctx, ns, "by-alice")
		Expect(done.Status.SceneEditors).To(ContainElement(HaveField("Username", "mallory")))
		read := stepStatus(done, "read")
		Expect(read.Reason).To(Equal(ergonv1alpha1.ReasonNotAuthorized))
		Expect(read.Message).To(And(ContainSubstring("mallory"), ContainSubstring("alices-token")))
	})

	It("starts nothing for a person who may no longer run the Scene, as a Trigger's last editor who left", func(ctx SpecContext) {
		ns := newNamespace(ctx, echoLastArg)
		createScene(ctx, ns, "plain", container("one", "hello"))
		runAs(ctx, ns, "by-alice", "plain", alice) // alice has no role here
		done := finished(ctx, ns, "by-alice")
		Expect(done.Status.Phase).To(Equal(ergonv1alpha1.RunFailed))
		Expect(done.Status.Conditions).To(ContainElement(And(HaveField("Reason", ergonv1alpha1.ReasonNotAuthorized),
			HaveField("Message", ContainSubstring("alice (the Run's identity) may not create runs.ergon.dev")))))
		Expect(podsOf(ctx, ns)).To(BeEmpty())
	})

	It("hands the Run's identity and Scene editors to its child Runs", func(ctx SpecContext) {
		ns := newNamespace(ctx, echoLastArg)
		createScene(ctx, ns, "inner", container("one", "hello"))
		createScene(ctx, ns, "outer", ergonv1alpha1.Step{Name: "call", Scene: &ergonv1alpha1.SceneCall{Name: "inner"}})
		grant(ctx, ns, ergonv1alpha1.GroupVersion.Group, []string{"scenes", "runs"}, nil, []string{"get", "create"})
		runAs(ctx, ns, "by-alice", "outer", alice)
		Expect(finished(ctx, ns, "by-alice").Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded))
		runs := &ergonv1alpha1.RunList{}
		Expect(k8sClient.List(ctx, runs, client.InNamespace(ns),
			client.MatchingLabels{ergonv1alpha1.LabelParentRun: "by-alice"})).To(Succeed())
		Expect(runs.Items).To(HaveLen(1))
		id, ok, err := identity.Of(&runs.Items[0], ergonv1alpha1.AnnotationIdentity)
		Expect(err).NotTo(HaveOccurred())
		Expect(ok).To(BeTrue())
		Expect(identity.Key(id)).To(Equal(identity.Key(alice)))
		Expect(runs.Items[0].Status.SceneEditors).To(ContainElement(HaveField("Username", suiteUser.Username)))
	})

	It("starts no retry or rerun for a person who may not get the Run it names, and copies nothing of it", func(ctx SpecContext) {
		ns := newNamespace(ctx, echoLastArg)
		createScene(ctx, ns, "report", container("fetch", "facts"), container("write", "brief", "fetch"))
		grant(ctx, ns, ergonv1alpha1.GroupVersion.Group, []string{"runs"}, nil, []string{"create"})
		grant(ctx, ns, ergonv1alpha1.GroupVersion.Group, []string{"runs"}, []string{"someone-elses"}, []string{"get"})
		// RBAC sees new bindings a moment after they are made.
		allowed := func(verb, name string) func(Gomega) {
			return func(g Gomega) {
				sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: alice.Username,
					Groups: alice.Groups, ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: verb,
						Group: ergonv1alpha1.GroupVersion.Group, Resource: "runs", Name: name}}}
				g.Expect(k8sClient.Create(ctx, sar)).To(Succeed())
				g.Expect(sar.Status.Allowed).To(BeTrue())
			}
		}
		Eventually(allowed("create", "")).Should(Succeed())
		Eventually(allowed("get", "someone-elses")).Should(Succeed())
		runAs(ctx, ns, "orig", "report", alice)
		Expect(finished(ctx, ns, "orig").Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded))

		rerunAs := func(name string) *ergonv1alpha1.Run {
			run := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
				Spec: ergonv1alpha1.RunSpec{SceneRef: corev1.LocalObjectReference{Name: "report"},
					RetryOf: &ergonv1alpha1.RetryReference{Name: "orig", From: "write"}}}
			identity.Stamp(run, ergonv1alpha1.AnnotationIdentity, alice)
			Expect(k8sClient.Create(ctx, run)).To(Succeed())
			return finished(ctx, ns, name)
		}
		refused := rerunAs("again")
		Expect(refused.Status.Phase).To(Equal(ergonv1alpha1.RunFailed))
		cond := meta.FindStatusCondition(refused.Status.Conditions, ergonv1alpha1.ConditionSucceeded)
		Expect(cond).NotTo(BeNil())
		Expect(cond.Reason).To(Equal(ergonv1alpha1.ReasonNotAuthorized))
		Expect(cond.Message).To(ContainSubstring("alice (the Run's identity) may not get runs.ergon.dev orig in namespace " + ns))
		Expect(refused.Status.Steps).To(BeEmpty(), "no output of orig was reused")

		By("rerunning once the person may get the Run (and the refusal, cached for authz.DefaultTTL, expired)")
		grant(ctx, ns, ergonv1alpha1.GroupVersion.Group, []string{"runs"}, []string{"orig"}, []string{"get"})
		Eventually(allowed("get", "orig")).Should(Succeed())
		time.Sleep(authz.DefaultTTL)
		again := rerunAs("again-2")
		Expect(again.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded), "%+v", again.Status.Conditions)
		Expect(stepStatus(again, "fetch").Reason).To(Equal(ergonv1alpha1.ReasonReused))
	})
})
