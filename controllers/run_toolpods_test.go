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
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/controllers/internal/shared"
	"github.com/ergon-dev/ergon/internal/agentspec"
	"github.com/ergon-dev/ergon/internal/naming"
	"github.com/ergon-dev/ergon/internal/podsecurity"
	"github.com/ergon-dev/ergon/internal/workspace"
)

var lintCall = agentspec.ToolRequest{ID: "call_9", Tool: "lint", Kind: agentspec.RequestContainer, Arguments: `{"path":"./cmd"}`}

// linterScene creates a Scene "linter" whose agent step "check" may call the container tool
// lint.
func linterScene(ctx context.Context, ns string) {
	Expect(k8sClient.Create(ctx, &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: "linter", Namespace: ns},
		Spec: ergonv1alpha1.SceneSpec{Models: models, Steps: []ergonv1alpha1.Step{{Name: "check", Agent: &ergonv1alpha1.AgentStep{
			Prompt: "Lint.", Tools: []ergonv1alpha1.AgentTool{{Name: "lint", Description: "Lints a directory.",
				Container: &ergonv1alpha1.ContainerTool{Image: "lint:1", Command: []string{"lint", "--strict"},
					Args:       []string{"{{ .args.path }}"},
					Parameters: &apiextensionsv1.JSON{Raw: []byte(`{"type":"object","properties":{"path":{"type":"string"}}}`)}}}},
		}}}},
	})).To(Succeed())
}

// toolPods records the tool pods the test kubelet ran, by UID.
type toolPods struct {
	mu   sync.Mutex
	pods map[types.UID]*corev1.Pod
}

func (t *toolPods) add(pod *corev1.Pod) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.pods == nil {
		t.pods = map[types.UID]*corev1.Pod{}
	}
	t.pods[pod.UID] = pod.DeepCopy()
}

func (t *toolPods) all() []*corev1.Pod {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []*corev1.Pod
	for _, p := range t.pods {
		out = append(out, p)
	}
	return out
}

// linterScript plays the agent step of "linter": its first attempt calls lint, its second
// answers; the tool pod ends as tool says.
func linterScript(seen *toolPods, tool script) script {
	return func(pod *corev1.Pod) outcome {
		if pod.Labels[ergonv1alpha1.LabelToolCall] == "true" {
			seen.add(pod)
			return tool(pod)
		}
		if pod.Labels[ergonv1alpha1.LabelAttempt] == "1" {
			return handOverOutcome(1, lintCall)
		}
		return outcome{Output: "linted", Transcript: `{"usage":{"turns":2,"totalTokens":220},"entries":[]}`}
	}
}

