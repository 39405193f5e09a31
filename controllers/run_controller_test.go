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
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/naming"
)

// step fixtures

func container(name string, command string, deps ...string) ergonv1alpha1.Step {
	return ergonv1alpha1.Step{Name: name, DependsOn: deps, Container: &ergonv1alpha1.ContainerStep{
		Image: "busybox:test", Command: []string{"sh", "-c", command},
	}}
}

func withRetry(s ergonv1alpha1.Step, limit int32) ergonv1alpha1.Step {
	backoff := &ergonv1alpha1.Backoff{Duration: &metav1.Duration{Duration: 200 * time.Millisecond}}
	s.Retry = &ergonv1alpha1.RetryPolicy{Limit: limit, Backoff: backoff}
	return s
}

// newNamespace creates a namespace for one test, with the test kubelet running script in it.
func newNamespace(ctx context.Context, s script) string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "run-"}}
	Expect(k8sClient.Create(ctx, ns)).To(Succeed())
	testKubelet.use(ns.Name, s)
	DeferCleanup(func(ctx SpecContext) {
		testKubelet.use(ns.Name, nil)
		Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, ns))).To(Succeed())
	})
	return ns.Name
}

func createScene(ctx context.Context, ns, name string, steps ...ergonv1alpha1.Step) {
	scene := &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	scene.Spec.Steps = steps
	Expect(k8sClient.Create(ctx, scene)).To(Succeed())
}

// editScene changes a Scene's spec, again on a conflict: the Scene controller writes its
// status at the same time.
func editScene(ctx context.Context, ns, name string, edit func(*ergonv1alpha1.Scene)) *ergonv1alpha1.Scene {
	scene := &ergonv1alpha1.Scene{}
	Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, scene); err != nil {
			return err
		}
		edit(scene)
		return k8sClient.Update(ctx, scene)
	})).To(Succeed())
	return scene
}

func createRun(ctx context.Context, ns, name, scene string, params map[string]string) *ergonv1alpha1.Run {
	run := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: ergonv1alpha1.RunSpec{SceneRef: corev1.LocalObjectReference{Name: scene}, Params: params}}
	Expect(k8sClient.Create(ctx, run)).To(Succeed())
	return run
}

// finished waits for a Run to finish and returns it.
func finished(ctx context.Context, ns, name string) *ergonv1alpha1.Run {
	run := &ergonv1alpha1.Run{}
	Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, run)).To(Succeed())
		g.Expect(run.Status.Phase.Finished()).To(BeTrue(), "phase %s", run.Status.Phase)
	}).WithTimeout(30 * time.Second).Should(Succeed())
	return run
}

func stepStatus(run *ergonv1alpha1.Run, name string) ergonv1alpha1.StepStatus {
	for _, s := range run.Status.Steps {
		if s.Name == name {
			return s
		}
	}
	Fail("the Run has no status for step " + name)
	return ergonv1alpha1.StepStatus{}
}

// stepOf is stepStatus inside an Eventually: a Run whose status lacks the step yet fails only
// this try.
func stepOf(g Gomega, run *ergonv1alpha1.Run, name string) ergonv1alpha1.StepStatus {
	for _, s := range run.Status.Steps {
		if s.Name == name {
			return s
		}
	}
	g.Expect(run.Status.Steps).To(ContainElement(HaveField("Name", name)), "the Run has no status for step %s yet", name)
	return ergonv1alpha1.StepStatus{}
}

