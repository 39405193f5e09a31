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
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

// stepPods records the steps whose pods were created in a namespace, by Run, from a watch
// started before the Runs: a Run deletes its pods once it ends.
type stepPods struct {
	mu    sync.Mutex
	steps map[string][]string
}

func watchStepPods(ctx SpecContext, ns string) *stepPods {
	w, err := clientset.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{LabelSelector: ergonv1alpha1.LabelRun})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(w.Stop)
	seen := &stepPods{steps: map[string][]string{}}
	names := map[string]bool{}
	go func() {
		defer GinkgoRecover()
		for ev := range w.ResultChan() {
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok || names[pod.Name] {
				continue
			}
			names[pod.Name] = true
			seen.mu.Lock()
			run := pod.Labels[ergonv1alpha1.LabelRun]
			seen.steps[run] = append(seen.steps[run], pod.Labels[ergonv1alpha1.LabelStep])
			seen.mu.Unlock()
		}
	}()
	return seen
}

// of lists the steps of the pods created for a Run, sorted.
func (s *stepPods) of(run string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(slices.Values(s.steps[run]))
}

// stepPhase is a step's phase, "" while the Run records none.
func stepPhase(run *ergonv1alpha1.Run, step string) ergonv1alpha1.StepPhase {
	for _, s := range run.Status.Steps {
		if s.Name == step {
			return s.Phase
		}
	}
	return ""
}

// waitForStep waits until a step of a Run has the phase.
func waitForStep(ctx context.Context, run *ergonv1alpha1.Run, step string, phase ergonv1alpha1.StepPhase) {
	Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(run), run)).To(Succeed())
		g.Expect(stepPhase(run, step)).To(Equal(phase))
	}).WithTimeout(time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())
}

