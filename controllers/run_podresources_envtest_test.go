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
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	runcontroller "github.com/ergon-dev/ergon/controllers/run"
	"github.com/ergon-dev/ergon/internal/naming"
)

// stepPodOf waits for the pod of a step's first attempt and returns it.
func stepPodOf(ctx context.Context, ns, run, step string) *corev1.Pod {
	pod := &corev1.Pod{}
	Eventually(func() error {
		return k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: naming.StepPodName(run, step, 1)}, pod)
	}).Should(Succeed())
	return pod
}

var _ = Describe("Step pod resources", Serial, func() {
	BeforeEach(func() {
		defaults, err := runcontroller.StepDefaultResources("100m", "128Mi", "", "512Mi")
		Expect(err).NotTo(HaveOccurred())
		stopMgr()
		DeferCleanup(func() { stopMgr = startManager(suiteConfig()) })
		stop := startManager(runcontroller.RunConfig{EntrypointImage: "ergon/manager:test", MaxDepth: 3, StepDefaultResources: defaults})
		DeferCleanup(stop)
	})

	It("are the manager's defaults for a step that sets none, where no LimitRange gives any", func(ctx SpecContext) {
		ns := newNamespace(ctx, nil)
		createScene(ctx, ns, "plain", container("work", "true"))
		createRun(ctx, ns, "plain-1", "plain", nil)
		pod := stepPodOf(ctx, ns, "plain-1", "work")
		main := pod.Spec.Containers[0].Resources
		Expect(main.Requests.Cpu().String()).To(Equal("100m"))
		Expect(main.Requests.Memory().String()).To(Equal("128Mi"))
		Expect(main.Limits.Memory().String()).To(Equal("512Mi"))
		Expect(pod.Status.QOSClass).To(Equal(corev1.PodQOSBurstable))
		for _, c := range pod.Spec.InitContainers {
			Expect(c.Resources.Requests).NotTo(BeEmpty(), "init container %s", c.Name)
		}
	})

	It("are the namespace's LimitRange defaults, not Ergon's, where a LimitRange gives them", func(ctx SpecContext) {
		ns := newNamespace(ctx, nil)
		Expect(k8sClient.Create(ctx, &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "defaults", Namespace: ns},
			Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer,
				DefaultRequest: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("300m")},
				Default:        corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("700m")}}}}})).To(Succeed())
		createScene(ctx, ns, "plain", container("work", "true"))
		createRun(ctx, ns, "plain-1", "plain", nil)
		main := stepPodOf(ctx, ns, "plain-1", "work").Spec.Containers[0].Resources
		Expect(main.Requests.Cpu().String()).To(Equal("300m"))
		Expect(main.Limits.Cpu().String()).To(Equal("700m"))
		Expect(main.Requests).NotTo(HaveKey(corev1.ResourceMemory), "Ergon's default memory request was added")
		Expect(main.Limits).NotTo(HaveKey(corev1.ResourceMemory), "Ergon's default memory limit was added")
	})

	It("are the Scene's stepResources for steps that set none, and BestEffort only when the Scene asks", func(ctx SpecContext) {
		ns := newNamespace(ctx, nil)
		own := container("own", "true")
		own.Container.Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("32Mi")}
		scene := &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: "sized", Namespace: ns},
			Spec: ergonv1alpha1.SceneSpec{Steps: []ergonv1alpha1.Step{container("work", "true"), own},
				StepResources: &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")}}}}
		Expect(k8sClient.Create(ctx, scene)).To(Succeed())
		createRun(ctx, ns, "sized-1", "sized", nil)
		Expect(stepPodOf(ctx, ns, "sized-1", "work").Spec.Containers[0].Resources.Requests).To(
			Equal(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")}))
		Expect(stepPodOf(ctx, ns, "sized-1", "own").Spec.Containers[0].Resources.Requests).To(
			Equal(corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("32Mi")}))

		best := &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: "best", Namespace: ns},
			Spec: ergonv1alpha1.SceneSpec{Steps: []ergonv1alpha1.Step{container("work", "true")},
				StepResources: &corev1.ResourceRequirements{}}}
		Expect(k8sClient.Create(ctx, best)).To(Succeed())
		createRun(ctx, ns, "best-1", "best", nil)
		pod := stepPodOf(ctx, ns, "best-1", "work")
		Expect(pod.Spec.Containers[0].Resources.Requests).To(BeEmpty())
		Expect(pod.Spec.Containers[0].Resources.Limits).To(BeEmpty())
	})

	It("lets a step whose pod a full ResourceQuota refuses wait, with the quota's message", func(ctx SpecContext) {
		ns := newNamespace(ctx, nil)
		// No quota controller runs here: the quota's status, which admission counts against,
		// is written by hand. Memory requests are full.
		quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "memory", Namespace: ns},
			Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourceRequestsMemory: resource.MustParse("1Gi")}}}
		Expect(k8sClient.Create(ctx, quota)).To(Succeed())
		quota.Status = corev1.ResourceQuotaStatus{Hard: quota.Spec.Hard,
			Used: corev1.ResourceList{corev1.ResourceRequestsMemory: resource.MustParse("1Gi")}}
		Expect(k8sClient.Status().Update(ctx, quota)).To(Succeed())

		createScene(ctx, ns, "quota", container("work", "true"))
		createRun(ctx, ns, "quota-1", "quota", nil)
		Eventually(func(g Gomega) {
			run, work := runStep(ctx, ns, "quota-1", "work")
			g.Expect(work.Phase).To(Equal(ergonv1alpha1.StepPending))
			g.Expect(work.Reason).To(Equal(ergonv1alpha1.ReasonExceededQuota))
			g.Expect(work.Message).To(ContainSubstring("exceeded quota: memory"))
			g.Expect(work.Message).To(ContainSubstring("requested: requests.memory=128Mi"))
			g.Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunRunning))
		}).WithTimeout(15 * time.Second).Should(Succeed())
	})
})
