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
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/naming"
)

// helm runs the chart's helm on the release hack/e2e-setup.sh installed, then waits until the
// admission webhooks answer again.
func helm(args ...string) {
	cmd := exec.Command("bin/helm", append(args, "--namespace", managerNamespace, "--wait", "--timeout", "5m")...)
	cmd.Dir = repoRoot
	out, err := cmd.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "helm %s: %s", strings.Join(args, " "), out)
	// The old manager may still lead while it terminates: wait until the new one is alone.
	Eventually(func(g Gomega) {
		pods := &corev1.PodList{}
		g.Expect(k8sClient.List(context.Background(), pods, client.InNamespace(managerNamespace),
			client.MatchingLabels{"app.kubernetes.io/name": "ergon", "app.kubernetes.io/component": "manager"})).To(Succeed())
		g.Expect(pods.Items).To(HaveLen(1), "one manager pod")
		g.Expect(pods.Items[0].DeletionTimestamp).To(BeNil())
	}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
	wait := exec.Command("hack/wait-webhooks.sh", managerNamespace)
	wait.Dir = repoRoot
	out, err = wait.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "hack/wait-webhooks.sh: %s", out)
}

// concurrentPods watches the step pods of a Run and keeps the most that existed unfinished at
// once.
type concurrentPods struct {
	mu      sync.Mutex
	running map[string]bool
	most    int
}

func watchConcurrentPods(ctx context.Context, ns, run string) *concurrentPods {
	c := &concurrentPods{running: map[string]bool{}}
	w, err := clientset.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{
		LabelSelector: ergonv1alpha1.LabelRun + "=" + naming.LabelValue(run)})
	Expect(err).NotTo(HaveOccurred())
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			c.mu.Lock()
			c.running[pod.Name] = ev.Type != watch.Deleted && running(pod)
			n := 0
			for _, r := range c.running {
				if r {
					n++
				}
			}
			c.most = max(c.most, n)
			c.mu.Unlock()
		}
	}()
	return c
}

// running reports whether a step pod's step container may still run: the pod has not ended,
// and its step container has not terminated (the manager frees a unit's slot when it has).
func running(pod *corev1.Pod) bool {
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return false
	}
	for _, c := range pod.Status.ContainerStatuses {
		if c.Name == "step" && c.State.Terminated != nil {
			return false
		}
	}
	return true
}

func (c *concurrentPods) peak() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.most
}

// fanOut is a forEach step over n items whose instances each sleep a second.
func fanOut(n int) ergonv1alpha1.Step {
	items := make([]int, n)
	for i := range items {
		items[i] = i
	}
	raw, err := json.Marshal(items)
	Expect(err).NotTo(HaveOccurred())
	fan := busyboxStep("fan", `sleep 1; echo -n "$ITEM" > "$ERGON_OUTPUT"`)
	fan.Container.Env = []corev1.EnvVar{{Name: "ITEM", Value: "{{ .item }}"}}
	fan.ForEach = &ergonv1alpha1.ForEach{Items: &apiextensionsv1.JSON{Raw: raw}}
	return fan
}

// The chart's limits, lowered by its values: work past a concurrency limit waits and then runs,
// work past a size limit fails with a message that names the limit.
var _ = Describe("Limits set by chart values", Ordered, func() {
	BeforeAll(func() {
		helm("upgrade", "ergon", "charts/ergon", "--reuse-values",
			"--set", "manager.maxStepPodsPerRun=10", "--set", "manager.maxUnitsPerStep=40")
		DeferCleanup(func() { helm("rollback", "ergon") })
	})

	It("runs a 40-item fan-out at most 10 pods at a time, and says what it waits for", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		scene := &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: "wide", Namespace: ns}}
		scene.Spec.Steps = []ergonv1alpha1.Step{fanOut(40)}
		Expect(k8sClient.Create(ctx, scene)).To(Succeed())
		run := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: "wide-1", Namespace: ns},
			Spec: ergonv1alpha1.RunSpec{SceneRef: corev1.LocalObjectReference{Name: "wide"}}}
		pods := watchConcurrentPods(ctx, ns, run.Name)
		Expect(k8sClient.Create(ctx, run)).To(Succeed())

		By("saying, while instances wait, which limit keeps them")
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(run), run)).To(Succeed())
			messages := []string{}
			for _, s := range run.Status.Steps {
				messages = append(messages, s.Message)
			}
			g.Expect(messages).To(ContainElement(ContainSubstring("--max-step-pods-per-run")), "%+v", run.Status.Steps)
		}).WithTimeout(2 * time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())

		run = finished(ctx, run)
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded), "%+v", run.Status)
		Expect(stepOf(run, "fan").Instances.States).To(Equal(strings.Repeat("S", 40)))
		Expect(pods.peak()).To(BeNumerically("<=", 10), "step pods running at once")
		Expect(pods.peak()).To(BeNumerically(">", 1), "the watch saw the pods")
	})

	It("fails a fan-out past the units limit before it makes a pod, naming the limit", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		run := runScene(ctx, ns, "wider", fanOut(41))
		run = finished(ctx, run)
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunFailed), "%+v", run.Status)
		s := stepOf(run, "fan")
		Expect(s.Reason).To(Equal(ergonv1alpha1.ReasonUnitLimitReached), "%+v", s)
		Expect(s.Message).To(And(ContainSubstring("40"), ContainSubstring("--max-units-per-step")))
		pods := &corev1.PodList{}
		Expect(k8sClient.List(ctx, pods, client.InNamespace(ns))).To(Succeed())
		Expect(pods.Items).To(BeEmpty())
	})
})