var _ = Describe("An agent step's container tool calls", func() {
	BeforeEach(func() {
		ctx, cancel := context.WithCancel(context.Background())
		go testKubelet.run(ctx)
		DeferCleanup(cancel)
	})

	It("run one hardened pod per call whose output the next attempt gets", func(ctx SpecContext) {
		seen := &toolPods{}
		ns := newNamespace(ctx, linterScript(seen, func(pod *corev1.Pod) outcome {
			return outcome{Output: "2 findings in " + strings.Join(stepArgs(pod), " ")}
		}))
		linterScene(ctx, ns)
		createRun(ctx, ns, "l-1", "linter", nil)

		first := &corev1.Pod{}
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: naming.StepPodName("l-1", "check", 1)}, first)).To(Succeed())
		}).Should(Succeed())
		var spec agentspec.Spec
		Expect(json.Unmarshal([]byte(first.Annotations[annotationAgentSpec]), &spec)).To(Succeed())
		Expect(spec.CallTools).To(HaveLen(1))
		Expect(spec.CallTools[0].Kind).To(Equal(agentspec.RequestContainer))
		Expect(spec.CallTools[0].Description).To(Equal("Lints a directory."))
		Expect(string(spec.CallTools[0].Parameters)).To(MatchJSON(`{"type":"object","properties":{"path":{"type":"string"}}}`))

		run := finished(ctx, ns, "l-1")
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded))
		work := stepStatus(run, "check")
		Expect(work.Attempts).To(Equal(int32(2)))
		name := naming.ToolCallName("l-1", "check", "call_9")
		Expect(toolResultsOf(ctx, ns, "l-1", "check")).To(Equal(agentspec.Results{Attempt: 1, Results: []agentspec.ToolResult{
			{ID: "call_9", Content: "2 findings in lint --strict ./cmd", ToolPod: name}}}))

		pods := seen.all()
		Expect(pods).To(HaveLen(1), "one pod for one call")
		pod := pods[0]
		Expect(pod.Name).To(Equal(name))
		Expect(shared.ControlledBy(pod, run.UID)).To(BeTrue())
		Expect(pod.Labels).To(HaveKeyWithValue(ergonv1alpha1.LabelRun, "l-1"))
		Expect(pod.Labels).To(HaveKeyWithValue(ergonv1alpha1.LabelStep, "check"))
		Expect(pod.Annotations).To(HaveKeyWithValue(annotationToolCall, "call_9"))
		podSpec := pod.Spec
		Expect(*podSpec.AutomountServiceAccountToken).To(BeFalse())
		Expect(*podSpec.EnableServiceLinks).To(BeFalse())
		Expect(podSpec.RestartPolicy).To(Equal(corev1.RestartPolicyNever))
		Expect(*podSpec.ActiveDeadlineSeconds).To(Equal(int64(600)))
		Expect(podSpec.SecurityContext).To(Equal(podsecurity.Pod(stepUID)))
		Expect(podSpec.Containers).To(HaveLen(1))
		c := podSpec.Containers[0]
		Expect(c.Image).To(Equal("lint:1"))
		Expect(c.SecurityContext).To(Equal(podsecurity.Container()))
		Expect(*c.SecurityContext.ReadOnlyRootFilesystem).To(BeTrue())
		Expect(c.Command).To(Equal([]string{entrypointPath}))
		Expect(c.Args).To(Equal([]string{"run", "--", "lint", "--strict", "./cmd"}))
		Expect(c.EnvFrom).To(BeEmpty())
		for _, e := range c.Env {
			Expect(e.ValueFrom).To(BeNil(), "a tool pod gets no Secret: %s", e.Name)
		}
		Expect(podSpec.InitContainers).To(ConsistOf(HaveField("Name", initContainer)))

		Eventually(func(g Gomega) {
			got := &corev1.Pod{}
			err := k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, got)
			g.Expect(err == nil && got.DeletionTimestamp.IsZero()).To(BeFalse(), "the finished Run deletes its tool pods")
		}).Should(Succeed())
	}, SpecTimeout(60*time.Second))

	It("give a failed tool pod's exit code and output to the model as an error, and the Run goes on", func(ctx SpecContext) {
		seen := &toolPods{}
		ns := newNamespace(ctx, linterScript(seen, func(*corev1.Pod) outcome {
			return outcome{ExitCode: 2, Output: "a.go:1: unused variable"}
		}))
		linterScene(ctx, ns)
		createRun(ctx, ns, "l-1", "linter", nil)

		run := finished(ctx, ns, "l-1")
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded))
		res := toolResultsOf(ctx, ns, "l-1", "check")
		Expect(res.Results).To(HaveLen(1))
		Expect(res.Results[0].Error).To(BeTrue())
		Expect(res.Results[0].Content).To(ContainSubstring("(exit code 2)\na.go:1: unused variable"))
		Expect(res.Results[0].ToolPod).To(Equal(naming.ToolCallName("l-1", "check", "call_9")))
	}, SpecTimeout(60*time.Second))

	It("give the model the API server's refusal of a tool pod as an error, and the Run goes on", func(ctx SpecContext) {
		seen := &toolPods{}
		ns := newNamespace(ctx, linterScript(seen, func(*corev1.Pod) outcome { return outcome{Output: "clean"} }))
		refusePods(ctx, ns, ergonv1alpha1.LabelToolCall, "true")
		linterScene(ctx, ns)
		createRun(ctx, ns, "l-1", "linter", nil)

		run := finished(ctx, ns, "l-1")
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded))
		Expect(stepStatus(run, "check").Attempts).To(Equal(int32(2)))
		res := toolResultsOf(ctx, ns, "l-1", "check")
		Expect(res.Results).To(HaveLen(1))
		Expect(res.Results[0].Error).To(BeTrue())
		Expect(res.Results[0].Content).To(And(ContainSubstring(ergonv1alpha1.ReasonPodRefused),
			ContainSubstring("pods are not allowed here")))
		Expect(seen.all()).To(BeEmpty(), "no tool pod ran")
		Expect(warnings(ctx, ns, "l-1", ergonv1alpha1.ReasonPodRefused)).To(HaveLen(1), "one Event for the refusal")
	}, SpecTimeout(60*time.Second))
})

