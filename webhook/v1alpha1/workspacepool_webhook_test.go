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

package v1alpha1

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/identity"
)

var _ = Describe("The WorkspacePool webhooks", func() {
	pool := func(ns string) *ergonv1alpha1.WorkspacePool {
		return &ergonv1alpha1.WorkspacePool{ObjectMeta: metav1.ObjectMeta{Name: "warm", Namespace: ns},
			Spec: ergonv1alpha1.WorkspacePoolSpec{Replicas: 1, Template: ergonv1alpha1.WorkspacePoolTemplate{
				Image: "busybox:test",
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}},
				Storage: ergonv1alpha1.WorkspaceStorage{Size: resource.MustParse("1Gi")}}}}
	}
	stamped := func(ctx SpecContext, p *ergonv1alpha1.WorkspacePool) string {
		GinkgoHelper()
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(p), p)).To(Succeed())
		id, ok, err := identity.Of(p, ergonv1alpha1.AnnotationIdentity)
		Expect(err).NotTo(HaveOccurred())
		Expect(ok).To(BeTrue())
		return id.Username
	}

	It("make the pool act for whoever last changed its spec, whatever the client sent", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		carol, dave := clientAs("carol", "system:masters"), clientAs("dave", "system:masters")
		p := pool(ns)
		identity.Stamp(p, ergonv1alpha1.AnnotationIdentity, ergonv1alpha1.UserIdentity{Username: "admin", Groups: []string{"system:masters"}})
		Expect(carol.Create(ctx, p)).To(Succeed())
		Expect(stamped(ctx, p)).To(Equal("carol"), "the identity the client sent is replaced by the requester's")

		By("a change of metadata only keeps the editor, even when it tries to change the stamp")
		p.Labels = map[string]string{"team": "x"}
		identity.Stamp(p, ergonv1alpha1.AnnotationIdentity, ergonv1alpha1.UserIdentity{Username: "dave"})
		Expect(dave.Update(ctx, p)).To(Succeed())
		Expect(stamped(ctx, p)).To(Equal("carol"))

		By("a change of the spec makes the pool act for its editor")
		p.Spec.Replicas = 3
		Expect(dave.Update(ctx, p)).To(Succeed())
		Expect(stamped(ctx, p)).To(Equal("dave"))
	})

	It("refuse a template whose warm pods could not start, or that reads a Secret, naming the field", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		p := pool(ns)
		p.Spec.Template.Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")}
		refused(k8sClient.Create(ctx, p), "spec.template.resources.requests[memory]")
		p = pool(ns)
		p.Spec.Template.Env = []corev1.EnvVar{{Name: "TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "key"}, Key: "k"}}}}
		refused(k8sClient.Create(ctx, p), "spec.template.env", "values only")
		p = pool(ns)
		p.Spec.Replicas = 500
		refused(k8sClient.Create(ctx, p), "spec.replicas")
	})
})
