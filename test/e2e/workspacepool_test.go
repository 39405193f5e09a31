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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/workspace"
	"github.com/ergon-dev/ergon/internal/workspace/browse"
)

var _ = Describe("A WorkspacePool on a real cluster", func() {
	It("hands a new Workspace a warm pod on an empty volume of its own, refills, and never takes it back", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		shape := e2eWorkspace(ns, "shape", "nobody").Spec
		pool := &ergonv1alpha1.WorkspacePool{ObjectMeta: metav1.ObjectMeta{Name: "warm", Namespace: ns},
			Spec: ergonv1alpha1.WorkspacePoolSpec{Replicas: 1, Template: ergonv1alpha1.WorkspacePoolTemplate{
				Image: shape.Image, Resources: shape.Resources, Storage: shape.Storage}}}
		Expect(k8sClient.Create(ctx, pool)).To(Succeed())
		var warm ergonv1alpha1.WorkspacePoolEntry
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(pool), pool)).To(Succeed())
			g.Expect(pool.Status.Ready).To(BeEquivalentTo(1), "%v", pool.Status.Conditions)
			warm = pool.Status.Entries[0]
		}).WithTimeout(90 * time.Second).WithPolling(time.Second).Should(Succeed())

		By("a Workspace of the pool's shape runs on the warm pod at once, as its own")
		pooled := e2eWorkspace(ns, "pooled", "alice@example.com")
		created := time.Now()
		Expect(k8sClient.Create(ctx, pooled)).To(Succeed())
		pod := runningWorkspace(ctx, ns, "pooled", "")
		GinkgoWriter.Printf("Workspace Running %s after its creation\n", time.Since(created))
		Expect(pod.Name).To(Equal(warm.Name))
		Expect(pod.UID).To(Equal(warm.PodUID))
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(pooled), pooled)).To(Succeed())
		Expect(pooled.Status.ClaimUID).To(Equal(warm.ClaimUID))
		Expect(pod.Labels).To(HaveKeyWithValue(ergonv1alpha1.LabelWorkspaceUID, string(pooled.UID)))
		Expect(shell(ctx, ns, pod.Name, "ls -A /workspace | wc -l; id -u")).To(Equal("0\n1000\n"), "an empty volume, the user's uid")
		shell(ctx, ns, pod.Name, "echo mine > /workspace/a.txt")
		files, err := browse.New(cfg)
		Expect(err).NotTo(HaveOccurred())
		Expect(readFile(ctx, files, ns, "pooled", "a.txt")).To(Equal("mine\n"))

		By("the pool makes another warm pod; the taken one is never its again")
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(pool), pool)).To(Succeed())
			g.Expect(pool.Status.Taken).To(BeEquivalentTo(1))
			g.Expect(pool.Status.Ready).To(BeEquivalentTo(1))
			g.Expect(pool.Status.Entries[0].Name).NotTo(Equal(warm.Name))
		}).WithTimeout(90 * time.Second).WithPolling(time.Second).Should(Succeed())

		By("deleting the pool deletes its warm pod, not the Workspace's")
		next := pool.Status.Entries[0].Name
		Expect(k8sClient.Delete(ctx, pool)).To(Succeed())
		Eventually(func() bool {
			err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: next}, &corev1.Pod{})
			return apierrors.IsNotFound(err)
		}).WithTimeout(90 * time.Second).WithPolling(time.Second).Should(BeTrue())
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(pod), pod)).To(Succeed())
		Expect(pod.DeletionTimestamp).To(BeNil())

		By("a new image replaces the warm pod with the Workspace's own, on the same volume")
		Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(pooled), pooled); err != nil {
				return err
			}
			pooled.Spec.Image = fakeLLMImage()
			return k8sClient.Update(ctx, pooled)
		})).To(Succeed())
		own := runningWorkspace(ctx, ns, "pooled", string(pod.UID))
		Expect(own.Name).To(Equal(workspace.ObjectName(pooled)))
		Expect(readFile(ctx, files, ns, "pooled", "a.txt")).To(Equal("mine\n"))
	})
})