var _ = Describe("A container tool of a Scene bound to a Workspace", func() {
	It("runs its pod on the Workspace's volume, read-only, hardened as the Workspace", func(ctx SpecContext) {
		kctx, stopKubelet := context.WithCancel(context.Background())
		defer stopKubelet()
		go testKubelet.run(kctx)
		seen := &toolPods{}
		ns := newNamespace(ctx, linterScript(seen, func(*corev1.Pod) outcome { return outcome{Output: "clean"} }))
		ws := workspaceFor(ctx, ns, "dev", "alice@example.org", nil)
		boundScene(ctx, ns, "linter", "dev", ergonv1alpha1.Step{Name: "check", Agent: &ergonv1alpha1.AgentStep{Prompt: "Lint.",
			Tools: []ergonv1alpha1.AgentTool{{Name: "lint", Container: &ergonv1alpha1.ContainerTool{Image: "lint:1",
				Command: []string{"lint"}, Args: []string{"{{ .args.path }}"}}}}}})
		createRun(ctx, ns, "l-1", "linter", nil)

		run := finished(ctx, ns, "l-1")
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded))
		Expect(toolResultsOf(ctx, ns, "l-1", "check").Results).To(HaveLen(1))
		pods := seen.all()
		Expect(pods).To(HaveLen(1))
		pod := pods[0]
		Expect(pod.Labels).To(HaveKeyWithValue(ergonv1alpha1.LabelWorkspace, ws.Name))
		Expect(*pod.Spec.SecurityContext.RunAsUser).To(Equal(int64(1000)))
		Expect(*pod.Spec.AutomountServiceAccountToken).To(BeFalse())
		c := pod.Spec.Containers[0]
		Expect(c.Image).To(Equal("lint:1"), "a tool keeps its own image")
		Expect(c.Args).To(Equal([]string{"run", "--", "lint", "./cmd"}))
		Expect(c.WorkingDir).To(Equal("/workspace"))
		Expect(c.VolumeMounts).To(ContainElement(corev1.VolumeMount{Name: workspaceVolume, MountPath: "/workspace", ReadOnly: true}))
		Expect(pod.Spec.Volumes).To(ContainElement(HaveField("PersistentVolumeClaim.ClaimName", workspace.ObjectName(ws))))
	}, SpecTimeout(60*time.Second))
})

var _ = Describe("Cancelling a Run with a container tool call", func() {
	It("deletes the running tool pod", func(ctx SpecContext) {
		kctx, stopKubelet := context.WithCancel(context.Background())
		defer stopKubelet()
		go testKubelet.run(kctx)
		seen := &toolPods{}
		ns := newNamespace(ctx, linterScript(seen, func(*corev1.Pod) outcome { return outcome{Stay: true} }))
		linterScene(ctx, ns)
		createRun(ctx, ns, "l-1", "linter", nil)
		name := naming.ToolCallName("l-1", "check", "call_9")
		Eventually(seen.all).Should(HaveLen(1))

		run := &ergonv1alpha1.Run{}
		Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "l-1"}, run)).To(Succeed())
		patch := client.MergeFrom(run.DeepCopy())
		run.Spec.Cancel = true
		Expect(k8sClient.Patch(ctx, run, patch)).To(Succeed())
		run = finished(ctx, ns, "l-1")
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunCancelled))
		Eventually(func(g Gomega) {
			got := &corev1.Pod{}
			err := k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, got)
			g.Expect(err == nil && got.DeletionTimestamp.IsZero()).To(BeFalse(), "the tool pod is still there")
		}).Should(Succeed())
	}, SpecTimeout(60*time.Second))
})

var _ = Describe("Container tool calls across a manager restart", Serial, func() {
	It("create each call's pod once", func(ctx SpecContext) {
		kctx, stopKubelet := context.WithCancel(context.Background())
		defer stopKubelet()
		go testKubelet.run(kctx)
		var release atomic.Bool
		seen := &toolPods{}
		ns := newNamespace(ctx, linterScript(seen, func(*corev1.Pod) outcome {
			if !release.Load() {
				return outcome{Stay: true}
			}
			return outcome{Output: "clean"}
		}))
		linterScene(ctx, ns)

		stopMgr()
		DeferCleanup(func() { stopMgr = startManager(suiteConfig()) })
		stop := startManager(suiteConfig())
		createRun(ctx, ns, "l-1", "linter", nil)
		name := naming.ToolCallName("l-1", "check", "call_9")
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &corev1.Pod{})).To(Succeed())
		}).Should(Succeed())
		stop()

		stop = startManager(suiteConfig())
		defer stop()
		Eventually(func(g Gomega) {
			run := &ergonv1alpha1.Run{}
			g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "l-1"}, run)).To(Succeed())
			g.Expect(stepOf(g, run, "check").Message).To(ContainSubstring("tool pod " + name))
		}).Should(Succeed())
		release.Store(true)
		run := finished(ctx, ns, "l-1")
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded))
		Expect(seen.all()).To(HaveLen(1), "one pod for one call across the restart")
		Expect(toolResultsOf(ctx, ns, "l-1", "check").Results).To(Equal([]agentspec.ToolResult{
			{ID: "call_9", Content: "clean", ToolPod: name}}))
	}, SpecTimeout(90*time.Second))
})
