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
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/naming"
	"github.com/ergon-dev/ergon/internal/workspace"
)

// Issue 31: a Workspace's controller creates, uses and deletes only what the Workspace owns by
// UID, and its selectors reach its own pods alone.

// squatterClaim is a claim someone other than Ergon made under a name, labelled as Ergon's.
func squatterClaim(ns, name string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
			Labels: map[string]string{ergonv1alpha1.LabelManagedBy: ergonv1alpha1.ManagedByErgon}},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
	}
}

var _ = Describe("Workspace ownership", func() {
	It("never mounts a claim someone made under a name the user's Workspace could be given", func(ctx SpecContext) {
		ns := newNamespace(ctx, nil)
		// The name is a hash of the user: anyone who knows the user can make it first.
		squatted := squatterClaim(ns, naming.LegacyWorkspaceName("alice"))
		Expect(k8sClient.Create(ctx, squatted)).To(Succeed())
		createWorkspace(ctx, newWorkspace(ns, "desk"))

		pod := workspacePod(ctx, ns, "desk", "")
		claim := ownClaim(ctx, ns, "desk")
		Expect(claim.UID).NotTo(Equal(squatted.UID))
		var mounted []string
		for _, v := range pod.Spec.Volumes {
			if v.PersistentVolumeClaim != nil {
				mounted = append(mounted, v.PersistentVolumeClaim.ClaimName)
			}
		}
		Expect(mounted).To(Equal([]string{claim.Name}), "the pod mounts its own claim, not %s", squatted.Name)
		workspaceIn(ctx, ns, "desk", ergonv1alpha1.WorkspacePending, ergonv1alpha1.ReasonPodPending)

		By("and, deleted with Delete, deletes its own claim and leaves the other alone")
		Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			ws := getWorkspace(ctx, Default, ns, "desk")
			ws.Spec.ReclaimPolicy = ergonv1alpha1.ReclaimDelete
			return k8sClient.Update(ctx, ws)
		})).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(claim), claim)).To(Succeed())
			g.Expect(metav1.GetControllerOf(claim)).NotTo(BeNil(), "with Delete the Workspace controls its claim")
		}).Should(Succeed())
		Expect(k8sClient.Delete(ctx, getWorkspace(ctx, Default, ns, "desk"))).To(Succeed())
		Eventually(gone(ctx, claim)).Should(BeTrue())
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(squatted), squatted)).To(Succeed())
		Expect(squatted.DeletionTimestamp).To(BeNil())
		Expect(squatted.OwnerReferences).To(BeEmpty())
	})

	It("deletes, with reclaimPolicy Delete, only a claim it controls, never another Workspace's of the same user", func(ctx SpecContext) {
		ns := newNamespace(ctx, nil)
		createWorkspace(ctx, newWorkspace(ns, "desk"))
		workspacePod(ctx, ns, "desk", "")
		alices := ownClaim(ctx, ns, "desk")

		// Someone else's Workspace naming alice as its user, set to delete its volume.
		intruder := newWorkspace(ns, "intruder")
		intruder.Spec.ReclaimPolicy = ergonv1alpha1.ReclaimDelete
		createWorkspace(ctx, intruder)
		Eventually(func(g Gomega) {
			g.Expect(getWorkspace(ctx, g, ns, "intruder").Finalizers).To(ContainElement(ergonv1alpha1.FinalizerWorkspaceVolume))
		}).Should(Succeed())
		Expect(k8sClient.Delete(ctx, getWorkspace(ctx, Default, ns, "intruder"))).To(Succeed())
		Eventually(func() bool {
			return gone(ctx, &ergonv1alpha1.Workspace{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "intruder"}})()
		}).Should(BeTrue())
		Consistently(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(alices), alices)).To(Succeed())
			g.Expect(alices.DeletionTimestamp).To(BeNil(), "the intruder's finalizer deleted alice's claim")
		}, "2s").Should(Succeed())
	})

	It("leaves an object under its name that it does not control alone, and says which (NameConflict)", func(ctx SpecContext) {
		ns := newNamespace(ctx, nil)
		ws := newWorkspace(ns, "studio")
		ws.Spec.IdleTimeout = &metav1.Duration{Duration: 2 * time.Second}
		createWorkspace(ctx, ws)
		first := workspacePod(ctx, ns, "studio", "")
		workspaceIn(ctx, ns, "studio", ergonv1alpha1.WorkspaceIdle, ergonv1alpha1.ReasonIdle)
		Eventually(func() bool {
			return apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKeyFromObject(first), &corev1.Pod{}))
		}).Should(BeTrue())

		// While it is Idle, someone makes a pod under its pod's name.
		squatter := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: first.Name,
			Labels: map[string]string{ergonv1alpha1.LabelManagedBy: ergonv1alpha1.ManagedByErgon}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "evil:1"}}}}
		Eventually(func() error { return k8sClient.Create(ctx, squatter) }).Should(Succeed())
		Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			ws := getWorkspace(ctx, Default, ns, "studio")
			ws.Annotations = map[string]string{ergonv1alpha1.AnnotationWorkspaceTouch: time.Now().UTC().Format(time.RFC3339)}
			return k8sClient.Update(ctx, ws)
		})).To(Succeed())
		failedWs := workspaceIn(ctx, ns, "studio", ergonv1alpha1.WorkspaceFailed, ergonv1alpha1.ReasonNameConflict)
		ready := meta.FindStatusCondition(failedWs.Status.Conditions, ergonv1alpha1.ConditionReady)
		Expect(ready.Message).To(And(ContainSubstring("pod "+squatter.Name), ContainSubstring("create it again")))

		By("deleted, it deletes nothing of the squatter's")
		Expect(k8sClient.Delete(ctx, getWorkspace(ctx, Default, ns, "studio"))).To(Succeed())
		Eventually(gone(ctx, &ergonv1alpha1.Workspace{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "studio"}})).Should(BeTrue())
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(squatter), squatter)).To(Succeed())
		Expect(squatter.DeletionTimestamp).To(BeNil())
	})

	It("gives two Workspaces whose names shorten to one label value NetworkPolicies that never select each other's pods",
		func(ctx SpecContext) {
			ns := newNamespace(ctx, nil)
			long := newWorkspace(ns, strings.Repeat("w", 70))
			long.Spec.Network = &ergonv1alpha1.WorkspaceNetwork{Egress: ergonv1alpha1.EgressDeny}
			// A 63-character name equal to the label value the long name shortens to, and egress Allow.
			short := newWorkspace(ns, naming.LabelValue(long.Name))
			short.Spec.User = "mallory"
			short.Spec.Network = &ergonv1alpha1.WorkspaceNetwork{Egress: ergonv1alpha1.EgressAllow}
			createWorkspace(ctx, long)
			createWorkspace(ctx, short)
			Expect(naming.LabelValue(long.Name)).To(Equal(naming.LabelValue(short.Name)), "the names must collide as label values")

			policyOf := func(ws *ergonv1alpha1.Workspace) *networkingv1.NetworkPolicy {
				GinkgoHelper()
				np := &networkingv1.NetworkPolicy{}
				Eventually(func() error {
					return k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: workspace.ObjectName(ws)}, np)
				}).Should(Succeed())
				return np
			}
			// A step pod bound to the long-named Workspace, labelled as the Run controller labels it (workspace.Labels).
			step := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "step",
				Labels: workspace.Labels(getWorkspace(ctx, Default, ns, long.Name))}}
			for _, ws := range []*ergonv1alpha1.Workspace{long, short} {
				other := long
				if ws == long {
					other = short
				}
				np := policyOf(ws)
				selector, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
				Expect(err).NotTo(HaveOccurred())
				Expect(selector.Matches(labels.Set(workspacePod(ctx, ns, ws.Name, "").Labels))).To(BeTrue(),
					"the policy of %s selects its own pod", ws.Name)
				Expect(selector.Matches(labels.Set(workspacePod(ctx, ns, other.Name, "").Labels))).To(BeFalse(),
					"the policy of %s selects the pod of %s: their policies add up", ws.Name, other.Name)
				Expect(selector.Matches(labels.Set(step.Labels))).To(Equal(ws == long),
					"the step bound to %s is selected by the policy of %s", long.Name, ws.Name)
			}
		})
})
