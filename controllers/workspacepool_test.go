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
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/identity"
	"github.com/ergon-dev/ergon/internal/workspace"
)

// WorkspacePools against a real API server. There is no kubelet and no volume provisioner:
// the specs start the warm pods and bind their claims as those would.

// newPool is a pool of newWorkspace's shape, made for who (as admission would stamp it).
func newPool(ns, name string, replicas int32, who *ergonv1alpha1.UserIdentity) *ergonv1alpha1.WorkspacePool {
	shape := newWorkspace(ns, "shape").Spec
	pool := &ergonv1alpha1.WorkspacePool{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: ergonv1alpha1.WorkspacePoolSpec{Replicas: replicas, Template: ergonv1alpha1.WorkspacePoolTemplate{
			Image: shape.Image, Resources: shape.Resources, Storage: shape.Storage}}}
	if who != nil {
		identity.Stamp(pool, ergonv1alpha1.AnnotationIdentity, *who)
	}
	return pool
}

// grantUser lets user do verbs on resources of group in ns.
func grantUser(ctx context.Context, ns, user, group string, resources, verbs []string) {
	GinkgoHelper()
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{GenerateName: "grant-", Namespace: ns},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{group}, Resources: resources, Verbs: verbs}}}
	Expect(k8sClient.Create(ctx, role)).To(Succeed())
	Expect(k8sClient.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{GenerateName: "grant-", Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}})).To(Succeed())
}

// warmUp waits for the pool to record n entries, then starts their pods and binds their
// claims, as the kubelet and a provisioner would, and waits for the pool to count them ready.
func warmUp(ctx context.Context, ns, name string, n int) []ergonv1alpha1.WorkspacePoolEntry {
	GinkgoHelper()
	pool := &ergonv1alpha1.WorkspacePool{}
	Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, pool)).To(Succeed())
		g.Expect(pool.Status.Entries).To(HaveLen(n))
	}).WithTimeout(20 * time.Second).Should(Succeed())
	for _, e := range pool.Status.Entries {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: e.Name}}
		startPod(ctx, pod)
		Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			claim := &corev1.PersistentVolumeClaim{}
			if err := k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: e.Name}, claim); err != nil {
				return err
			}
			claim.Status.Phase = corev1.ClaimBound
			return k8sClient.Status().Update(ctx, claim)
		})).To(Succeed())
	}
	Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, pool)).To(Succeed())
		g.Expect(pool.Status.Ready).To(BeEquivalentTo(n))
	}).WithTimeout(20 * time.Second).Should(Succeed())
	return pool.Status.Entries
}

func poolOf(ctx context.Context, g Gomega, ns, name string) *ergonv1alpha1.WorkspacePool {
	pool := &ergonv1alpha1.WorkspacePool{}
	g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, pool)).To(Succeed())
	return pool
}