var _ = Describe("Control flow by outcome on a real cluster", func() {
	It("runs a finally step after a cancelled Run, which sees .run.phase Cancelled and stays Cancelled", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		pods := watchStepPods(ctx, ns)
		scene := &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: "long", Namespace: ns}}
		scene.Spec.Steps = []ergonv1alpha1.Step{
			busyboxStep("wait", "exec sleep 300"),
			busyboxStep("after", `echo -n after > "$ERGON_OUTPUT"`, "wait"),
		}
		notify := busyboxStep("notify", `echo -n "$ENDED" > "$ERGON_OUTPUT"`)
		notify.Container.Env = []corev1.EnvVar{{Name: "ENDED", Value: "{{ .run.phase }}:{{ range .run.failedSteps }}{{ . }},{{ end }}"}}
		scene.Spec.Finally = []ergonv1alpha1.Step{notify}
		Expect(k8sClient.Create(ctx, scene)).To(Succeed())
		run := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: "long-1", Namespace: ns},
			Spec: ergonv1alpha1.RunSpec{SceneRef: corev1.LocalObjectReference{Name: "long"}}}
		Expect(k8sClient.Create(ctx, run)).To(Succeed())
		started := time.Now()
		waitForStep(ctx, run, "wait", ergonv1alpha1.StepRunning)

		Expect(k8sClient.Patch(ctx, run, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"cancel":true}}`)))).To(Succeed())
		run = finished(ctx, run)
		GinkgoWriter.Printf("cancel to end, finally step included: %s after start\n", time.Since(started))
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunCancelled), "%+v", run.Status)
		Expect(stepOf(run, "wait").Phase).To(Equal(ergonv1alpha1.StepCancelled))
		Expect(stepPhase(run, "after")).NotTo(Equal(ergonv1alpha1.StepSucceeded), "no step of the graph starts after a cancel")
		Expect(stepOf(run, "notify").Phase).To(Equal(ergonv1alpha1.StepSucceeded))
		Expect(stepOf(run, "notify").Output.Preview).To(Equal("Cancelled:"))
		Expect(pods.of("long-1")).To(Equal([]string{"notify", "wait"}), "the finally step ran in a pod of its own")

		By("keeping the Run Cancelled")
		Consistently(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(run), run)).To(Succeed())
			g.Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunCancelled))
		}).WithTimeout(3 * time.Second).WithPolling(time.Second).Should(Succeed())
	})

	It("retries a failed Run with spec.retryOf, creating pods only for the failed step and after", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		pods := watchStepPods(ctx, ns)
		// b fails while the ConfigMap says so: the retry has the original's params, so what
		// changes between the two Runs is outside them, as when a flaky service comes back.
		flag := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "switch", Namespace: ns}, Data: map[string]string{"fail": "yes"}}
		Expect(k8sClient.Create(ctx, flag)).To(Succeed())
		big := strings.Repeat("0123456789abcdef", 256) // 4 KiB: kept in a ConfigMap, copied by digest
		a := busyboxStep("a", `i=0; while [ $i -lt 256 ]; do printf 0123456789abcdef; i=$((i+1)); done > "$ERGON_OUTPUT"`)
		b := busyboxStep("b", `[ "$FAIL" = yes ] && exit 1; echo -n "b saw $(wc -c < "$ERGON_INPUTS/a") bytes" > "$ERGON_OUTPUT"`, "a")
		b.Container.Env = []corev1.EnvVar{{Name: "FAIL", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "switch"}, Key: "fail"}}}}
		c := busyboxStep("c", `echo -n "c: $(cat "$ERGON_INPUTS/b")" > "$ERGON_OUTPUT"`, "b")
		original := finished(ctx, runScene(ctx, ns, "abc", a, b, c))
		Expect(original.Status.Phase).To(Equal(ergonv1alpha1.RunFailed), "%+v", original.Status)
		Expect(stepOf(original, "b").Phase).To(Equal(ergonv1alpha1.StepFailed))
		Expect(pods.of("abc-1")).To(Equal([]string{"a", "b"}))
		sum := sha256.Sum256([]byte(big))
		Expect(stepOf(original, "a").Output.SHA256).To(Equal(hex.EncodeToString(sum[:])))
		// The archive's Archived condition is the last change a Run that ended gets.
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(original), original)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(original.Status.Conditions, ergonv1alpha1.ConditionArchived)).To(BeTrue())
		}).WithTimeout(time.Minute).Should(Succeed())
		before := original.Status.DeepCopy()

		flag.Data["fail"] = "no"
		Expect(k8sClient.Update(ctx, flag)).To(Succeed())
		retry := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: "abc-1-retry", Namespace: ns},
			Spec: ergonv1alpha1.RunSpec{SceneRef: corev1.LocalObjectReference{Name: "abc"}, RetryOf: &ergonv1alpha1.RetryReference{Name: "abc-1"}}}
		started := time.Now()
		Expect(k8sClient.Create(ctx, retry)).To(Succeed())
		retry = finished(ctx, retry)
		GinkgoWriter.Printf("retry took %s\n", time.Since(started))
		Expect(retry.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded), "%+v", retry.Status)

		By("creating pods only for b and c")
		Expect(pods.of("abc-1-retry")).To(Equal([]string{"b", "c"}))
		list := &corev1.PodList{}
		Expect(k8sClient.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{
			ergonv1alpha1.LabelRun: "abc-1-retry", ergonv1alpha1.LabelStep: "a"})).To(Succeed())
		Expect(list.Items).To(BeEmpty())

		By("reusing a's output, verified by its digest")
		reused := stepOf(retry, "a")
		Expect(reused.Reason).To(Equal(ergonv1alpha1.ReasonReused))
		Expect(reused.Output.SHA256).To(Equal(hex.EncodeToString(sum[:])))
		Expect(reused.Output.Ref).NotTo(BeNil())
		cm := &corev1.ConfigMap{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: reused.Output.Ref.ConfigMap}, cm)).To(Succeed())
		Expect(cm.Data[reused.Output.Ref.Key]).To(Equal(big))
		Expect(metav1.IsControlledBy(cm, retry)).To(BeTrue(), "the retry owns its copy")
		Expect(stepOf(retry, "c").Output.Preview).To(Equal("c: b saw 4096 bytes"))

		By("leaving the original untouched")
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(original), original)).To(Succeed())
		Expect(original.Status).To(Equal(*before))
		Expect(pods.of("abc-1")).To(Equal([]string{"a", "b"}))
	})
})
