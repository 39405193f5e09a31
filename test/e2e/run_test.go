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
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/naming"
)

// busyboxStep is a container step of the local cluster's tool image.
func busyboxStep(name, script string, deps ...string) ergonv1alpha1.Step {
	return ergonv1alpha1.Step{Name: name, DependsOn: deps, Container: &ergonv1alpha1.ContainerStep{
		Image: toolImage, ImagePullPolicy: corev1.PullIfNotPresent, Command: []string{"sh", "-c", script},
	}}
}

// runScene creates a Scene of steps and a Run of it, and returns the Run.
func runScene(ctx SpecContext, ns, name string, steps ...ergonv1alpha1.Step) *ergonv1alpha1.Run {
	scene := &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	scene.Spec.Steps = steps
	Expect(k8sClient.Create(ctx, scene)).To(Succeed())
	run := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: name + "-1", Namespace: ns},
		Spec: ergonv1alpha1.RunSpec{SceneRef: corev1.LocalObjectReference{Name: name}}}
	Expect(k8sClient.Create(ctx, run)).To(Succeed())
	return run
}

// finished waits until a Run ends.
func finished(ctx SpecContext, run *ergonv1alpha1.Run) *ergonv1alpha1.Run {
	Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(run), run)).To(Succeed())
		g.Expect(run.Status.Phase.Finished()).To(BeTrue(), "phase %s, steps %+v", run.Status.Phase, run.Status.Steps)
	}).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
	return run
}

func stepOf(run *ergonv1alpha1.Run, name string) ergonv1alpha1.StepStatus {
	for _, s := range run.Status.Steps {
		if s.Name == name {
			return s
		}
	}
	Fail("no status for step " + name)
	return ergonv1alpha1.StepStatus{}
}