var _ = Describe("WorkspacePool", func() {
	alice := ergonv1alpha1.UserIdentity{Username: "pool-admin", UID: "p-1", Groups: []string{"system:authenticated"}}

	It("keeps warm pods that new Workspaces of its shape take, each once, for one user, and makes more", func(ctx SpecContext) {
		ns := newNamespace(ctx, nil)
		grantUser(ctx, ns, alice.Username, "", []string{"pods", "persistentvolumeclaims"}, []string{"create"})
		pool := newPool(ns, "warm", 2, &alice)
		Expect(k8sClient.Create(ctx, pool)).To(Succeed())
		expectHealth(ctx, "WorkspacePool", ns, "warm", progressing)

		entries := warmUp(ctx, ns, "warm", 2)
		names := map[string]ergonv1alpha1.WorkspacePoolEntry{}
		for _, e := range entries {
			Expect(e.Name).To(HavePrefix(workspace.PoolPrefix))
			names[e.Name] = e
			pod := &corev1.Pod{}
			Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: e.Name}, pod)).To(Succeed())
			Expect(pod.UID).To(Equal(e.PodUID))
			Expect(pod.Labels).NotTo(HaveKey(ergonv1alpha1.LabelWorkspaceUID), "no Workspace's policy or controller selects a warm pod")
			Expect(pod.Spec.AutomountServiceAccountToken).To(HaveValue(BeFalse()))
			Expect(pod.Spec.Volumes).To(ContainElement(HaveField("PersistentVolumeClaim.ClaimName", e.Name)))
		}
		expectHealth(ctx, "WorkspacePool", ns, "warm", current)

		By("a new Workspace of the pool's shape takes a warm pod and its volume, and is Running at once")
		desk := newWorkspace(ns, "desk")
		createWorkspace(ctx, desk)
		running := workspaceIn(ctx, ns, "desk", ergonv1alpha1.WorkspaceRunning, ergonv1alpha1.ReasonPodRunning)
		took, ok := names[running.Status.PodName]
		Expect(ok).To(BeTrue(), "the Workspace runs on one of the warm pods, not %s", running.Status.PodName)
		Expect(running.Status.ClaimName).To(Equal(took.Name))
		Expect(running.Status.ClaimUID).To(Equal(took.ClaimUID))
		pod := &corev1.Pod{}
		Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: took.Name}, pod)).To(Succeed())
		Expect(pod.UID).To(Equal(took.PodUID))
		Expect(metav1.GetControllerOf(pod).UID).To(Equal(running.UID))
		Expect(pod.Labels).To(HaveKeyWithValue(ergonv1alpha1.LabelWorkspaceUID, string(running.UID)))
		Expect(pod.Labels).NotTo(HaveKey(ergonv1alpha1.LabelWorkspacePoolUID))
		Eventually(func(g Gomega) []string { return workspaceEvents(ctx, g, ns, "desk") }).Should(ContainElement("TookWarmPod"))
		Consistently(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: workspace.ObjectName(running)}, &corev1.Pod{})).
				NotTo(Succeed(), "the Workspace keeps the warm pod rather than starting its own")
		}).WithTimeout(2 * time.Second).Should(Succeed())

		By("another user's Workspace takes the other warm pod, never the same one")
		other := newWorkspace(ns, "bench")
		other.Spec.User = "bob"
		createWorkspace(ctx, other)
		second := workspaceIn(ctx, ns, "bench", ergonv1alpha1.WorkspaceRunning, ergonv1alpha1.ReasonPodRunning)
		Expect(names).To(HaveKey(second.Status.PodName))
		Expect(second.Status.PodName).NotTo(Equal(took.Name))

		By("the pool records neither again, counts them taken, and makes two new ones")
		Eventually(func(g Gomega) {
			p := poolOf(ctx, g, ns, "warm")
			g.Expect(p.Status.Taken).To(BeEquivalentTo(2))
			g.Expect(p.Status.Entries).To(HaveLen(2))
			for _, e := range p.Status.Entries {
				g.Expect(names).NotTo(HaveKey(e.Name))
			}
		}).WithTimeout(20 * time.Second).Should(Succeed())

		By("a Workspace of another shape makes its own pod and volume")
		big := newWorkspace(ns, "big")
		big.Spec.Image = "busybox:other"
		createWorkspace(ctx, big)
		Eventually(func(g Gomega) {
			ws := getWorkspace(ctx, g, ns, "big")
			g.Expect(ws.Status.ClaimName).To(Equal(workspace.ObjectName(ws)))
			g.Expect(ws.Status.PodName).To(Equal(workspace.ObjectName(ws)))
		}).WithTimeout(20 * time.Second).Should(Succeed())

		By("a new template replaces the warm pods not taken; the taken ones stay their Workspaces'")
		Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			p := &ergonv1alpha1.WorkspacePool{}
			if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(pool), p); err != nil {
				return err
			}
			p.Spec.Template.Image = "busybox:newer"
			return k8sClient.Update(ctx, p)
		})).To(Succeed())
		Eventually(func(g Gomega) {
			p := poolOf(ctx, g, ns, "warm")
			g.Expect(p.Status.Entries).To(HaveLen(2))
			for _, e := range p.Status.Entries {
				pod := &corev1.Pod{}
				g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: e.Name}, pod)).To(Succeed())
				g.Expect(pod.Spec.Containers[0].Image).To(Equal("busybox:newer"))
			}
		}).WithTimeout(20 * time.Second).Should(Succeed())
		Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: took.Name}, pod)).To(Succeed())
		Expect(pod.DeletionTimestamp).To(BeNil())
		Expect(metav1.GetControllerOf(pod).UID).To(Equal(running.UID))
	})

	It("makes no warm pods for an editor who may not create them, or for a pool admission did not stamp", func(ctx SpecContext) {
		ns := newNamespace(ctx, nil)
		Expect(k8sClient.Create(ctx, newPool(ns, "unstamped", 1, nil))).To(Succeed())
		mallory := ergonv1alpha1.UserIdentity{Username: "mallory", UID: "m-1", Groups: []string{"system:authenticated"}}
		Expect(k8sClient.Create(ctx, newPool(ns, "borrowed", 1, &mallory))).To(Succeed())
		for name, reason := range map[string]string{"unstamped": ergonv1alpha1.ReasonNoIdentity, "borrowed": ergonv1alpha1.ReasonNotAuthorized} {
			Eventually(func(g Gomega) {
				ready := meta.FindStatusCondition(poolOf(ctx, g, ns, name).Status.Conditions, ergonv1alpha1.ConditionReady)
				g.Expect(ready).NotTo(BeNil())
				g.Expect(ready.Reason).To(Equal(reason))
			}).WithTimeout(20*time.Second).Should(Succeed(), name)
			expectHealth(ctx, "WorkspacePool", ns, name, failed)
		}
		ready := meta.FindStatusCondition(poolOf(ctx, Default, ns, "borrowed").Status.Conditions, ergonv1alpha1.ConditionReady)
		Expect(ready.Message).To(And(ContainSubstring("mallory"), ContainSubstring("create pods")))
		pods := &corev1.PodList{}
		Expect(k8sClient.List(ctx, pods, client.InNamespace(ns))).To(Succeed())
		Expect(pods.Items).To(BeEmpty())
	})

	It("never hands a Workspace a pod and claim that only name the pool as their owner", func(ctx SpecContext) {
		ns := newNamespace(ctx, nil)
		grantUser(ctx, ns, alice.Username, "", []string{"pods", "persistentvolumeclaims"}, []string{"create"})
		pool := newPool(ns, "warm", 0, &alice)
		Expect(k8sClient.Create(ctx, pool)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(meta.IsStatusConditionTrue(poolOf(ctx, g, ns, "warm").Status.Conditions, ergonv1alpha1.ConditionReady)).To(BeTrue())
		}).WithTimeout(20 * time.Second).Should(Succeed())

		By("a tenant plants a pod and claim of the pool's shape, owned by the pool, and even a record of them")
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(pool), pool)).To(Succeed())
		claim := workspace.PoolClaim(pool)
		claim.GenerateName, claim.Name = "", workspace.PoolPrefix+"planted"
		Expect(k8sClient.Create(ctx, claim)).To(Succeed())
		planted := workspace.PoolPod(pool, "ergon:test", claim.Name)
		Expect(k8sClient.Create(ctx, planted)).To(Succeed())
		startPod(ctx, planted)
		desk := newWorkspace(ns, "desk")
		createWorkspace(ctx, desk)
		Eventually(func(g Gomega) {
			ws := getWorkspace(ctx, g, ns, "desk")
			g.Expect(ws.Status.ClaimName).To(Equal(workspace.ObjectName(ws)), "the Workspace makes its own volume")
			g.Expect(ws.Status.PodName).NotTo(HavePrefix(workspace.PoolPrefix))
		}).WithTimeout(20 * time.Second).Should(Succeed())
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(planted), planted)).To(Succeed())
		Expect(strings.HasPrefix(planted.Name, workspace.PoolPrefix)).To(BeTrue())
		Expect(metav1.GetControllerOf(planted).UID).To(Equal(pool.UID), "the planted pod was not taken")
	})
})
