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
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/controllers/internal/shared"
	"github.com/ergon-dev/ergon/internal/agentspec"
	"github.com/ergon-dev/ergon/internal/naming"
	"github.com/ergon-dev/ergon/internal/outputs/wire"
	"github.com/ergon-dev/ergon/internal/stepcontract"
)

// handOverOutcome ends an agent attempt as the runtime does when it hands tool calls to the
// controller: a checkpoint that lists them in the log, then ToolCallsPending.
func handOverOutcome(attempt int32, calls ...agentspec.ToolRequest) outcome {
	cp, err := json.Marshal(map[string]any{"version": 1, "turn": 1,
		"pending": agentspec.Pending{Attempt: attempt, Calls: calls}})
	Expect(err).NotTo(HaveOccurred())
	var log bytes.Buffer
	Expect(wire.WriteProgress(&log, wire.Progress{Turn: 1, PromptTokens: 100, CompletionTokens: 10, TotalTokens: 110},
		cp)).To(Succeed())
	return outcome{ExitCode: 7, Log: log.String(), FailReason: agentspec.ReasonToolCallsPending,
		FailMessage: "the agent waits for 1 tool calls", Transcript: handOverTranscript}
}

// handOverTranscript is the transcript the entrypoint frames after the agent ends, as the real
// runtime leaves one: after the progress line, and long enough that the log's end the
// controller reads must reach past it.
var handOverTranscript = func() string {
	entries := make([]map[string]any, 40)
	for i := range entries {
		entries[i] = map[string]any{"turn": 1, "kind": "note",
			"text": fmt.Sprintf("line %d of what the attempt did before it handed its calls over", i)}
	}
	b, err := json.Marshal(map[string]any{"usage": map[string]int{"turns": 1, "totalTokens": 110}, "entries": entries})
	if err != nil {
		panic(err)
	}
	return string(b)
}()

// toolResultsOf reads the results the controller stored for a step's next attempt.
func toolResultsOf(ctx context.Context, ns, run, step string) agentspec.Results {
	cm := &corev1.ConfigMap{}
	ExpectWithOffset(1, k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: naming.ToolResultsConfigMapName(run, step)},
		cm)).To(Succeed())
	var r agentspec.Results
	ExpectWithOffset(1, json.Unmarshal([]byte(cm.Data[toolResultsKey]), &r)).To(Succeed())
	return r
}

var models = map[string]ergonv1alpha1.ModelSpec{"default": {BaseURL: "http://llm.models.svc/v1", Model: "small"}}

// toolCallScenes creates a Scene "summarizer" (one param, text) and a Scene "writer" whose
// agent may call it as a tool, and fetch URLs with a person's approval.
func toolCallScenes(ctx context.Context, ns string) {
	Expect(k8sClient.Create(ctx, &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: "summarizer", Namespace: ns},
		Spec: ergonv1alpha1.SceneSpec{
			Params: []ergonv1alpha1.ParamSpec{{Name: "text", Description: "What to summarize."}},
			Steps:  []ergonv1alpha1.Step{container("sum", "summary of {{ .params.text | shquote }}")},
		}})).To(Succeed())
	Expect(k8sClient.Create(ctx, &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: "writer", Namespace: ns},
		Spec: ergonv1alpha1.SceneSpec{Models: models, Steps: []ergonv1alpha1.Step{{Name: "work", Agent: &ergonv1alpha1.AgentStep{
			Prompt: "Write.", Tools: []ergonv1alpha1.AgentTool{{Scene: "summarizer"}, {Name: "http_fetch", RequireApproval: true}}}}}},
	})).To(Succeed())
}

var (
	summarizeCall = agentspec.ToolRequest{ID: "call_1", Tool: "summarizer", Kind: agentspec.RequestScene, Arguments: `{"text":"hello"}`}
	fetchCall     = agentspec.ToolRequest{ID: "call_2", Tool: "http_fetch", Kind: agentspec.RequestApproval,
		Arguments: `{"url":"https://example.com/report"}`}
)

// agentScript plays the agent step of "writer": its first attempt hands calls over, its
// second answers; the child Runs' container steps echo.
func agentScript(calls ...agentspec.ToolRequest) script {
	return func(pod *corev1.Pod) outcome {
		if pod.Labels[ergonv1alpha1.LabelStep] != "work" {
			return echoLastArg(pod)
		}
		if pod.Labels[ergonv1alpha1.LabelAttempt] == "1" {
			return handOverOutcome(1, calls...)
		}
		return outcome{Output: "written", Transcript: `{"usage":{"turns":2,"totalTokens":220},"entries":[]}`}
	}
}

