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
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/controllers/internal/shared"
	runcontroller "github.com/ergon-dev/ergon/controllers/run"
	"github.com/ergon-dev/ergon/internal/naming"
)

// waitingStep is the status the kubelet reports for a pod whose step container cannot start.
func waitingStep(reason, message string) holding {
	return func(pod *corev1.Pod) *corev1.PodStatus {
		return &corev1.PodStatus{Phase: corev1.PodPending,
			Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}},
			InitContainerStatuses: []corev1.ContainerStatus{{Name: initContainer, Ready: true, State: corev1.ContainerState{
				Terminated: &corev1.ContainerStateTerminated{Reason: "Completed"}}}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: shared.StepContainer, Image: pod.Spec.Containers[0].Image,
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: message}}}},
		}
	}
}

// runStep reads a Run and the status of one of its steps.
// fullPodQuota makes a ResourceQuota of one pod in ns, full, and waits until the API server
// refuses pods for it; setUsed("0") makes room. No quota controller runs here: the quota's
// status, which the API server's quota admission counts against, is written by hand.
func fullPodQuota(ctx context.Context, ns string) (setUsed func(used string)) {
	quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "pods", Namespace: ns},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("1")}}}
	Expect(k8sClient.Create(ctx, quota)).To(Succeed())
	setUsed = func(used string) {
		quota.Status = corev1.ResourceQuotaStatus{Hard: quota.Spec.Hard,
			Used: corev1.ResourceList{corev1.ResourcePods: resource.MustParse(used)}}
		Expect(k8sClient.Status().Update(ctx, quota)).To(Succeed())
	}
	setUsed("1")
	Eventually(func() error {
		probe := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "probe-", Namespace: ns},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox:test"}}}}
		return k8sClient.Create(ctx, probe, client.DryRunAll)
	}).WithTimeout(10 * time.Second).Should(MatchError(ContainSubstring("exceeded quota")))
	return setUsed
}

func runStep(ctx context.Context, ns, run, step string) (*ergonv1alpha1.Run, ergonv1alpha1.StepStatus) {
	r := getRun(ctx, ns, run)
	for _, s := range r.Status.Steps {
		if s.Name == step {
			return r, s
		}
	}
	return r, ergonv1alpha1.StepStatus{}
}

func succeededMessage(run *ergonv1alpha1.Run) string {
	if c := meta.FindStatusCondition(run.Status.Conditions, ergonv1alpha1.ConditionSucceeded); c != nil {
		return c.Message
	}
	return ""
}