var _ = Describe("The Run controller", func() {
	BeforeEach(func() {
		ctx, cancel := context.WithCancel(context.Background())
		go testKubelet.run(ctx)
		DeferCleanup(cancel)
	})

	It("runs a three-step Scene and passes outputs from step to step", func(ctx SpecContext) {
		ns := newNamespace(ctx, echoLastArg)
		createScene(ctx, ns, "report",
			container("fetch", "sprint {{ .params.sprint }}"),
			container("draft", `{"title": "report of {{ .steps.fetch.output }}"}`, "fetch"),
			container("publish", "publishing {{ .steps.draft.outputs.title }}", "draft"),
		)
		scene := editScene(ctx, ns, "report", func(s *ergonv1alpha1.Scene) {
			s.Spec.Params = []ergonv1alpha1.ParamSpec{{Name: "sprint", Default: new("42")}}
		})
		createRun(ctx, ns, "report-43", "report", map[string]string{"sprint": "43"})

		run := finished(ctx, ns, "report-43")
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded))
		Expect(run.Status.Progress).To(Equal("3/3"))
		Expect(run.Status.SceneGeneration).To(Equal(scene.Generation))
		Expect(stepStatus(run, "draft").Output.Preview).To(Equal(`{"title": "report of sprint 43"}`))
		Expect(run.Status.Outputs).To(HaveKeyWithValue("publish", HaveField("Preview", "publishing report of sprint 43")))
		cond := meta.FindStatusCondition(run.Status.Conditions, ergonv1alpha1.ConditionSucceeded)
		Expect(cond).NotTo(BeNil())
		Expect(cond.Status).To(Equal(metav1.ConditionTrue))

		By("deleting the step pods once their outputs are safe")
		Eventually(func(g Gomega) {
			pods := &corev1.PodList{}
			g.Expect(k8sClient.List(ctx, pods, client.InNamespace(ns))).To(Succeed())
			g.Expect(pods.Items).To(BeEmpty())
		}).WithTimeout(10 * time.Second).Should(Succeed())
	})

	It("builds step pods without credentials that meet the restricted profile", func(ctx SpecContext) {
		ns := newNamespace(ctx, func(*corev1.Pod) outcome { return outcome{Stay: true} })
		createScene(ctx, ns, "one", container("only", "true"))
		createRun(ctx, ns, "one-1", "one", nil)
		pod := &corev1.Pod{}
		Eventually(func() error {
			return k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: naming.StepPodName("one-1", "only", 1)}, pod)
		}).Should(Succeed())
		Expect(pod.Spec.AutomountServiceAccountToken).To(HaveValue(BeFalse()))
		Expect(pod.Labels).To(HaveKeyWithValue(ergonv1alpha1.LabelStep, "only"))
		Expect(pod.Labels).To(HaveKeyWithValue(ergonv1alpha1.LabelAttempt, "1"))
		Expect(pod.OwnerReferences).To(ConsistOf(HaveField("Name", "one-1")))
		for _, c := range append(pod.Spec.InitContainers, pod.Spec.Containers...) {
			Expect(c.SecurityContext.ReadOnlyRootFilesystem).To(HaveValue(BeTrue()), c.Name)
			Expect(c.SecurityContext.AllowPrivilegeEscalation).To(HaveValue(BeFalse()), c.Name)
			Expect(c.SecurityContext.Capabilities.Drop).To(ConsistOf(corev1.Capability("ALL")), c.Name)
		}
		Expect(pod.Spec.SecurityContext.RunAsNonRoot).To(HaveValue(BeTrue()))
		Expect(pod.Spec.SecurityContext.SeccompProfile.Type).To(Equal(corev1.SeccompProfileTypeRuntimeDefault))
	})

	It("retries a failing step with a new pod per attempt, then fails the Run", func(ctx SpecContext) {
		ns := newNamespace(ctx, func(*corev1.Pod) outcome { return outcome{ExitCode: 3} })
		createScene(ctx, ns, "flaky", withRetry(container("try", "exit 3"), 2), container("after", "never", "try"))
		createRun(ctx, ns, "flaky-1", "flaky", nil)

		run := finished(ctx, ns, "flaky-1")
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunFailed))
		try := stepStatus(run, "try")
		Expect(try.Phase).To(Equal(ergonv1alpha1.StepFailed))
		Expect(try.Attempts).To(BeEquivalentTo(3))
		Expect(try.History).To(HaveLen(3))
		Expect(try.History[2].PodName).To(Equal(naming.StepPodName("flaky-1", "try", 3)))
		Expect(try.History[2].ExitCode).To(HaveValue(BeEquivalentTo(3)))
		Expect(try.Message).To(ContainSubstring("exited with code 3"))
		Expect(stepStatus(run, "after").Phase).To(Equal(ergonv1alpha1.StepSkipped))
		cond := meta.FindStatusCondition(run.Status.Conditions, ergonv1alpha1.ConditionSucceeded)
		Expect(cond.Status).To(Equal(metav1.ConditionFalse))
		Expect(cond.Reason).To(Equal(ergonv1alpha1.ReasonStepFailed))
	})

	It("succeeds when a retry succeeds", func(ctx SpecContext) {
		ns := newNamespace(ctx, func(pod *corev1.Pod) outcome {
			if pod.Labels[ergonv1alpha1.LabelAttempt] == "1" {
				return outcome{ExitCode: 1}
			}
			return outcome{Output: "second time lucky"}
		})
		createScene(ctx, ns, "flaky", withRetry(container("try", "maybe"), 2))
		createRun(ctx, ns, "flaky-2", "flaky", nil)
		run := finished(ctx, ns, "flaky-2")
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded))
		Expect(stepStatus(run, "try").Attempts).To(BeEquivalentTo(2))
		Expect(stepStatus(run, "try").Output.Preview).To(Equal("second time lucky"))
	})

	It("fails a step that runs past its timeout with StepTimedOut", func(ctx SpecContext) {
		ns := newNamespace(ctx, func(*corev1.Pod) outcome { return outcome{Reason: "DeadlineExceeded"} })
		slow := container("slow", "sleep 3600")
		slow.Timeout = &metav1.Duration{Duration: 5 * time.Second}
		createScene(ctx, ns, "slow", slow)
		createRun(ctx, ns, "slow-1", "slow", nil)
		pod := &corev1.Pod{}
		Eventually(func() error {
			return k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: naming.StepPodName("slow-1", "slow", 1)}, pod)
		}).Should(Succeed())
		Expect(pod.Spec.ActiveDeadlineSeconds).To(HaveValue(BeEquivalentTo(5)))

		run := finished(ctx, ns, "slow-1")
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunFailed))
		Expect(stepStatus(run, "slow").Reason).To(Equal(ergonv1alpha1.ReasonStepTimedOut))
		Expect(meta.FindStatusCondition(run.Status.Conditions, ergonv1alpha1.ConditionSucceeded).Reason).
			To(Equal(ergonv1alpha1.ReasonStepTimedOut))
	})

	It("cancels a Run: its pods stop and it ends Cancelled", func(ctx SpecContext) {
		ns := newNamespace(ctx, func(*corev1.Pod) outcome { return outcome{Stay: true} })
		createScene(ctx, ns, "forever", container("wait", "sleep 3600"), container("after", "x", "wait"))
		run := createRun(ctx, ns, "forever-1", "forever", nil)
		Eventually(func() error {
			return k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: naming.StepPodName("forever-1", "wait", 1)}, &corev1.Pod{})
		}).Should(Succeed())

		Expect(k8sClient.Patch(ctx, run, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"cancel":true}}`)))).To(Succeed())
		run = finished(ctx, ns, "forever-1")
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunCancelled))
		Expect(stepStatus(run, "wait").Phase).To(Equal(ergonv1alpha1.StepCancelled))
		Eventually(func() error {
			return k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: naming.StepPodName("forever-1", "wait", 1)}, &corev1.Pod{})
		}).Should(MatchError(ContainSubstring("not found")))
	})

	It("runs a sub-scene as a child Run whose output becomes the step's", func(ctx SpecContext) {
		ns := newNamespace(ctx, echoLastArg)
		createScene(ctx, ns, "publish", container("post", "posted {{ .params.body }}"))
		editScene(ctx, ns, "publish", func(s *ergonv1alpha1.Scene) { s.Spec.Params = []ergonv1alpha1.ParamSpec{{Name: "body"}} })
		createScene(ctx, ns, "report",
			container("draft", "the draft"),
			ergonv1alpha1.Step{Name: "publish", DependsOn: []string{"draft"}, Scene: &ergonv1alpha1.SceneCall{
				Name: "publish", Params: map[string]string{"body": "{{ .steps.draft.output }}"},
			}},
			container("announce", "announced: {{ .steps.publish.output }}", "publish"),
		)
		createRun(ctx, ns, "report-1", "report", nil)
		run := finished(ctx, ns, "report-1")
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded))
		child := stepStatus(run, "publish").ChildRun
		Expect(child).NotTo(BeEmpty())
		Expect(stepStatus(run, "publish").Output.Preview).To(Equal("posted the draft"))
		Expect(stepStatus(run, "announce").Output.Preview).To(Equal("announced: posted the draft"))

		childRun := &ergonv1alpha1.Run{}
		Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: child}, childRun)).To(Succeed())
		Expect(childRun.Labels).To(HaveKeyWithValue(ergonv1alpha1.LabelParentRun, "report-1"))
		Expect(childRun.OwnerReferences).To(ConsistOf(HaveField("Name", "report-1")))
	})

	It("fails a scene step whose child Run someone deleted, rather than waiting for it", func(ctx SpecContext) {
		ns := newNamespace(ctx, echoLastArg)
		createScene(ctx, ns, "review", ergonv1alpha1.Step{Name: "approve", Gate: &ergonv1alpha1.GateStep{Message: "go?"}})
		createScene(ctx, ns, "ship", ergonv1alpha1.Step{Name: "review", Scene: &ergonv1alpha1.SceneCall{Name: "review"}})
		createRun(ctx, ns, "ship-1", "ship", nil)
		var child string
		Eventually(func(g Gomega) {
			_, review := runStep(ctx, ns, "ship-1", "review")
			g.Expect(review.ChildRun).NotTo(BeEmpty())
			child = review.ChildRun
			g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: child}, &ergonv1alpha1.Run{})).To(Succeed())
		}).WithTimeout(10 * time.Second).Should(Succeed())
		Expect(k8sClient.Delete(ctx, &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: child}})).To(Succeed())

		run := finished(ctx, ns, "ship-1")
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunFailed))
		review := stepStatus(run, "review")
		Expect(review.Reason).To(Equal(ergonv1alpha1.ReasonChildRunFailed))
		Expect(review.Message).To(ContainSubstring("deleted before it finished"))
	})

	It("stops sub-scenes that nest past the depth limit", func(ctx SpecContext) {
		ns := newNamespace(ctx, echoLastArg)
		createScene(ctx, ns, "loop", ergonv1alpha1.Step{Name: "again", Scene: &ergonv1alpha1.SceneCall{Name: "loop"}})
		createRun(ctx, ns, "loop-1", "loop", nil)
		run := finished(ctx, ns, "loop-1")
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunFailed))
		Expect(stepStatus(run, "again").Message).To(ContainSubstring("nest deeper than 3"))
	})

	It("keeps executing its snapshot when the Scene changes mid-run", func(ctx SpecContext) {
		release := make(chan struct{})
		ns := newNamespace(ctx, func(pod *corev1.Pod) outcome {
			if pod.Labels[ergonv1alpha1.LabelStep] == "first" {
				select {
				case <-release:
				default:
					return outcome{Stay: true}
				}
			}
			return echoLastArg(pod)
		})
		createScene(ctx, ns, "stable", container("first", "one"), container("second", "original", "first"))
		createRun(ctx, ns, "stable-1", "stable", nil)
		Eventually(func() error {
			return k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: naming.StepPodName("stable-1", "first", 1)}, &corev1.Pod{})
		}).Should(Succeed())

		editScene(ctx, ns, "stable", func(s *ergonv1alpha1.Scene) { s.Spec.Steps[1].Container.Command = []string{"sh", "-c", "edited"} })
		close(release)

		run := finished(ctx, ns, "stable-1")
		Expect(stepStatus(run, "second").Output.Preview).To(Equal("original"))
		Expect(run.Status.SceneGeneration).To(BeEquivalentTo(1))
	})

	It("hands a large output back through the log, keeps it in a ConfigMap and mounts it into the next step", func(ctx SpecContext) {
		big := strings.Repeat("0123456789abcdef", 32*1024) // 512 KiB
		release := make(chan struct{})
		ns := newNamespace(ctx, func(pod *corev1.Pod) outcome {
			switch pod.Labels[ergonv1alpha1.LabelStep] {
			case "produce":
				return outcome{Output: big}
			case "small":
				return outcome{Output: "tiny"}
			}
			select {
			case <-release:
				return outcome{Output: strings.Join(stepArgs(pod), " ")}
			default:
				return outcome{Stay: true}
			}
		})
		createScene(ctx, ns, "big", container("produce", "big"), container("small", "small"),
			container("consume", "{{ len .steps.produce.output }}", "produce", "small"))
		createRun(ctx, ns, "big-1", "big", nil)

		By("handing both inputs to the consuming pod as files")
		pod := &corev1.Pod{}
		Eventually(func() error {
			return k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: naming.StepPodName("big-1", "consume", 1)}, pod)
		}).Should(Succeed())
		var inputs *corev1.ProjectedVolumeSource
		for _, v := range pod.Spec.Volumes {
			if v.Name == "ergon-inputs" {
				inputs = v.Projected
			}
		}
		Expect(inputs).NotTo(BeNil())
		Expect(inputs.Sources).To(ContainElement(
			HaveField("ConfigMap.LocalObjectReference.Name", naming.OutputConfigMapName("big-1", "produce"))))
		Expect(pod.Annotations).To(HaveKeyWithValue("inputs.ergon.dev/small", "tiny"))
		Expect(pod.Spec.Containers[0].VolumeMounts).To(ContainElement(HaveField("MountPath", "/ergon/inputs")))
		close(release)

		run := finished(ctx, ns, "big-1")
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded))
		out := stepStatus(run, "produce").Output
		Expect(out.Size).To(BeEquivalentTo(len(big)))
		Expect(out.Preview).To(HaveLen(1024))
		Expect(out.Ref).NotTo(BeNil())
		cm := &corev1.ConfigMap{}
		Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: out.Ref.ConfigMap}, cm)).To(Succeed())
		Expect(cm.Data[out.Ref.Key]).To(Equal(big))
		Expect(stepStatus(run, "consume").Output.Preview).To(HaveSuffix("524288"))
	})

	It("waits on a Gate, and goes down the onTimeout branch when nobody decides in time", func(ctx SpecContext) {
		ns := newNamespace(ctx, echoLastArg)
		approved := container("publish", "published", "review")
		approved.When = "steps.review.decision == 'approve'"
		rejected := container("discard", "discarded", "review")
		rejected.When = "steps.review.decision == 'reject'"
		createScene(ctx, ns, "review", container("draft", "draft"),
			ergonv1alpha1.Step{Name: "review", DependsOn: []string{"draft"}, Gate: &ergonv1alpha1.GateStep{
				Message: "Publish {{ .steps.draft.output }}?", Timeout: &metav1.Duration{Duration: 2 * time.Second}, OnTimeout: "reject"}},
			approved, rejected)
		createRun(ctx, ns, "review-1", "review", nil)
		Eventually(func(g Gomega) {
			run := &ergonv1alpha1.Run{}
			g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "review-1"}, run)).To(Succeed())
			g.Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunWaiting))
		}).Should(Succeed())

		run := finished(ctx, ns, "review-1")
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded))
		Expect(stepStatus(run, "review").Decision).To(Equal("reject"))
		Expect(stepStatus(run, "discard").Phase).To(Equal(ergonv1alpha1.StepSucceeded))
		Expect(stepStatus(run, "publish").Phase).To(Equal(ergonv1alpha1.StepSkipped))
		gate := &ergonv1alpha1.Gate{}
		Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: naming.GateName("review-1", "review")}, gate)).To(Succeed())
		Expect(gate.Spec.Message).To(Equal("Publish draft?"))
		Expect(gate.Status.Phase).To(Equal(ergonv1alpha1.GateTimedOut))
		Expect(gate.Status.DecidedBy).To(Equal("timeout"))
	})

	It("resumes a Run once a Gate has its quorum of approvals", func(ctx SpecContext) {
		ns := newNamespace(ctx, echoLastArg)
		createScene(ctx, ns, "quorum",
			ergonv1alpha1.Step{Name: "ask", Gate: &ergonv1alpha1.GateStep{MinApprovals: new(int32(2))}},
			container("go", "went {{ .steps.ask.decision }}", "ask"))
		createRun(ctx, ns, "quorum-1", "quorum", nil)
		gate := &ergonv1alpha1.Gate{}
		Eventually(func() error {
			return k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: naming.GateName("quorum-1", "ask")}, gate)
		}).Should(Succeed())
		vote := func(users ...string) {
			var approvals []string
			for _, u := range users {
				approvals = append(approvals, `{"user":"`+u+`","option":"approve"}`)
			}
			patch := []byte(`{"spec":{"approvals":[` + strings.Join(approvals, ",") + `]}}`)
			Expect(k8sClient.Patch(ctx, gate, client.RawPatch(types.MergePatchType, patch))).To(Succeed())
		}
		// Admission refuses a decision on a quorum Gate; should one get through, neither the Gate
		// nor the Run takes it.
		Expect(k8sClient.Patch(ctx, gate, client.RawPatch(types.MergePatchType,
			[]byte(`{"spec":{"decision":{"option":"approve","user":"mallory"}}}`)))).To(Succeed())
		vote("alice")
		waiting := func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(gate), gate)).To(Succeed())
			g.Expect(gate.Status.Phase).To(Equal(ergonv1alpha1.GatePending), "one approval of two decides nothing, nor a decision")
			g.Expect(gate.Status.ObservedGeneration).To(Equal(gate.Generation))
			run := &ergonv1alpha1.Run{}
			g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "quorum-1"}, run)).To(Succeed())
			g.Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunWaiting))
		}
		Eventually(waiting).Should(Succeed())
		Consistently(waiting).WithTimeout(2 * time.Second).Should(Succeed())
		vote("alice", "carol")
		run := finished(ctx, ns, "quorum-1")
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded))
		Expect(stepStatus(run, "go").Output.Preview).To(Equal("went approve"))
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(gate), gate)).To(Succeed())
		Expect(gate.Status.DecidedBy).To(Equal("alice, carol"))
	})

	It("deletes a finished Run once its time to live has passed", func(ctx SpecContext) {
		ns := newNamespace(ctx, echoLastArg)
		createScene(ctx, ns, "brief", container("only", "done"))
		run := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: "brief-1", Namespace: ns},
			Spec: ergonv1alpha1.RunSpec{SceneRef: corev1.LocalObjectReference{Name: "brief"}, TTLSecondsAfterFinished: new(int32(1))}}
		Expect(k8sClient.Create(ctx, run)).To(Succeed())
		Expect(finished(ctx, ns, "brief-1").Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded))
		Eventually(func() error {
			return k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "brief-1"}, &ergonv1alpha1.Run{})
		}).WithTimeout(10 * time.Second).Should(MatchError(ContainSubstring("not found")))
	})

	It("keeps the snapshot of a large Scene in a ConfigMap instead of the Run", func(ctx SpecContext) {
		ns := newNamespace(ctx, func(*corev1.Pod) outcome { return outcome{Output: "done"} })
		padding := strings.Repeat("x", 30<<10)
		createScene(ctx, ns, "large", container("a", "# "+padding), container("b", "# "+padding, "a"),
			container("c", "# "+padding, "b"))
		createRun(ctx, ns, "large-1", "large", nil)
		run := finished(ctx, ns, "large-1")
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded))
		Expect(run.Status.SceneSnapshot).To(BeNil())
		Expect(run.Status.SceneSnapshotRef).NotTo(BeNil())
		cm := &corev1.ConfigMap{}
		Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: run.Status.SceneSnapshotRef.ConfigMap}, cm)).To(Succeed())
		Expect(cm.Data[run.Status.SceneSnapshotRef.Key]).To(ContainSubstring(padding))
		Expect(cm.OwnerReferences).To(ConsistOf(HaveField("Name", "large-1")))
	})

	It("fails a Run whose Scene does not exist yet only when it is invalid, and waits otherwise", func(ctx SpecContext) {
		ns := newNamespace(ctx, echoLastArg)
		createRun(ctx, ns, "early", "later", nil)
		Eventually(func(g Gomega) {
			run := &ergonv1alpha1.Run{}
			g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "early"}, run)).To(Succeed())
			cond := meta.FindStatusCondition(run.Status.Conditions, ergonv1alpha1.ConditionSucceeded)
			g.Expect(cond).NotTo(BeNil())
			g.Expect(cond.Reason).To(Equal(ergonv1alpha1.ReasonSceneNotFound))
		}).Should(Succeed())
		createScene(ctx, ns, "later", container("go", "went"))
		Expect(finished(ctx, ns, "early").Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded))

		createRun(ctx, ns, "bad-params", "later", map[string]string{"nope": "1"})
		run := finished(ctx, ns, "bad-params")
		cond := meta.FindStatusCondition(run.Status.Conditions, ergonv1alpha1.ConditionSucceeded)
		Expect(cond.Reason).To(Equal(ergonv1alpha1.ReasonInvalidParams))
		Expect(cond.Message).To(ContainSubstring(`spec.params[nope]: Unsupported value: "nope"`))
	})

	It("cancels a Run that is still waiting for its Scene", func(ctx SpecContext) {
		ns := newNamespace(ctx, echoLastArg)
		createRun(ctx, ns, "waiting", "never", nil)
		key := types.NamespacedName{Namespace: ns, Name: "waiting"}
		Eventually(func(g Gomega) {
			run := &ergonv1alpha1.Run{}
			g.Expect(k8sClient.Get(ctx, key, run)).To(Succeed())
			g.Expect(meta.FindStatusCondition(run.Status.Conditions, ergonv1alpha1.ConditionSucceeded)).
				To(HaveField("Reason", ergonv1alpha1.ReasonSceneNotFound))
		}).Should(Succeed())
		run := &ergonv1alpha1.Run{}
		Expect(k8sClient.Get(ctx, key, run)).To(Succeed())
		patch := client.MergeFrom(run.DeepCopy())
		run.Spec.Cancel = true
		Expect(k8sClient.Patch(ctx, run, patch)).To(Succeed())
		run = finished(ctx, ns, "waiting")
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunCancelled))
		Expect(meta.FindStatusCondition(run.Status.Conditions, ergonv1alpha1.ConditionSucceeded)).
			To(HaveField("Reason", ergonv1alpha1.ReasonCancelled))
		Expect(run.Status.SceneSnapshot).To(BeNil(), "a cancelled Run never took a snapshot")
	})
})
