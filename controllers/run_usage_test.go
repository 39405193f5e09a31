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
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/planner"
)

// pricedTranscript is what the agent runtime leaves for a call of so many tokens at a cost.
func pricedTranscript(turns, prompt, completion int, cost string) string {
	return fmt.Sprintf(`{"model":"small","outcome":"Succeeded","usage":{"turns":%d,"promptTokens":%d,`+
		`"completionTokens":%d,"totalTokens":%d,"cost":%q},"entries":[]}`, turns, prompt, completion, prompt+completion, cost)
}

var _ = Describe("A Run's usage", func() {
	BeforeEach(func() {
		ctx, cancel := context.WithCancel(context.Background())
		go testKubelet.run(ctx)
		DeferCleanup(cancel)
	})

	It("sums the tokens and cost of its agent steps and of its child Runs", func(ctx SpecContext) {
		transcripts := map[string]string{
			"draft":  pricedTranscript(3, 900, 120, "0.0045"),
			"review": pricedTranscript(1, 400, 50, "0.00195"),
			"polish": pricedTranscript(2, 1000, 300, "0.0075"),
		}
		ns := newNamespace(ctx, func(pod *corev1.Pod) outcome {
			if isAgentPod(pod) {
				return outcome{Output: "ok", Transcript: transcripts[pod.Labels[ergonv1alpha1.LabelStep]]}
			}
			return echoLastArg(pod)
		})
		models := map[string]ergonv1alpha1.ModelSpec{"default": {BaseURL: "http://llm.models.svc/v1", Model: "small",
			Pricing: &ergonv1alpha1.ModelPricing{InputPerMillion: "3.00", OutputPerMillion: "15.00"}}}
		agentStep := func(name string, deps ...string) ergonv1alpha1.Step {
			return ergonv1alpha1.Step{Name: name, DependsOn: deps, Agent: &ergonv1alpha1.AgentStep{Prompt: "Do " + name + "."}}
		}
		child := &ergonv1alpha1.Scene{}
		child.Name, child.Namespace = "polishing", ns
		child.Spec.Models, child.Spec.Steps = models, []ergonv1alpha1.Step{agentStep("polish")}
		Expect(k8sClient.Create(ctx, child)).To(Succeed())
		parent := &ergonv1alpha1.Scene{}
		parent.Name, parent.Namespace = "writing", ns
		parent.Spec.Models = models
		parent.Spec.Steps = []ergonv1alpha1.Step{
			container("fetch", "data"), agentStep("draft", "fetch"), agentStep("review", "draft"),
			{Name: "finish", DependsOn: []string{"review"}, Scene: &ergonv1alpha1.SceneCall{Name: "polishing"}},
		}
		Expect(k8sClient.Create(ctx, parent)).To(Succeed())
		createRun(ctx, ns, "writing-1", "writing", nil)

		run := finished(ctx, ns, "writing-1")
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded))
		childRun := &ergonv1alpha1.Run{}
		Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: stepStatus(run, "finish").ChildRun}, childRun)).To(Succeed())
		Expect(childRun.Status.Usage).To(Equal(&ergonv1alpha1.AgentUsage{Turns: 2, PromptTokens: 1000,
			CompletionTokens: 300, TotalTokens: 1300, Cost: "0.0075"}))

		// The Run's usage is its steps' and its child's, summed: nothing counted twice.
		Expect(stepStatus(run, "draft").Usage.Cost).To(Equal("0.0045"))
		Expect(run.Status.Usage).To(Equal(planner.RunUsage(run.Status.Steps,
			map[string]planner.ChildState{childRun.Name: {Usage: childRun.Status.Usage}})))
		Expect(run.Status.Usage).To(Equal(&ergonv1alpha1.AgentUsage{Turns: 6, PromptTokens: 2300,
			CompletionTokens: 470, TotalTokens: 2770, Cost: "0.01395"}))
	})

	It("fails new Runs of a Scene that spent its budget at start, with an Event", func(ctx SpecContext) {
		ns := newNamespace(ctx, func(pod *corev1.Pod) outcome {
			if isAgentPod(pod) {
				return outcome{Output: "ok", Transcript: pricedTranscript(3, 900, 120, "")}
			}
			return echoLastArg(pod)
		})
		scene := &ergonv1alpha1.Scene{}
		scene.Name, scene.Namespace = "thrifty", ns
		scene.Spec.Models = map[string]ergonv1alpha1.ModelSpec{"default": {BaseURL: "http://llm.models.svc/v1", Model: "small"}}
		scene.Spec.Budget = &ergonv1alpha1.SceneBudget{TokensPerDay: 1000}
		scene.Spec.Steps = []ergonv1alpha1.Step{{Name: "think", Agent: &ergonv1alpha1.AgentStep{Prompt: "Think."}}}
		Expect(k8sClient.Create(ctx, scene)).To(Succeed())

		createRun(ctx, ns, "thrifty-1", "thrifty", nil)
		Expect(finished(ctx, ns, "thrifty-1").Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded), "nothing was spent yet")
		createRun(ctx, ns, "thrifty-2", "thrifty", nil)
		run := finished(ctx, ns, "thrifty-2")
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunFailed))
		Expect(run.Status.Steps).To(BeEmpty(), "no step started")
		cond := meta.FindStatusCondition(run.Status.Conditions, ergonv1alpha1.ConditionSucceeded)
		Expect(cond.Reason).To(Equal(ergonv1alpha1.ReasonBudgetExceeded))
		Expect(cond.Message).To(ContainSubstring("used 1020 tokens in the last 24 hours, its budget.tokensPerDay is 1000"))
		Eventually(func() []string { return eventReasons(ctx, ns, "thrifty-2") }).Should(ContainElement(ergonv1alpha1.ReasonBudgetExceeded))
	})
	It("fails new Runs of a Scene that spent its budget in cost at start", func(ctx SpecContext) {
		ns := newNamespace(ctx, func(pod *corev1.Pod) outcome {
			return outcome{Output: "ok", Transcript: pricedTranscript(1, 10, 5, "0.01")}
		})
		scene := &ergonv1alpha1.Scene{}
		scene.Name, scene.Namespace = "pricey", ns
		scene.Spec.Models = map[string]ergonv1alpha1.ModelSpec{"default": {BaseURL: "http://llm.models.svc/v1", Model: "small"}}
		scene.Spec.Budget = &ergonv1alpha1.SceneBudget{CostPerDay: "0.01"}
		scene.Spec.Steps = []ergonv1alpha1.Step{{Name: "think", Agent: &ergonv1alpha1.AgentStep{Prompt: "Think."}}}
		Expect(k8sClient.Create(ctx, scene)).To(Succeed())

		createRun(ctx, ns, "pricey-1", "pricey", nil)
		Expect(finished(ctx, ns, "pricey-1").Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded), "nothing was spent yet")
		createRun(ctx, ns, "pricey-2", "pricey", nil)
		run := finished(ctx, ns, "pricey-2")
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunFailed))
		cond := meta.FindStatusCondition(run.Status.Conditions, ergonv1alpha1.ConditionSucceeded)
		Expect(cond.Reason).To(Equal(ergonv1alpha1.ReasonBudgetExceeded))
		Expect(cond.Message).To(ContainSubstring("cost 0.01 in the last 24 hours, its budget.costPerDay is 0.01"))
	})
})
