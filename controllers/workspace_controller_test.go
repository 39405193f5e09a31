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
	eventsv1 "k8s.io/api/events/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/naming"
	"github.com/ergon-dev/ergon/internal/workspace"
)

// The Workspace controller against a real API server. There is no kubelet: the specs move the
// workspace pod's status as the kubelet would, and no garbage collector: they delete what it
// would.

func createWorkspace(ctx context.Context, ws *ergonv1alpha1.Workspace) {
	GinkgoHelper()
	Expect(k8sClient.Create(ctx, ws)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) {
		// Let the finalizer go with the Workspace, whatever the spec left.
		_ = k8sClient.Delete(ctx, ws)
	})
}

func getWorkspace(ctx context.Context, g Gomega, ns, name string) *ergonv1alpha1.Workspace {
	ws := &ergonv1alpha1.Workspace{}
	g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, ws)).To(Succeed())
	return ws
}

// workspaceIn waits until a Workspace has a phase and Ready reason, and returns it.
func workspaceIn(ctx context.Context, ns, name string, phase ergonv1alpha1.WorkspacePhase, reason string) *ergonv1alpha1.Workspace {
	GinkgoHelper()
	var ws *ergonv1alpha1.Workspace
	Eventually(func(g Gomega) {
		ws = getWorkspace(ctx, g, ns, name)
		g.Expect(ws.Status.Phase).To(Equal(phase))
		ready := meta.FindStatusCondition(ws.Status.Conditions, ergonv1alpha1.ConditionReady)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Reason).To(Equal(reason))
		g.Expect(ready.ObservedGeneration).To(Equal(ws.Generation))
		g.Expect(ws.Status.ObservedGeneration).To(Equal(ws.Generation))
	}).WithTimeout(20 * time.Second).Should(Succeed())
	return ws
}

// workspacePod waits for the pod of a Workspace that is not the one of UID old, and returns it.
func workspacePod(ctx context.Context, ns, name string, old types.UID) *corev1.Pod {
	GinkgoHelper()
	pod := &corev1.Pod{}
	Eventually(func(g Gomega) {
		ws := getWorkspace(ctx, g, ns, name)
		g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: workspace.ObjectName(ws)}, pod)).To(Succeed())
		g.Expect(pod.UID).NotTo(Equal(old))
	}).WithTimeout(20 * time.Second).Should(Succeed())
	return pod
}

// ownClaim waits until a Workspace's status records its claim, and returns the claim.
func ownClaim(ctx context.Context, ns, name string) *corev1.PersistentVolumeClaim {
	GinkgoHelper()
	claim := &corev1.PersistentVolumeClaim{}
	Eventually(func(g Gomega) {
		ws := getWorkspace(ctx, g, ns, name)
		g.Expect(ws.Status.ClaimUID).NotTo(BeEmpty())
		g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: ws.Status.ClaimName}, claim)).To(Succeed())
		g.Expect(claim.UID).To(Equal(ws.Status.ClaimUID))
	}).WithTimeout(20 * time.Second).Should(Succeed())
	return claim
}

// startPod reports the pod running and ready, as the kubelet would.
func startPod(ctx context.Context, pod *corev1.Pod) {
	GinkgoHelper()
	Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
			return err
		}
		pod.Status.Phase = corev1.PodRunning
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		return k8sClient.Status().Update(ctx, pod)
	})).To(Succeed())
}

// workspaceEvents are the reasons of the Events about a Workspace.
func workspaceEvents(ctx context.Context, g Gomega, ns, name string) []string {
	list := &eventsv1.EventList{}
	g.Expect(k8sClient.List(ctx, list, client.InNamespace(ns))).To(Succeed())
	var reasons []string
	for _, e := range list.Items {
		if e.Regarding.Kind == "Workspace" && e.Regarding.Name == name {
			reasons = append(reasons, e.Reason)
		}
	}
	return reasons
}

func gone(ctx context.Context, obj client.Object) func() bool {
	return func() bool {
		err := k8sClient.Get(ctx, client.ObjectKeyFromObject(obj), obj)
		return apierrors.IsNotFound(err) || err == nil && !obj.GetDeletionTimestamp().IsZero()
	}
}