var _ = Describe("An agent step's tool calls", func() {
	BeforeEach(func() {
		ctx, cancel := context.WithCancel(context.Background())
		go testKubelet.run(ctx)
		DeferCleanup(cancel)
	})

	It("run a Scene tool as a child Run whose output the next attempt gets, using no retry", func(ctx SpecContext) {
		var second atomic.Pointer[corev1.Pod]
		play := agentScript(summarizeCall)
		ns := newNamespace(ctx, func(pod *corev1.Pod) outcome {
			if pod.Labels[ergonv1alpha1.LabelStep] == "work" && pod.Labels[ergonv1alpha1.LabelAttempt] == "2" {
				second.Store(pod.DeepCopy())
			}
			return play(pod)
		})
		toolCallScenes(ctx, ns)
		createRun(ctx, ns, "w-1", "writer", nil)

		first := &corev1.Pod{}
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: naming.StepPodName("w-1", "work", 1)}, first)).To(Succeed())
		}).Should(Succeed())
		var spec agentspec.Spec
		Expect(json.Unmarshal([]byte(first.Annotations[annotationAgentSpec]), &spec)).To(Succeed())
		Expect(spec.Tools).To(Equal([]string{"http_fetch"}))
		Expect(spec.Approve).To(Equal([]string{"http_fetch"}))
		Expect(spec.CallTools).To(HaveLen(1))
		Expect(spec.CallTools[0].Scene).To(Equal("summarizer"))
		Expect(string(spec.CallTools[0].Parameters)).To(MatchJSON(`{"type":"object","additionalProperties":false,
			"properties":{"text":{"type":"string","description":"What to summarize."}},"required":["text"]}`))

		child := naming.ToolCallName("w-1", "work", "call_1")
		run := finished(ctx, ns, "w-1")
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded))
		work := stepStatus(run, "work")
		Expect(work.Attempts).To(Equal(int32(2)), "no retry is set, yet the step had a second attempt")
		Expect(work.History).To(ContainElement(And(HaveField("Attempt", int32(1)),
			HaveField("Reason", agentspec.ReasonToolCallsPending), HaveField("Phase", ergonv1alpha1.StepWaiting))))

		childRun := &ergonv1alpha1.Run{}
		Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: child}, childRun)).To(Succeed())
		Expect(childRun.Spec.Params).To(Equal(map[string]string{"text": "hello"}))
		Expect(childRun.Labels).To(HaveKeyWithValue(ergonv1alpha1.LabelParentRun, "w-1"))
		Expect(shared.ControlledBy(childRun, run.UID)).To(BeTrue())

		Expect(toolResultsOf(ctx, ns, "w-1", "work")).To(Equal(agentspec.Results{Attempt: 1, Results: []agentspec.ToolResult{
			{ID: "call_1", Content: "summary of 'hello'", ChildRun: child}}}))
		Expect(second.Load()).NotTo(BeNil())
		Expect(second.Load().Spec.Containers[0].Env).To(ContainElement(corev1.EnvVar{Name: stepcontract.EnvToolResults,
			Value: "/ergon/tool-results/tool-results"}))
		Expect(second.Load().Spec.Volumes).To(ContainElement(HaveField("ConfigMap.LocalObjectReference.Name",
			naming.ToolResultsConfigMapName("w-1", "work"))))
	}, SpecTimeout(60*time.Second))

	for _, decision := range []struct {
		option, user, comment string
		want                  agentspec.ToolResult
	}{
		{"approve", "alice", "", agentspec.ToolResult{ID: "call_2", Approval: &agentspec.Approval{Approved: true, By: "alice"}}},
		{"reject", "bob", "not that site", agentspec.ToolResult{ID: "call_2", Error: true,
			Content: "the call was rejected by bob: not that site", Approval: &agentspec.Approval{By: "bob", Comment: "not that site"}}},
	} {
		It("wait for a person's decision through a Gate: "+decision.option, func(ctx SpecContext) {
			ns := newNamespace(ctx, agentScript(fetchCall))
			toolCallScenes(ctx, ns)
			createRun(ctx, ns, "w-1", "writer", nil)

			name := naming.ToolCallName("w-1", "work", "call_2")
			gate := &ergonv1alpha1.Gate{}
			Eventually(func(g Gomega) {
				g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, gate)).To(Succeed())
			}).Should(Succeed())
			Expect(gate.Spec.Options).To(Equal([]string{"approve", "reject"}))
			Expect(gate.Spec.Message).To(ContainSubstring("the tool http_fetch with the arguments:\n" + fetchCall.Arguments))
			Expect(gate.Spec.Step).To(Equal("work"))
			Expect(gate.Spec.ForbidSelfApproval).To(BeTrue(), "requireApproval keeps the Run's person from approving")
			Eventually(func(g Gomega) {
				run := &ergonv1alpha1.Run{}
				g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "w-1"}, run)).To(Succeed())
				s := stepStatus(run, "work")
				g.Expect(s.Phase).To(Equal(ergonv1alpha1.StepWaiting))
				g.Expect(s.Reason).To(Equal("ToolCallPending"))
				g.Expect(s.Message).To(ContainSubstring("Gate " + name))
			}).Should(Succeed())
			Consistently(func(g Gomega) {
				pod := &corev1.Pod{}
				err := k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: naming.StepPodName("w-1", "work", 2)}, pod)
				g.Expect(client.IgnoreNotFound(err)).To(Succeed())
				g.Expect(err).To(HaveOccurred(), "no attempt starts before the decision")
			}, "1s").Should(Succeed())

			patch := client.MergeFrom(gate.DeepCopy())
			gate.Spec.Decision = &ergonv1alpha1.GateDecision{Option: decision.option, User: decision.user, Comment: decision.comment}
			Expect(k8sClient.Patch(ctx, gate, patch)).To(Succeed())

			run := finished(ctx, ns, "w-1")
			Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded))
			want := decision.want
			want.Approval.Gate = name
			Expect(toolResultsOf(ctx, ns, "w-1", "work")).To(Equal(agentspec.Results{Attempt: 1, Results: []agentspec.ToolResult{want}}))
		}, SpecTimeout(60*time.Second))
	}

	It("are read from the log of the attempt that handed them over when the first reads of it fail", func(ctx SpecContext) {
		play := agentScript(fetchCall)
		var ns string
		ns = newNamespace(ctx, func(pod *corev1.Pod) outcome {
			if pod.Labels[ergonv1alpha1.LabelStep] == "work" && pod.Labels[ergonv1alpha1.LabelAttempt] == "1" {
				testKubelet.Logs.FailReads(ns, pod.Name, 3)
			}
			return play(pod)
		})
		toolCallScenes(ctx, ns)
		createRun(ctx, ns, "w-1", "writer", nil)

		gate := &ergonv1alpha1.Gate{}
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: naming.ToolCallName("w-1", "work", "call_2")},
				gate)).To(Succeed())
		}).WithTimeout(30*time.Second).Should(Succeed(), "the Gate of the call the checkpoint lists")
		patch := client.MergeFrom(gate.DeepCopy())
		gate.Spec.Decision = &ergonv1alpha1.GateDecision{Option: "approve", User: "alice"}
		Expect(k8sClient.Patch(ctx, gate, patch)).To(Succeed())
		Expect(finished(ctx, ns, "w-1").Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded))
	}, SpecTimeout(60*time.Second))
})

