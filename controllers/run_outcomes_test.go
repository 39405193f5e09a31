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
	"slices"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/controllers/internal/shared"
	"github.com/ergon-dev/ergon/internal/naming"
)

// podLog records the step pods the test kubelet saw, by Run.
type podLog struct {
	mu   sync.Mutex
	pods map[string][]string
}

func (l *podLog) add(pod *corev1.Pod) {
	l.mu.Lock()
	defer l.mu.Unlock()
	run := pod.Labels[ergonv1alpha1.LabelRun]
	if slices.Contains(l.pods[run], pod.Name) {
		return
	}
	l.pods[run] = append(l.pods[run], pod.Name)
}

func (l *podLog) of(run string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.pods[run]...)
}

// failIf fails the pods of the named steps and echoes the last argument of the others.
func failIf(steps ...string) script {
	return func(pod *corev1.Pod) outcome {
		if slices.Contains(steps, pod.Labels[ergonv1alpha1.LabelStep]) {
			return outcome{ExitCode: 1}
		}
		return echoLastArg(pod)
	}
}

// createSceneWithFinally creates a Scene with finally steps, in one write: a Run created
// right after must not see it without them.
func createSceneWithFinally(ctx SpecContext, ns, name string, steps []ergonv1alpha1.Step, finally ...ergonv1alpha1.Step) {
	scene := &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	scene.Spec.Steps, scene.Spec.Finally = steps, finally
	Expect(k8sClient.Create(ctx, scene)).To(Succeed())
}

// phaseOf is a step's phase, "" while the Run records none.
func phaseOf(run *ergonv1alpha1.Run, step string) ergonv1alpha1.StepPhase {
	for _, s := range run.Status.Steps {
		if s.Name == step {
			return s.Phase
		}
	}
	return ""
}

const notifyCommand = "{{ .run.phase }}:{{ range .run.failedSteps }}{{ . }},{{ end }}"

// echo is a container step that prints a template's value, as an argument of its own.
func echo(name, text string, deps ...string) ergonv1alpha1.Step {
	s := container(name, "", deps...)
	s.Container.Command = []string{"echo", text}
	return s
}