var _ = Describe("Runs on a real cluster", func() {
	It("runs a weekly-report-like Scene: fetch, draft, a gate approved by patch, publish", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		review := ergonv1alpha1.Step{Name: "review", DependsOn: []string{"draft"}, Gate: &ergonv1alpha1.GateStep{
			Message: `Publish "{{ .steps.draft.outputs.title }}"?`}}
		publish := busyboxStep("publish", `echo -n "published: "{{ .steps.draft.outputs.title | shquote }} > "$ERGON_OUTPUT"`, "review")
		publish.When = "steps.review.decision == 'approve'"
		discard := busyboxStep("discard", `echo -n discarded > "$ERGON_OUTPUT"`, "review")
		discard.When = "steps.review.decision == 'reject'"
		run := runScene(ctx, ns, "weekly",
			busyboxStep("fetch", `echo -n "payments, search" > "$ERGON_OUTPUT"`),
			busyboxStep("draft", `printf '{"title": "Sprint 43", "body": "%s"}' "$(cat "$ERGON_INPUTS/fetch")" > "$ERGON_OUTPUT"`, "fetch"),
			review, publish, discard)

		gate := &ergonv1alpha1.Gate{}
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: naming.GateName("weekly-1", "review")}, gate)).To(Succeed())
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(run), run)).To(Succeed())
			g.Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunWaiting))
		}).WithTimeout(2 * time.Minute).Should(Succeed())
		Expect(gate.Spec.Message).To(Equal(`Publish "Sprint 43"?`))
		Expect(gate.OwnerReferences).To(ConsistOf(HaveField("Name", "weekly-1")))

		// What `kubectl patch gate weekly-1-review --type merge -p ...` sends.
		decide := []byte(`{"spec":{"decision":{"option":"approve","comment":"ship it"}}}`)
		Expect(k8sClient.Patch(ctx, gate, client.RawPatch(types.MergePatchType, decide))).To(Succeed())
		run = finished(ctx, run)
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded), "%+v", run.Status)
		Expect(stepOf(run, "review").Decision).To(Equal("approve"))
		Expect(stepOf(run, "publish").Output.Preview).To(Equal("published: Sprint 43"))
		Expect(stepOf(run, "discard").Phase).To(Equal(ergonv1alpha1.StepSkipped))
		Expect(run.Status.Outputs).To(HaveKey("publish"))
	})

	It("passes a 500 KiB output to the next step", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		run := runScene(ctx, ns, "big",
			busyboxStep("produce", `head -c 512000 /dev/zero | tr '\0' a > "$ERGON_OUTPUT"`),
			busyboxStep("consume", `wc -c < "$ERGON_INPUTS/produce" | tr -d ' \n' > "$ERGON_OUTPUT"`, "produce"),
		)
		run = finished(ctx, run)
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded), "%+v", run.Status)
		produce := stepOf(run, "produce")
		Expect(produce.Output.Size).To(BeEquivalentTo(512000))
		Expect(produce.Output.Ref).NotTo(BeNil())
		Expect(stepOf(run, "consume").Output.Preview).To(Equal("512000"))
	})

	It("retries a step that fails on its first attempt and succeeds on its second", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		flaky := busyboxStep("flaky", `[ "$ERGON_ATTEMPT" -ge 2 ] || exit 3; echo -n "attempt $ERGON_ATTEMPT" > "$ERGON_OUTPUT"`)
		flaky.Retry = &ergonv1alpha1.RetryPolicy{Limit: 2, Backoff: &ergonv1alpha1.Backoff{Duration: &metav1.Duration{Duration: time.Second}}}
		run := finished(ctx, runScene(ctx, ns, "flaky", flaky))
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded), "%+v", run.Status)
		s := stepOf(run, "flaky")
		Expect(s.Attempts).To(BeEquivalentTo(2))
		Expect(s.Output.Preview).To(Equal("attempt 2"))
		Expect(s.History).To(HaveLen(1))
		Expect(s.History[0].ExitCode).To(HaveValue(BeEquivalentTo(3)))
	})

	It("cancels a running Run: its pod stops and it ends Cancelled", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		run := runScene(ctx, ns, "slow", busyboxStep("wait", "sleep 300"), busyboxStep("after", "true", "wait"))
		pod := &corev1.Pod{}
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: naming.StepPodName("slow-1", "wait", 1)}, pod)).To(Succeed())
			g.Expect(pod.Status.Phase).To(Equal(corev1.PodRunning))
		}).WithTimeout(2 * time.Minute).Should(Succeed())
		Expect(k8sClient.Patch(ctx, run, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"cancel":true}}`)))).To(Succeed())
		run = finished(ctx, run)
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunCancelled))
		Expect(stepOf(run, "wait").Phase).To(Equal(ergonv1alpha1.StepCancelled))
		Eventually(func() error {
			return k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: naming.StepPodName("slow-1", "wait", 1)}, &corev1.Pod{})
		}).WithTimeout(time.Minute).Should(MatchError(ContainSubstring("not found")))
	})

	It("runs the sample Scene of make run with real pods and passes outputs along", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		data, err := os.ReadFile(filepath.Join(repoRoot, "config", "samples", "run", "hello.yaml"))
		Expect(err).NotTo(HaveOccurred())
		scene := &ergonv1alpha1.Scene{}
		Expect(yaml.UnmarshalStrict([]byte(strings.ReplaceAll(string(data), "busybox:1.36", toolImage)), scene)).To(Succeed())
		scene.Namespace = ns
		Expect(k8sClient.Create(ctx, scene)).To(Succeed())
		By("the Scene controller, under the chart's RBAC, marking the Scene Ready")
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(scene), scene)).To(Succeed())
			ready := meta.FindStatusCondition(scene.Status.Conditions, ergonv1alpha1.ConditionReady)
			g.Expect(ready).NotTo(BeNil())
			g.Expect(ready.Status).To(Equal(metav1.ConditionTrue), "%+v", ready)
			g.Expect(ready.ObservedGeneration).To(Equal(scene.Generation))
			g.Expect(scene.Status.StepCount).To(Equal(int32(len(scene.Spec.Steps))))
		}).WithTimeout(time.Minute).Should(Succeed())
		run := &ergonv1alpha1.Run{
			ObjectMeta: metav1.ObjectMeta{Name: "hello-1", Namespace: ns},
			Spec: ergonv1alpha1.RunSpec{SceneRef: corev1.LocalObjectReference{Name: "hello"},
				Params: map[string]string{"who": "Ergon"}},
		}
		Expect(k8sClient.Create(ctx, run)).To(Succeed())

		run = finished(ctx, run)
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded), "%+v", run.Status)
		Expect(run.Status.Outputs).To(HaveKeyWithValue("report",
			HaveField("Preview", "hello, Ergon has 12 letters\n")))

		By("deleting the step pods once their outputs are in the status")
		Eventually(func(g Gomega) {
			pods := &corev1.PodList{}
			g.Expect(k8sClient.List(ctx, pods, client.InNamespace(ns))).To(Succeed())
			g.Expect(pods.Items).To(BeEmpty())
		}).WithTimeout(time.Minute).Should(Succeed())
	})
})