var _ = Describe("Tool calls across a manager restart", Serial, func() {
	It("create each call's child Run once", func(ctx SpecContext) {
		kctx, stopKubelet := context.WithCancel(context.Background())
		defer stopKubelet()
		go testKubelet.run(kctx)
		var release atomic.Bool
		ns := newNamespace(ctx, func(pod *corev1.Pod) outcome {
			if pod.Labels[ergonv1alpha1.LabelStep] == "sum" && !release.Load() {
				return outcome{Stay: true}
			}
			return agentScript(summarizeCall)(pod)
		})
		toolCallScenes(ctx, ns)

		stopMgr()
		DeferCleanup(func() { stopMgr = startManager(suiteConfig()) })
		stop := startManager(suiteConfig())
		createRun(ctx, ns, "w-1", "writer", nil)
		child := naming.ToolCallName("w-1", "work", "call_1")
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: child}, &ergonv1alpha1.Run{})).To(Succeed())
		}).Should(Succeed())
		stop()

		stop = startManager(suiteConfig())
		defer stop()
		Eventually(func(g Gomega) {
			run := &ergonv1alpha1.Run{}
			g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "w-1"}, run)).To(Succeed())
			g.Expect(stepOf(g, run, "work").Message).To(ContainSubstring("child Run " + child))
		}).Should(Succeed())
		release.Store(true)
		run := finished(ctx, ns, "w-1")
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded))
		children := &ergonv1alpha1.RunList{}
		Expect(k8sClient.List(ctx, children, client.InNamespace(ns),
			client.MatchingLabels{ergonv1alpha1.LabelParentRun: "w-1"})).To(Succeed())
		Expect(children.Items).To(HaveLen(1))
		Expect(toolResultsOf(ctx, ns, "w-1", "work").Results).To(HaveLen(1))
	}, SpecTimeout(90*time.Second))
})
