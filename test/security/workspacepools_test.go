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
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/identity"
)

// A WorkspacePool makes the manager create pods and volumes in the namespace, and its status is
// the record of which of them a Workspace may take.

func poolOf(ns string) *ergonv1alpha1.WorkspacePool {
	shape := workspaceOf(ns, "shape", "nobody").Spec
	return &ergonv1alpha1.WorkspacePool{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "warm"},
		Spec: ergonv1alpha1.WorkspacePoolSpec{Replicas: 1, Template: ergonv1alpha1.WorkspacePoolTemplate{
			Image: shape.Image, Resources: shape.Resources, Storage: shape.Storage}}}
}

var _ = Describe("Attack: a tenant with edit makes warm pods, or plants one for a victim to take", func() {
	It("may not create a pool; granted it by accident, the pool acts as them, not as whom they name", func() {
		ns := newNamespace()
		mallory := userClient(ns, "pool-mallory", roleEdit)
		Expect(apierrors.IsForbidden(mallory.Create(ctx, poolOf(ns)))).To(BeTrue(),
			"pools are a namespace administrator's: edit does not grant them")

		grantByAccident(ns, "pool-mallory", rbacv1.PolicyRule{APIGroups: []string{ergonv1alpha1.GroupVersion.Group},
			Resources: []string{"workspacepools"}, Verbs: []string{"create", "get"}})
		pool := poolOf(ns)
		identity.Stamp(pool, ergonv1alpha1.AnnotationIdentity, ergonv1alpha1.UserIdentity{
			Username: "pool-admin", Groups: []string{"system:masters"}})
		Expect(mallory.Create(ctx, pool)).To(Succeed())
		Expect(mallory.Get(ctx, client.ObjectKeyFromObject(pool), pool)).To(Succeed())
		id, ok, err := identity.Of(pool, ergonv1alpha1.AnnotationIdentity)
		Expect(err).NotTo(HaveOccurred())
		Expect(ok).To(BeTrue())
		Expect(id.Username).To(Equal("pool-mallory"), "the manager asks whether she may create the pods, not whether the admin may")
		Expect(id.Groups).NotTo(ContainElement("system:masters"))
	})

	It("cannot write a pool's record of warm pods, even granted status writes by accident", func() {
		ns := newNamespace()
		mallory := userClient(ns, "pool-forger", roleEdit)
		grantByAccident(ns, "pool-forger", rbacv1.PolicyRule{APIGroups: []string{ergonv1alpha1.GroupVersion.Group},
			Resources: []string{"workspacepools/status"}, Verbs: []string{"update", "patch"}})
		Expect(admin.Create(ctx, poolOf(ns))).To(Succeed())
		refusedByPolicy(mallory.Status().Patch(ctx, poolOf(ns), client.RawPatch(types.MergePatchType,
			[]byte(`{"status":{"entries":[{"name":"ergon-wp-planted","podUID":"p","claimUID":"c"}]}}`))),
			"status", "workspacepools/status")
	})
})