// warnings lists the Events about a Run with the given reason.
func warnings(ctx context.Context, ns, run, reason string) []eventsv1.Event {
	list := &eventsv1.EventList{}
	Expect(k8sClient.List(ctx, list, client.InNamespace(ns))).To(Succeed())
	var out []eventsv1.Event
	for _, e := range list.Items {
		if e.Regarding.Name == run && e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}

var _ = Describe("The Run controller and pods that do not run", func() {
	BeforeEach(func() {
		ctx, cancel := context.WithCancel(context.Background())
		go testKubelet.run(ctx)
		DeferCleanup(cancel)
	})

	It("shows a step whose image cannot be pulled as Pending, told once, and fails it after its pendingTimeout", func(ctx SpecContext) {
		ns := newNamespace(ctx, echoLastArg)
		testKubelet.hold(ns, waitingStep("ImagePullBackOff", `Back-off pulling image "busybox:test"`))
		DeferCleanup(func() { testKubelet.hold(ns, nil) })
		build := container("build", "make")
		build.PendingTimeout = &metav1.Duration{Duration: 4 * time.Second}
		createScene(ctx, ns, "pull", build, container("ship", "ship", "build"))
		createRun(ctx, ns, "pull-1", "pull", nil)

		Eventually(func(g Gomega) {
			run, s := runStep(ctx, ns, "pull-1", "build")
			g.Expect(s.Phase).To(Equal(ergonv1alpha1.StepPending))
			g.Expect(s.Reason).To(Equal("ImagePullBackOff"))
			g.Expect(s.Message).To(ContainSubstring(`the image "busybox:test" of the step's container cannot be pulled`))
			g.Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunRunning))
			g.Expect(succeededMessage(run)).To(ContainSubstring("step build cannot start (ImagePullBackOff)"))
		}).WithTimeout(3 * time.Second).Should(Succeed())

		run := finished(ctx, ns, "pull-1")
		s := stepStatus(run, "build")
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunFailed))
		Expect(s.Phase).To(Equal(ergonv1alpha1.StepFailed))
		Expect(s.Reason).To(Equal("ImagePullBackOff"))
		Expect(s.Message).To(HavePrefix("the pod did not start within the pendingTimeout of 4s: the image"))
		Expect(succeededMessage(run)).To(ContainSubstring("step build failed: the pod did not start"))
		Expect(stepStatus(run, "ship").Phase).To(Equal(ergonv1alpha1.StepSkipped))

		events := warnings(ctx, ns, "pull-1", "ImagePullBackOff")
		Expect(events).To(HaveLen(1))
		Expect(events[0].Series).To(BeNil(), "told once, not once per look at the pod")
		Eventually(func(g Gomega) {
			pods := &corev1.PodList{}
			g.Expect(k8sClient.List(ctx, pods, client.InNamespace(ns))).To(Succeed())
			g.Expect(pods.Items).To(BeEmpty(), "the pod that never started is deleted")
		}).Should(Succeed())
	})

	It("shows a missing Secret until it exists, then runs the step", func(ctx SpecContext) {
		ns := newNamespace(ctx, echoLastArg)
		testKubelet.hold(ns, waitingStep("CreateContainerConfigError", `secret "db-creds" not found`))
		DeferCleanup(func() { testKubelet.hold(ns, nil) })
		createScene(ctx, ns, "secret", container("query", "done"))
		createRun(ctx, ns, "secret-1", "secret", nil)

		Eventually(func(g Gomega) {
			run, s := runStep(ctx, ns, "secret-1", "query")
			g.Expect(s.Phase).To(Equal(ergonv1alpha1.StepPending))
			g.Expect(s.Reason).To(Equal("CreateContainerConfigError"))
			g.Expect(s.Message).To(Equal(`the step's container cannot be configured: secret "db-creds" not found`))
			g.Expect(succeededMessage(run)).To(ContainSubstring(`step query cannot start (CreateContainerConfigError)`))
		}).WithTimeout(3 * time.Second).Should(Succeed())

		By("creating the Secret, which the kubelet then finds")
		testKubelet.hold(ns, nil)
		run := finished(ctx, ns, "secret-1")
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded))
		s := stepStatus(run, "query")
		Expect(s.Reason).To(BeEmpty())
		Expect(s.Attempts).To(Equal(int32(1)))
	})

	It("shows an unschedulable pod with the scheduler's message", func(ctx SpecContext) {
		ns := newNamespace(ctx, echoLastArg)
		testKubelet.hold(ns, func(*corev1.Pod) *corev1.PodStatus {
			return &corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
				Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable",
				Message: "0/1 nodes are available: 1 Insufficient memory."}}}
		})
		DeferCleanup(func() { testKubelet.hold(ns, nil) })
		createScene(ctx, ns, "big", container("train", "train"))
		createRun(ctx, ns, "big-1", "big", nil)
		Eventually(func(g Gomega) {
			_, s := runStep(ctx, ns, "big-1", "train")
			g.Expect(s.Phase).To(Equal(ergonv1alpha1.StepPending))
			g.Expect(s.Reason).To(Equal("Unschedulable"))
			g.Expect(s.Message).To(Equal("the pod cannot be scheduled: 0/1 nodes are available: 1 Insufficient memory."))
		}).WithTimeout(3 * time.Second).Should(Succeed())
		cancelRun(ctx, ns, "big-1")
	})

	It("fails a step that runs out of memory with OOMKilled and its limit", func(ctx SpecContext) {
		ns := newNamespace(ctx, func(*corev1.Pod) outcome { return outcome{OOM: true} })
		hog := container("hog", "eat memory")
		hog.Container.Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}
		createScene(ctx, ns, "oom", hog)
		createRun(ctx, ns, "oom-1", "oom", nil)
		run := finished(ctx, ns, "oom-1")
		s := stepStatus(run, "hog")
		Expect(s.Phase).To(Equal(ergonv1alpha1.StepFailed))
		Expect(s.Reason).To(Equal("OOMKilled"))
		Expect(s.Message).To(ContainSubstring("memory limit of 64Mi"))
		Expect(s.History).To(ConsistOf(HaveField("ExitCode", HaveValue(Equal(int32(137))))))
		Expect(succeededMessage(run)).To(ContainSubstring("step hog failed: the step ran out of memory"))
	})

	It("takes a step as done when its command ended on its own, before the kubelet has stopped its pod", func(ctx SpecContext) {
		// The kubelet keeps a pod Running for a second or two after its container ended; the
		// test kubelet keeps it so for good. Only the container's end and the entrypoint's
		// report say the step is done.
		ns := newNamespace(ctx, func(pod *corev1.Pod) outcome {
			o := echoLastArg(pod)
			o.Lingering = true
			return o
		})
		createScene(ctx, ns, "linger", container("first", "one"),
			container("second", "got {{ .steps.first.output }}", "first"))
		createRun(ctx, ns, "linger-1", "linger", nil)
		run := finished(ctx, ns, "linger-1")
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded))
		Expect(stepStatus(run, "second").Output.Preview).To(Equal("got one"))
	})

	It("waits for the kubelet's word on a step whose command exited 0 only when asked to stop", func(ctx SpecContext) {
		ns := newNamespace(ctx, func(pod *corev1.Pod) outcome {
			o := echoLastArg(pod)
			o.Lingering, o.Signaled = true, true
			return o
		})
		createScene(ctx, ns, "stopped", container("work", "done"))
		createRun(ctx, ns, "stopped-1", "stopped", nil)
		run := &ergonv1alpha1.Run{}
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "stopped-1"}, run)).To(Succeed())
			g.Expect(stepOf(g, run, "work").Phase).To(Equal(ergonv1alpha1.StepRunning))
			pods := &corev1.PodList{}
			g.Expect(k8sClient.List(ctx, pods, client.InNamespace(ns))).To(Succeed())
			g.Expect(pods.Items).To(ConsistOf(HaveField("Status.ContainerStatuses",
				ConsistOf(HaveField("State.Terminated", Not(BeNil()))))))
		}).Should(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "stopped-1"}, run)).To(Succeed())
			g.Expect(stepOf(g, run, "work").Phase).To(Equal(ergonv1alpha1.StepRunning))
		}).WithTimeout(2 * time.Second).Should(Succeed())
	})

	It("retries an evicted step", func(ctx SpecContext) {
		ns := newNamespace(ctx, func(pod *corev1.Pod) outcome {
			if pod.Labels[ergonv1alpha1.LabelAttempt] == "1" {
				return outcome{Reason: "Evicted", Message: "The node was low on resource: ephemeral-storage."}
			}
			return echoLastArg(pod)
		})
		createScene(ctx, ns, "evict", withRetry(container("work", "done"), 1))
		createRun(ctx, ns, "evict-1", "evict", nil)
		run := finished(ctx, ns, "evict-1")
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded))
		s := stepStatus(run, "work")
		Expect(s.Attempts).To(Equal(int32(2)))
		Expect(s.History).To(ConsistOf(And(HaveField("Reason", "Evicted"),
			HaveField("Message", "the pod was evicted: The node was low on resource: ephemeral-storage."))))
	})

	It("retries a step whose pod someone deleted, in a new pod, never the same one twice", func(ctx SpecContext) {
		ns := newNamespace(ctx, func(pod *corev1.Pod) outcome {
			if pod.Labels[ergonv1alpha1.LabelAttempt] == "1" {
				return outcome{Stay: true}
			}
			return echoLastArg(pod)
		})
		created := watchPodCreations(ctx, ns)
		createScene(ctx, ns, "vanish", withRetry(container("work", "done"), 2))
		createRun(ctx, ns, "vanish-1", "vanish", nil)
		pod := &corev1.Pod{}
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: naming.StepPodName("vanish-1", "work", 1)}, pod)).To(Succeed())
			g.Expect(pod.Status.Phase).To(Equal(corev1.PodRunning))
		}).Should(Succeed())
		Expect(k8sClient.Delete(ctx, pod)).To(Succeed())

		run := finished(ctx, ns, "vanish-1")
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded))
		s := stepStatus(run, "work")
		Expect(s.Attempts).To(Equal(int32(2)))
		Expect(s.PodName).To(Equal(naming.StepPodName("vanish-1", "work", 2)))
		Expect(s.History).To(ConsistOf(And(HaveField("Reason", "PodDeleted"), HaveField("PodName", naming.StepPodName("vanish-1", "work", 1)))))
		Expect(created.duplicates()).To(BeEmpty())
		Expect(created.count()).To(Equal(2))
	})

	It("fails the attempt of a step whose pod the API server refuses, tells why, and goes on with the Run", func(ctx SpecContext) {
		ns := newNamespace(ctx, echoLastArg)
		// Only the pods of the step "work": the rest of the Run must go on.
		refusePods(ctx, ns, ergonv1alpha1.LabelStep, "work")

		createScene(ctx, ns, "refused", withRetry(container("work", "done"), 1), container("other", "fine"))
		createRun(ctx, ns, "refused-1", "refused", nil)
		Eventually(func(g Gomega) {
			refused := warnings(ctx, ns, "refused-1", "PodRefused")
			g.Expect(refused).NotTo(BeEmpty())
			g.Expect(refused[0].Note).To(And(ContainSubstring("Step work cannot create its pod "+naming.StepPodName("refused-1", "work", 1)),
				ContainSubstring("pods are not allowed here")))
		}).WithTimeout(10 * time.Second).Should(Succeed())

		By("the refused step failing after its retry, with the API server's message, while the other step runs")
		Eventually(func(g Gomega) {
			run, work := runStep(ctx, ns, "refused-1", "work")
			g.Expect(work.Phase).To(Equal(ergonv1alpha1.StepFailed))
			g.Expect(work.Reason).To(Equal(ergonv1alpha1.ReasonPodRefused))
			g.Expect(work.Attempts).To(BeEquivalentTo(2))
			g.Expect(work.Message).To(ContainSubstring("pods are not allowed here"))
			_, other := runStep(ctx, ns, "refused-1", "other")
			g.Expect(other.Phase).To(Equal(ergonv1alpha1.StepSucceeded))
			g.Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunFailed))
		}).WithTimeout(20 * time.Second).Should(Succeed())
	})

	It("keeps a step whose pod a full ResourceQuota refuses Pending, and starts it once there is room", func(ctx SpecContext) {
		ns := newNamespace(ctx, echoLastArg)
		setUsed := fullPodQuota(ctx, ns)

		createScene(ctx, ns, "quota", container("work", "done"))
		createRun(ctx, ns, "quota-1", "quota", nil)
		Eventually(func(g Gomega) {
			_, work := runStep(ctx, ns, "quota-1", "work")
			g.Expect(work.Phase).To(Equal(ergonv1alpha1.StepPending))
			g.Expect(work.Reason).To(Equal(ergonv1alpha1.ReasonExceededQuota))
			g.Expect(work.Message).To(ContainSubstring("exceeded quota: pods"))
		}).WithTimeout(10 * time.Second).Should(Succeed())
		Eventually(func(g Gomega) {
			told := warnings(ctx, ns, "quota-1", ergonv1alpha1.ReasonExceededQuota)
			g.Expect(told).To(HaveLen(1))
			g.Expect(told[0].Note).To(ContainSubstring("Step work cannot start attempt 1"))
		}).WithTimeout(10 * time.Second).Should(Succeed())

		By("making room: the pod is created on the next try, and the step runs")
		setUsed("0")
		Eventually(func(g Gomega) {
			run, work := runStep(ctx, ns, "quota-1", "work")
			g.Expect(work.Phase).To(Equal(ergonv1alpha1.StepSucceeded))
			g.Expect(work.Attempts).To(BeEquivalentTo(1))
			g.Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded))
		}).WithTimeout(30 * time.Second).Should(Succeed())
	})

	It("says a Run's Scene is missing, once as an Event, and fails the Run after the manager's pending timeout", func(ctx SpecContext) {
		ns := newNamespace(ctx, echoLastArg)
		createRun(ctx, ns, "orphan", "nowhere", nil)
		Eventually(func(g Gomega) {
			g.Expect(warnings(ctx, ns, "orphan", ergonv1alpha1.ReasonSceneNotFound)).To(HaveLen(1))
		}).Should(Succeed())
		run := getRun(ctx, ns, "orphan")
		Expect(succeededMessage(run)).To(Equal(`Scene "nowhere" does not exist in namespace ` + ns + "; the Run starts when it does"))

		By("reconciling it as a manager with a 10m pending timeout would, 11 minutes on")
		clock := clocktesting.NewFakePassiveClock(run.CreationTimestamp.Add(9 * time.Minute))
		r := &runcontroller.RunReconciler{Client: k8sClient, APIReader: k8sClient, Recorder: events.NewFakeRecorder(10), Clock: clock,
			Config: runcontroller.RunConfig{PendingTimeout: 10 * time.Minute, Archive: suiteConfig().Archive}}
		req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: "orphan"}}
		// The suite's manager, which has no bound, reconciles the Run too: a write may conflict.
		Eventually(func(g Gomega) {
			res, err := r.Reconcile(ctx, req)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(res.RequeueAfter).To(Equal(time.Minute), "the next look, a minute on, is before the deadline")
			g.Expect(getRun(ctx, ns, "orphan").Status.Phase).To(Equal(ergonv1alpha1.RunPending))
		}).Should(Succeed())

		clock.SetTime(run.CreationTimestamp.Add(11 * time.Minute))
		Eventually(func() error {
			_, err := r.Reconcile(ctx, req)
			return err
		}).Should(Succeed())
		run = getRun(ctx, ns, "orphan")
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunFailed))
		cond := meta.FindStatusCondition(run.Status.Conditions, ergonv1alpha1.ConditionSucceeded)
		Expect(cond.Reason).To(Equal(ergonv1alpha1.ReasonSceneNotFound))
		Expect(cond.Message).To(Equal(`Scene "nowhere" does not exist in namespace ` + ns +
			"; the Run waited 10m0s for it (the manager's --pending-timeout)"))
	})
})