var _ = Describe("The Run controller's control flow by outcome", func() {
	BeforeEach(func() {
		ctx, cancel := context.WithCancel(context.Background())
		go testKubelet.run(ctx)
		DeferCleanup(cancel)
	})

	It("runs finally steps after a failure, seeing the Run's outcome, without changing it", func(ctx SpecContext) {
		ns := newNamespace(ctx, failIf("build"))
		createSceneWithFinally(ctx, ns, "ci", []ergonv1alpha1.Step{container("build", "x"), container("deploy", "x", "build")},
			echo("notify", notifyCommand), container("cleanup", "done", "notify"))
		createRun(ctx, ns, "ci-1", "ci", nil)

		run := finished(ctx, ns, "ci-1")
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunFailed))
		Expect(stepStatus(run, "notify").Output.Preview).To(Equal("Failed:build,"))
		Expect(stepStatus(run, "cleanup").Phase).To(Equal(ergonv1alpha1.StepSucceeded))
		Expect(stepStatus(run, "deploy").Phase).To(Equal(ergonv1alpha1.StepSkipped))
		Expect(run.Status.Progress).To(Equal("4/4"))
		Expect(succeededMessage(run)).To(HavePrefix("step build failed"))
	})

	It("runs finally steps after a cancel, and only then ends Cancelled", func(ctx SpecContext) {
		release := make(chan struct{})
		ns := newNamespace(ctx, func(pod *corev1.Pod) outcome {
			switch pod.Labels[ergonv1alpha1.LabelStep] {
			case "wait":
				return outcome{Stay: true}
			case "notify":
				select {
				case <-release:
				default:
					return outcome{Stay: true}
				}
			}
			return echoLastArg(pod)
		})
		createSceneWithFinally(ctx, ns, "forever", []ergonv1alpha1.Step{container("wait", "sleep"), container("after", "x", "wait")},
			echo("notify", notifyCommand))
		run := createRun(ctx, ns, "forever-1", "forever", nil)
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(run), run)).To(Succeed())
			g.Expect(phaseOf(run, "wait")).To(Equal(ergonv1alpha1.StepRunning))
		}).Should(Succeed())
		Expect(k8sClient.Patch(ctx, run, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"cancel":true}}`)))).To(Succeed())

		By("starting the finally step while the Run stays Running")
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(run), run)).To(Succeed())
			g.Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunRunning))
			g.Expect(phaseOf(run, "wait")).To(Equal(ergonv1alpha1.StepCancelled))
			notify := types.NamespacedName{Namespace: ns, Name: naming.StepPodName("forever-1", "notify", 1)}
			g.Expect(k8sClient.Get(ctx, notify, &corev1.Pod{})).To(Succeed())
		}).Should(Succeed())
		close(release)
		run = finished(ctx, ns, "forever-1")
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunCancelled))
		Expect(stepStatus(run, "notify").Output.Preview).To(Equal("Cancelled:"))
	})

	It("runs a failure branch only when its step failed, and a handled failure makes the Run succeed", func(ctx SpecContext) {
		ns := newNamespace(ctx, failIf("build"))
		fix := echo("fix", "fixed {{ .steps.build.phase }}")
		fix.After = []ergonv1alpha1.OutcomeDependency{{Step: "build", Outcomes: []ergonv1alpha1.StepOutcome{"Failed"}, Handles: true}}
		report := container("report", "report")
		report.After = []ergonv1alpha1.OutcomeDependency{{Step: "fix", Outcomes: []ergonv1alpha1.StepOutcome{"Succeeded"}}}
		createScene(ctx, ns, "ci", withRetry(container("build", "x"), 1), fix, report, container("deploy", "x", "build"))
		createRun(ctx, ns, "ci-1", "ci", nil)

		run := finished(ctx, ns, "ci-1")
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded), succeededMessage(run))
		Expect(stepStatus(run, "build")).To(And(HaveField("Phase", ergonv1alpha1.StepFailed), HaveField("Attempts", BeEquivalentTo(2))))
		Expect(stepStatus(run, "fix").Output.Preview).To(Equal("fixed Failed"))
		Expect(stepStatus(run, "report").Phase).To(Equal(ergonv1alpha1.StepSucceeded))
		Expect(stepStatus(run, "deploy").Phase).To(Equal(ergonv1alpha1.StepSkipped))

		By("skipping the branch when the step succeeds")
		testKubelet.use(ns, echoLastArg)
		createRun(ctx, ns, "ci-2", "ci", nil)
		run = finished(ctx, ns, "ci-2")
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded))
		Expect(stepStatus(run, "fix")).To(And(HaveField("Phase", ergonv1alpha1.StepSkipped), HaveField("Reason", "OutcomeNotMet")))
		Expect(stepStatus(run, "deploy").Phase).To(Equal(ergonv1alpha1.StepSucceeded))
	})

	It("retries a failed Run in a new one that runs only the failed step and after, reusing verified outputs", func(ctx SpecContext) {
		big := strings.Repeat("0123456789abcdef", 256) // 4 KiB: kept in a ConfigMap
		seen := &podLog{pods: map[string][]string{}}
		failing := true
		var mu sync.Mutex
		ns := newNamespace(ctx, func(pod *corev1.Pod) outcome {
			seen.add(pod)
			mu.Lock()
			defer mu.Unlock()
			switch pod.Labels[ergonv1alpha1.LabelStep] {
			case "produce":
				return outcome{Output: big}
			case "flaky":
				if failing {
					return outcome{ExitCode: 1}
				}
			}
			return echoLastArg(pod)
		})
		createScene(ctx, ns, "etl", container("produce", "x"), container("side", "side"),
			echo("flaky", "{{ len .steps.produce.output }}", "produce"), echo("load", "loaded {{ .steps.flaky.output }}", "flaky"))
		createRun(ctx, ns, "etl-1", "etl", nil)
		original := finished(ctx, ns, "etl-1")
		Expect(original.Status.Phase).To(Equal(ergonv1alpha1.RunFailed))
		// The archive's Archived condition is the last change a Run that ended gets.
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(original), original)).To(Succeed())
			g.Expect(shared.Archived(original)).To(BeTrue())
		}).Should(Succeed())
		before := original.DeepCopy()

		mu.Lock()
		failing = false
		mu.Unlock()
		retry := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: "etl-1-retry", Namespace: ns},
			Spec: ergonv1alpha1.RunSpec{SceneRef: corev1.LocalObjectReference{Name: "etl"}, RetryOf: &ergonv1alpha1.RetryReference{Name: "etl-1"}}}
		Expect(k8sClient.Create(ctx, retry)).To(Succeed())
		run := finished(ctx, ns, "etl-1-retry")
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded), succeededMessage(run))
		Expect(seen.of("etl-1-retry")).To(ConsistOf(
			naming.StepPodName("etl-1-retry", "flaky", 1), naming.StepPodName("etl-1-retry", "load", 1)))
		produce := stepStatus(run, "produce")
		Expect(produce.Reason).To(Equal(ergonv1alpha1.ReasonReused))
		Expect(produce.Output.SHA256).To(Equal(stepStatus(original, "produce").Output.SHA256))
		Expect(produce.Output.Ref.ConfigMap).To(Equal(naming.OutputConfigMapName("etl-1-retry", "produce")))
		cm := &corev1.ConfigMap{}
		Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: produce.Output.Ref.ConfigMap}, cm)).To(Succeed())
		Expect(cm.Data[produce.Output.Ref.Key]).To(Equal(big))
		Expect(metav1.IsControlledBy(cm, run)).To(BeTrue())
		Expect(stepStatus(run, "side").Reason).To(Equal(ergonv1alpha1.ReasonReused))
		Expect(stepStatus(run, "load").Output.Preview).To(Equal("loaded 4096"))

		By("leaving the original untouched")
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(original), original)).To(Succeed())
		Expect(original.Status).To(Equal(before.Status))
	})

	It("reruns a Run from a step with edited params, from the live Run and from the archive, running no pod upstream", func(ctx SpecContext) {
		big := strings.Repeat("0123456789abcdef", 256) // 4 KiB: kept in a ConfigMap, and in the archive
		seen := &podLog{pods: map[string][]string{}}
		ns := newNamespace(ctx, func(pod *corev1.Pod) outcome {
			seen.add(pod)
			if pod.Labels[ergonv1alpha1.LabelStep] == "produce" {
				return outcome{Output: big}
			}
			return echoLastArg(pod)
		})
		scene := &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: "etl", Namespace: ns}}
		scene.Spec.Params = []ergonv1alpha1.ParamSpec{{Name: "mode", Default: new("fast")}}
		scene.Spec.Steps = []ergonv1alpha1.Step{container("produce", "x"), container("side", "side"),
			echo("shape", "{{ .params.mode }} {{ len .steps.produce.output }}", "produce"),
			echo("load", "loaded {{ .steps.shape.output }}", "shape")}
		Expect(k8sClient.Create(ctx, scene)).To(Succeed())
		createRun(ctx, ns, "etl-1", "etl", nil)
		original := finished(ctx, ns, "etl-1")
		Expect(original.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded), succeededMessage(original))
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(original), original)).To(Succeed())
			g.Expect(shared.Archived(original)).To(BeTrue())
		}).Should(Succeed())

		By("rerunning the live Run from shape: produce and side are reused, shape and load run again")
		rerun := func(name string, ref ergonv1alpha1.RetryReference) *ergonv1alpha1.Run {
			r := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
				Spec: ergonv1alpha1.RunSpec{SceneRef: corev1.LocalObjectReference{Name: "etl"},
					Params: map[string]string{"mode": "slow"}, RetryOf: &ref}}
			Expect(k8sClient.Create(ctx, r)).To(Succeed())
			return finished(ctx, ns, name)
		}
		run := rerun("etl-1-from-shape", ergonv1alpha1.RetryReference{Name: "etl-1", From: "shape"})
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded), succeededMessage(run))
		Expect(seen.of("etl-1-from-shape")).To(ConsistOf(
			naming.StepPodName("etl-1-from-shape", "shape", 1), naming.StepPodName("etl-1-from-shape", "load", 1)))
		Expect(stepStatus(run, "produce")).To(And(HaveField("Reason", ergonv1alpha1.ReasonReused),
			HaveField("Output.SHA256", stepStatus(original, "produce").Output.SHA256)))
		Expect(stepStatus(run, "side").Reason).To(Equal(ergonv1alpha1.ReasonReused))
		Expect(stepStatus(run, "load").Output.Preview).To(Equal("loaded slow 4096"))

		By("deleting the original once archived, then rerunning it from the archive")
		Expect(k8sClient.Delete(ctx, original)).To(Succeed())
		Eventually(func() error {
			return k8sClient.Get(ctx, client.ObjectKeyFromObject(original), &ergonv1alpha1.Run{})
		}).WithTimeout(30 * time.Second).Should(MatchError(ContainSubstring("not found")))
		run = rerun("etl-1-archived", ergonv1alpha1.RetryReference{Name: "etl-1", From: "load"})
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded), succeededMessage(run))
		Expect(seen.of("etl-1-archived")).To(ConsistOf(naming.StepPodName("etl-1-archived", "load", 1)))
		produce := stepStatus(run, "produce")
		Expect(produce.Output.SHA256).To(Equal(stepStatus(original, "produce").Output.SHA256))
		cm := &corev1.ConfigMap{}
		Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: produce.Output.Ref.ConfigMap}, cm)).To(Succeed())
		Expect(cm.Data[produce.Output.Ref.Key]).To(Equal(big))
		Expect(stepStatus(run, "load").Output.Preview).To(Equal("loaded fast 4096"), "shape is reused from the original")

		By("replaying the archived Run: every step runs again")
		run = rerun("etl-1-replay", ergonv1alpha1.RetryReference{Name: "etl-1", Replay: true})
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded), succeededMessage(run))
		Expect(seen.of("etl-1-replay")).To(HaveLen(4))
		Expect(stepStatus(run, "load").Output.Preview).To(Equal("loaded slow 4096"))

		By("refusing a step the snapshot lacks, by the field")
		run = rerun("etl-1-nostep", ergonv1alpha1.RetryReference{Name: "etl-1", From: "nope"})
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunFailed))
		Expect(succeededMessage(run)).To(ContainSubstring("spec.retryOf.from: nope is not a step"))
	})

	It("suspends a Run: the running step finishes, no new one starts until it resumes", func(ctx SpecContext) {
		release := make(chan struct{})
		ns := newNamespace(ctx, func(pod *corev1.Pod) outcome {
			if pod.Labels[ergonv1alpha1.LabelStep] == "a" {
				select {
				case <-release:
				default:
					return outcome{Stay: true}
				}
			}
			return echoLastArg(pod)
		})
		createScene(ctx, ns, "two", container("a", "a"), container("b", "b", "a"))
		run := createRun(ctx, ns, "two-1", "two", nil)
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(run), run)).To(Succeed())
			g.Expect(phaseOf(run, "a")).To(Equal(ergonv1alpha1.StepRunning))
		}).Should(Succeed())
		Expect(k8sClient.Patch(ctx, run, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"suspend":true}}`)))).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(run), run)).To(Succeed())
			g.Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSuspended))
		}).Should(Succeed())
		close(release)
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(run), run)).To(Succeed())
			g.Expect(phaseOf(run, "a")).To(Equal(ergonv1alpha1.StepSucceeded))
		}).Should(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(run), run)).To(Succeed())
			g.Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSuspended))
			err := k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: naming.StepPodName("two-1", "b", 1)}, &corev1.Pod{})
			g.Expect(err).To(MatchError(ContainSubstring("not found")))
		}).WithTimeout(2 * time.Second).Should(Succeed())

		Expect(k8sClient.Patch(ctx, run, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"suspend":false}}`)))).To(Succeed())
		run = finished(ctx, ns, "two-1")
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded))
		Expect(stepStatus(run, "b").Output.Preview).To(Equal("b"))
	})
})