var _ = Describe("Workspace controller", func() {
	It("makes a claim, a hardened pod and a NetworkPolicy named for its UID, and is Running once the pod is", func(ctx SpecContext) {
		ns := newNamespace(ctx, nil)
		ws := newWorkspace(ns, "desk")
		ws.Spec.Storage.StorageClassName = new("local-path")
		ws.Spec.Network = &ergonv1alpha1.WorkspaceNetwork{Egress: ergonv1alpha1.EgressCIDRs, CIDRs: []string{"10.0.0.0/8"}}
		createWorkspace(ctx, ws)
		name := workspace.ObjectName(ws)
		Expect(name).NotTo(Equal(naming.LegacyWorkspaceName("alice")), "names nobody can know before the Workspace exists")

		pending := workspaceIn(ctx, ns, "desk", ergonv1alpha1.WorkspacePending, ergonv1alpha1.ReasonPodPending)
		Expect(pending.Status.PodName).To(Equal(name))
		Expect(pending.Status.ClaimName).To(Equal(name))
		Expect(pending.Status.LastActivityTime).NotTo(BeNil())
		Expect(pending.Finalizers).To(ContainElement(ergonv1alpha1.FinalizerWorkspaceVolume))
		expectHealth(ctx, "Workspace", ns, "desk", progressing)

		claim := ownClaim(ctx, ns, "desk")
		Expect(claim.Name).To(Equal(name))
		Expect(claim.Spec.Resources.Requests.Storage().String()).To(Equal("1Gi"))
		Expect(claim.Spec.StorageClassName).To(HaveValue(Equal("local-path")))
		Expect(claim.Labels).To(HaveKeyWithValue(ergonv1alpha1.LabelManagedBy, ergonv1alpha1.ManagedByErgon))
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(claim), claim)).To(Succeed())
			g.Expect(claim.OwnerReferences).To(BeEmpty(),
				"with Retain, once its UID is recorded, the reclaimPolicy, not the garbage collector, decides the claim's fate")
		}).Should(Succeed())

		policy := &networkingv1.NetworkPolicy{}
		Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, policy)).To(Succeed())
		Expect(policy.Spec.PodSelector.MatchLabels).To(Equal(map[string]string{ergonv1alpha1.LabelWorkspaceUID: string(ws.UID)}))
		Expect(policy.Spec.Ingress).To(BeEmpty())
		Expect(policy.Spec.PolicyTypes).To(ConsistOf(networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress))
		Expect(policy.Spec.Egress).To(HaveLen(1))
		Expect(policy.Spec.Egress[0].To).To(ConsistOf(HaveField("IPBlock.CIDR", "10.0.0.0/8")))

		pod := workspacePod(ctx, ns, "desk", "")
		Expect(pod.OwnerReferences).To(ConsistOf(HaveField("Name", "desk")))
		Expect(pod.Labels).To(HaveKeyWithValue(ergonv1alpha1.LabelWorkspace, "desk"))
		Expect(pod.Labels).To(HaveKeyWithValue(ergonv1alpha1.LabelWorkspaceUID, string(ws.UID)))
		Expect(pod.Spec.AutomountServiceAccountToken).To(HaveValue(BeFalse()))
		Expect(pod.Spec.SecurityContext.FSGroup).To(HaveValue(BeEquivalentTo(1000)))
		Expect(pod.Spec.Containers[0].Image).To(Equal("busybox:test"))
		Expect(pod.Spec.Volumes).To(ContainElement(HaveField("PersistentVolumeClaim.ClaimName", name)))

		startPod(ctx, pod)
		running := workspaceIn(ctx, ns, "desk", ergonv1alpha1.WorkspaceRunning, ergonv1alpha1.ReasonPodRunning)
		Expect(meta.IsStatusConditionTrue(running.Status.Conditions, ergonv1alpha1.ConditionReady)).To(BeTrue())
		expectHealth(ctx, "Workspace", ns, "desk", current)
		Eventually(func(g Gomega) []string { return workspaceEvents(ctx, g, ns, "desk") }).Should(ContainElement("Running"))

		By("a NetworkPolicy loosened by hand is put back")
		policy.Spec.Egress = []networkingv1.NetworkPolicyEgressRule{{}}
		Expect(k8sClient.Update(ctx, policy)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(policy), policy)).To(Succeed())
			g.Expect(policy.Spec.Egress[0].To).To(HaveLen(1))
		}).Should(Succeed())
	})

	It("stops an unused pod after its idle timeout, keeps the claim, and wakes for a step bound to it and for a touch", func(ctx SpecContext) {
		ns := newNamespace(ctx, nil)
		ws := newWorkspace(ns, "desk")
		ws.Spec.IdleTimeout = &metav1.Duration{Duration: 2 * time.Second}
		createWorkspace(ctx, ws)
		first := workspacePod(ctx, ns, "desk", "")
		startPod(ctx, first)

		idle := workspaceIn(ctx, ns, "desk", ergonv1alpha1.WorkspaceIdle, ergonv1alpha1.ReasonIdle)
		Expect(idle.Status.PodName).To(BeEmpty())
		Eventually(gone(ctx, first)).Should(BeTrue())
		claim := ownClaim(ctx, ns, "desk")
		Expect(claim.DeletionTimestamp).To(BeNil())
		expectHealth(ctx, "Workspace", ns, "desk", gitopsHealth{current.kstatus, "Suspended"})

		By("a step pod bound to it wakes it")
		// A step pod, as the Run controller makes it: the manager caches only Run-controlled pods whole.
		step := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "step", Namespace: ns, Labels: map[string]string{
			ergonv1alpha1.LabelManagedBy: ergonv1alpha1.ManagedByErgon, ergonv1alpha1.LabelWorkspace: "desk",
			ergonv1alpha1.LabelWorkspaceUID: string(ws.UID)},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: ergonv1alpha1.GroupVersion.String(), Kind: "Run",
				Name: "a-run", UID: "a-run-uid", Controller: new(true)}}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox:test"}}}}
		Expect(k8sClient.Create(ctx, step)).To(Succeed())
		second := workspacePod(ctx, ns, "desk", first.UID)
		startPod(ctx, second)
		workspaceIn(ctx, ns, "desk", ergonv1alpha1.WorkspaceRunning, ergonv1alpha1.ReasonPodRunning)
		Eventually(func(g Gomega) []string { return workspaceEvents(ctx, g, ns, "desk") }).Should(ContainElements("Stopping", "Waking"))
		Consistently(func(g Gomega) ergonv1alpha1.WorkspacePhase { return getWorkspace(ctx, g, ns, "desk").Status.Phase }, "3s").
			Should(Equal(ergonv1alpha1.WorkspaceRunning), "a step working on the volume keeps the Workspace up")

		By("once the step is gone it stops again, and a touch wakes it")
		Expect(k8sClient.Delete(ctx, step, client.GracePeriodSeconds(0))).To(Succeed())
		workspaceIn(ctx, ns, "desk", ergonv1alpha1.WorkspaceIdle, ergonv1alpha1.ReasonIdle)
		Eventually(gone(ctx, second)).Should(BeTrue())
		Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			ws := getWorkspace(ctx, Default, ns, "desk")
			ws.Annotations = map[string]string{ergonv1alpha1.AnnotationWorkspaceTouch: time.Now().UTC().Format(time.RFC3339)}
			return k8sClient.Update(ctx, ws)
		})).To(Succeed())
		workspacePod(ctx, ns, "desk", second.UID)
		workspaceIn(ctx, ns, "desk", ergonv1alpha1.WorkspacePending, ergonv1alpha1.ReasonPodPending)
	})

	It("replaces the pod when the image changes and mounts the same claim", func(ctx SpecContext) {
		ns := newNamespace(ctx, nil)
		createWorkspace(ctx, newWorkspace(ns, "desk"))
		old := workspacePod(ctx, ns, "desk", "")
		startPod(ctx, old)
		workspaceIn(ctx, ns, "desk", ergonv1alpha1.WorkspaceRunning, ergonv1alpha1.ReasonPodRunning)
		claim := ownClaim(ctx, ns, "desk")

		Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			ws := getWorkspace(ctx, Default, ns, "desk")
			ws.Spec.Image = "busybox:next"
			return k8sClient.Update(ctx, ws)
		})).To(Succeed())
		pod := workspacePod(ctx, ns, "desk", old.UID)
		Expect(pod.Spec.Containers[0].Image).To(Equal("busybox:next"))
		Expect(pod.Spec.Volumes).To(ContainElement(HaveField("PersistentVolumeClaim.ClaimName", claim.Name)))
		startPod(ctx, pod)
		workspaceIn(ctx, ns, "desk", ergonv1alpha1.WorkspaceRunning, ergonv1alpha1.ReasonPodRunning)
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(claim), claim)).To(Succeed())
		Expect(claim.DeletionTimestamp).To(BeNil())
		Eventually(func(g Gomega) []string { return workspaceEvents(ctx, g, ns, "desk") }).Should(ContainElement("Replacing"))
	})

	It("keeps the claim of a deleted Workspace with Retain, released, and never mounts it again; deletes it with Delete",
		func(ctx SpecContext) {
			ns := newNamespace(ctx, nil)
			createWorkspace(ctx, newWorkspace(ns, "desk"))
			workspacePod(ctx, ns, "desk", "")
			kept := ownClaim(ctx, ns, "desk")

			Expect(k8sClient.Delete(ctx, getWorkspace(ctx, Default, ns, "desk"))).To(Succeed())
			Eventually(func() bool {
				return apierrors.IsNotFound(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "desk"}, &ergonv1alpha1.Workspace{}))
			}).Should(BeTrue(), "the finalizer goes once the policy is applied")
			Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(kept), kept)).To(Succeed())
			Expect(kept.DeletionTimestamp).To(BeNil())
			Expect(kept.OwnerReferences).To(BeEmpty(), "released: no garbage collection takes it")

			By("a new Workspace of the same user makes a claim of its own: it cannot prove the kept one is")
			again := newWorkspace(ns, "desk-2")
			again.Spec.ReclaimPolicy = ergonv1alpha1.ReclaimDelete
			createWorkspace(ctx, again)
			pod := workspacePod(ctx, ns, "desk-2", "")
			Expect(pod.OwnerReferences).To(ConsistOf(HaveField("Name", "desk-2")))
			claim := ownClaim(ctx, ns, "desk-2")
			Expect(claim.UID).NotTo(Equal(kept.UID))
			Expect(pod.Spec.Volumes).To(ContainElement(HaveField("PersistentVolumeClaim.ClaimName", claim.Name)))
			Expect(metav1.GetControllerOf(claim)).To(HaveField("UID", again.UID), "with Delete, the Workspace controls its claim")

			By("with Delete, its own claim goes with the Workspace, and the released one stays")
			Expect(k8sClient.Delete(ctx, getWorkspace(ctx, Default, ns, "desk-2"))).To(Succeed())
			Eventually(gone(ctx, claim)).Should(BeTrue())
			Eventually(func(g Gomega) []string { return workspaceEvents(ctx, g, ns, "desk-2") }).Should(ContainElement("VolumeDeleted"))
			Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(kept), kept)).To(Succeed())
			Expect(kept.DeletionTimestamp).To(BeNil())
		})

	It("runs a second Workspace of the same user on objects of its own, and fails a pod that cannot pull its image", func(ctx SpecContext) {
		ns := newNamespace(ctx, nil)
		createWorkspace(ctx, newWorkspace(ns, "desk"))
		pod := workspacePod(ctx, ns, "desk", "")
		createWorkspace(ctx, newWorkspace(ns, "desk-too"))
		other := workspacePod(ctx, ns, "desk-too", "")
		Expect(other.Name).NotTo(Equal(pod.Name))
		Expect(ownClaim(ctx, ns, "desk-too").Name).NotTo(Equal(ownClaim(ctx, ns, "desk").Name))
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(pod), pod)).To(Succeed())
		Expect(pod.OwnerReferences).To(ConsistOf(HaveField("Name", "desk")), "the first Workspace's pod is left alone")

		Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
				return err
			}
			pod.Status.Phase = corev1.PodPending
			pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: workspace.Container, Image: "busybox:test",
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "Back-off pulling image"}}}}
			return k8sClient.Status().Update(ctx, pod)
		})).To(Succeed())
		failedWs := workspaceIn(ctx, ns, "desk", ergonv1alpha1.WorkspaceFailed, ergonv1alpha1.ReasonPodFailed)
		ready := meta.FindStatusCondition(failedWs.Status.Conditions, ergonv1alpha1.ConditionReady)
		Expect(ready.Message).To(ContainSubstring("ImagePullBackOff"))
		expectHealth(ctx, "Workspace", ns, "desk", failed)
		Eventually(func(g Gomega) []string { return workspaceEvents(ctx, g, ns, "desk") }).Should(ContainElement(ergonv1alpha1.ReasonPodFailed))
	})
})