// refusePods makes the API server refuse, in namespace ns, the pods whose label key is value,
// as a ValidatingAdmissionPolicy of a cluster's administrator would, until the spec ends.
func refusePods(ctx SpecContext, ns, key, value string) {
	refuse := &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: ns + "-no-pods"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: new(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
				}}}},
			Validations: []admissionregistrationv1.Validation{{
				Expression: "!has(object.metadata.labels) || object.metadata.labels[?'" + key + "'].orValue('') != '" + value + "'",
				Message:    "pods are not allowed here", Reason: new(metav1.StatusReasonForbidden)}},
		}}
	Expect(k8sClient.Create(ctx, refuse)).To(Succeed())
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: ns + "-no-pods"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: refuse.Name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			MatchResources: &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}}}}}
	Expect(k8sClient.Create(ctx, binding)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) {
		Expect(k8sClient.Delete(ctx, binding)).To(Succeed())
		Expect(k8sClient.Delete(ctx, refuse)).To(Succeed())
	})
	By("waiting until the policy refuses pods")
	Eventually(func() error {
		probe := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "probe-", Namespace: ns, Labels: map[string]string{key: value}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox:test"}}}}
		return k8sClient.Create(ctx, probe, client.DryRunAll)
	}).WithTimeout(10 * time.Second).Should(MatchError(ContainSubstring("pods are not allowed here")))
}
