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
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/agentspec"
	"github.com/ergon-dev/ergon/internal/naming"
)

// regionInput is the schema an agent asks a region with.
const regionInput = `{"type":"object","required":["region"],"properties":{"region":{"type":"string","enum":["eu","us"]}}}`

// askCall is a call of ask_human with a schema.
var askCall = agentspec.ToolRequest{ID: "call_9", Tool: ergonv1alpha1.ToolAskHuman, Kind: agentspec.RequestAsk,
	Arguments: `{"question": "Which region do we deploy to?", "input": ` + regionInput + `}`}

// askingScene creates a Scene "asking" whose agent step "work" may ask people.
func askingScene(ctx context.Context, ns string, ask *ergonv1alpha1.AskHuman) {
	Expect(k8sClient.Create(ctx, &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: "asking", Namespace: ns},
		Spec: ergonv1alpha1.SceneSpec{Models: models, Steps: []ergonv1alpha1.Step{{Name: "work", Agent: &ergonv1alpha1.AgentStep{
			Prompt: "Deploy.", Tools: []ergonv1alpha1.AgentTool{{Name: ergonv1alpha1.ToolAskHuman, Ask: ask}}}}}},
	})).To(Succeed())
}

// answer decides a Gate as admission would have stamped it: this suite runs no webhooks.
func answer(ctx context.Context, gate *ergonv1alpha1.Gate, user, option, values string) {
	d := `{"spec":{"decision":{"user":"` + user + `","option":"` + option + `"`
	if values != "" {
		d += `,"values":` + values
	}
	Expect(k8sClient.Patch(ctx, gate, client.RawPatch(types.MergePatchType, []byte(d+`}}}`)))).To(Succeed())
}

var _ = Describe("An agent's question (ask_human)", func() {
	BeforeEach(func() {
		ctx, cancel := context.WithCancel(context.Background())
		go testKubelet.run(ctx)
		DeferCleanup(cancel)
	})

	It("opens an input Gate the Run's person may answer; the values are the tool's result in the next attempt", func(ctx SpecContext) {
		ns := newNamespace(ctx, agentScript(askCall))
		askingScene(ctx, ns, &ergonv1alpha1.AskHuman{Approvers: &ergonv1alpha1.Approvers{Users: []string{"dana"}},
			Timeout: &metav1.Duration{Duration: time.Hour}})
		runOfPerson(ctx, ns, "a-1", "asking", "vera")

		first := &corev1.Pod{}
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: naming.StepPodName("a-1", "work", 1)}, first)).To(Succeed())
		}).Should(Succeed())
		var spec agentspec.Spec
		Expect(json.Unmarshal([]byte(first.Annotations[annotationAgentSpec]), &spec)).To(Succeed())
		Expect(spec.Tools).To(BeEmpty(), "ask_human is no tool the pod runs")
		Expect(spec.CallTools).To(ConsistOf(And(HaveField("Name", "ask_human"), HaveField("Kind", agentspec.RequestAsk))))

		gate := toolCallGateOf(ctx, ns, "a-1", "ask/1/call_9")
		Expect(gate.Spec.Message).To(Equal("Which region do we deploy to?"))
		Expect(string(gate.Spec.Input.Raw)).To(MatchJSON(regionInput))
		Expect(gate.Spec.Timeout.Duration).To(Equal(time.Hour))
		Expect(gate.Spec.ForbidSelfApproval).To(BeFalse(), "the person behind the Run may answer their agent")
		Expect(gate.Spec.Approvers).To(Equal(&ergonv1alpha1.Approvers{Users: []string{"dana"}}))
		waiting := func(g Gomega) {
			run := &ergonv1alpha1.Run{}
			g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "a-1"}, run)).To(Succeed())
			g.Expect(run.Status.Steps[0].Phase).To(Equal(ergonv1alpha1.StepWaiting))
			g.Expect(run.Status.Steps[0].Message).To(ContainSubstring("an answer to the question of ask_human (Gate " + gate.Name + ")"))
			g.Expect(runningPods(ctx, g, ns)).To(BeEmpty(), "a step waiting for a person holds no pod")
		}
		Eventually(waiting).Should(Succeed())
		Consistently(waiting).WithTimeout(time.Second).Should(Succeed())

		Eventually(func(g Gomega) {
			events := &eventsv1.EventList{}
			g.Expect(k8sClient.List(ctx, events, client.InNamespace(ns))).To(Succeed())
			var notes []string
			for _, e := range events.Items {
				if e.Reason == "GateOpened" && e.Regarding.Kind == "Run" {
					notes = append(notes, e.Note)
				}
			}
			g.Expect(notes).To(ContainElement(`Gate ` + gate.Name + ` of step work waits for an answer: "Which region do we deploy to?"`))
		}).Should(Succeed(), "an Event on the Run says a question opened")

		answer(ctx, gate, "vera", "approve", `{"region":"eu"}`)
		run := finished(ctx, ns, "a-1")
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded), "%+v", run.Status)
		Expect(toolResultsOf(ctx, ns, "a-1", "work").Results).To(ConsistOf(And(HaveField("ID", "call_9"),
			HaveField("Content", MatchJSON(`{"region":"eu"}`)), HaveField("Error", BeFalse()))))
	}, SpecTimeout(60*time.Second))

	It("tells the agent when nobody answered in time, who declined, and what was wrong with its question", func(ctx SpecContext) {
		bad := agentspec.ToolRequest{ID: "call_1", Tool: ergonv1alpha1.ToolAskHuman, Kind: agentspec.RequestAsk,
			Arguments: `{"question": "Size?", "input": {"type": "object", "properties": {"size": {"type": "float"}}}}`}
		open := agentspec.ToolRequest{ID: "call_2", Tool: ergonv1alpha1.ToolAskHuman, Kind: agentspec.RequestAsk,
			Arguments: `{"question": "Anything else?"}`}
		ns := newNamespace(ctx, agentScript(bad, open))
		askingScene(ctx, ns, &ergonv1alpha1.AskHuman{Timeout: &metav1.Duration{Duration: time.Second}})
		runOfPerson(ctx, ns, "a-1", "asking", "vera")
		gate := toolCallGateOf(ctx, ns, "a-1", "ask/1/call_2")
		Expect(string(gate.Spec.Input.Raw)).To(MatchJSON(`{"type":"object","required":["answer"],`+
			`"properties":{"answer":{"type":"string","format":"multiline","title":"Answer"}}}`), "a question without input asks for text")
		Expect(finished(ctx, ns, "a-1").Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded))
		Expect(toolResultsOf(ctx, ns, "a-1", "work").Results).To(ConsistOf(
			And(HaveField("ID", "call_1"), HaveField("Error", BeTrue()),
				HaveField("Content", ContainSubstring(`the input is not a schema a person can be asked with: `+
					`input.properties[size].type: Unsupported value: "float"`))),
			And(HaveField("ID", "call_2"), HaveField("Error", BeTrue()),
				HaveField("Content", ContainSubstring("nobody answered the question within 1s")))))
		Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: naming.ToolCallName("a-1", "work", "ask/1/call_1")},
			&ergonv1alpha1.Gate{})).NotTo(Succeed(), "a question Ergon cannot ask opens no Gate")

		By("a person who declines")
		runOfPerson(ctx, ns, "a-2", "asking", "walt")
		gate = toolCallGateOf(ctx, ns, "a-2", "ask/1/call_2")
		answer(ctx, gate, "dana", "reject", "")
		Expect(finished(ctx, ns, "a-2").Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded))
		Expect(toolResultsOf(ctx, ns, "a-2", "work").Results).To(ContainElement(And(HaveField("ID", "call_2"),
			HaveField("Error", BeTrue()), HaveField("Content", Equal("error: dana declined to answer")))))
	}, SpecTimeout(60*time.Second))
})

var _ = Describe("An agent's question across a manager restart", Serial, func() {
	It("is answered on the Gate the first manager opened, and the agent goes on with the answer", func(ctx SpecContext) {
		kctx, cancel := context.WithCancel(context.Background())
		DeferCleanup(cancel)
		go testKubelet.run(kctx)
		ns := newNamespace(ctx, agentScript(askCall))
		askingScene(ctx, ns, nil)
		runOfPerson(ctx, ns, "a-1", "asking", "vera")
		gate := toolCallGateOf(ctx, ns, "a-1", "ask/1/call_9")
		Expect(gate.Spec.Timeout.Duration).To(Equal(ergonv1alpha1.DefaultAskTimeout))

		stopMgr()
		answer(ctx, gate, "vera", "approve", `{"region":"us"}`)
		stopMgr = startManager(suiteConfig())
		run := finished(ctx, ns, "a-1")
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded), "%+v", run.Status)
		Expect(toolResultsOf(ctx, ns, "a-1", "work").Results).To(ConsistOf(HaveField("Content", MatchJSON(`{"region":"us"}`))))
		Expect(run.Status.Steps[0].Attempts).To(Equal(int32(2)), "the agent resumed in its next attempt, once")
	}, SpecTimeout(90*time.Second))
})

var _ = Describe("A conversation", func() {
	BeforeEach(func() {
		ctx, cancel := context.WithCancel(context.Background())
		go testKubelet.run(ctx)
		DeferCleanup(cancel)
	})

	It("shows each reply on a Gate that takes the next message, stamped with who wrote it, until someone ends it",
		func(ctx SpecContext) {
			reply := func(turn int, text string) agentspec.ToolRequest {
				return agentspec.ToolRequest{ID: fmt.Sprintf("message-%d", turn), Tool: agentspec.ToolConversation,
					Kind: agentspec.RequestMessage, Arguments: `{"reply": "` + text + `"}`}
			}
			ns := newNamespace(ctx, func(pod *corev1.Pod) outcome {
				switch pod.Labels[ergonv1alpha1.LabelAttempt] {
				case "1":
					return handOverOutcome(1, reply(1, "How can I help?"))
				case "2":
					return handOverOutcome(2, reply(2, "Deploying v2. Anything else?"))
				}
				return outcome{Output: "Deploying v2. Anything else?", Transcript: `{"usage":{"turns":2},"entries":[]}`}
			})
			Expect(k8sClient.Create(ctx, &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: "chat", Namespace: ns},
				Spec: ergonv1alpha1.SceneSpec{Models: models, Steps: []ergonv1alpha1.Step{{Name: "work", Agent: &ergonv1alpha1.AgentStep{
					Prompt: "Help.", Conversation: &ergonv1alpha1.AgentConversation{
						Participants: &ergonv1alpha1.Approvers{Users: []string{"dana"}}, MaxMessages: new(int32(5))}}}}},
			})).To(Succeed())
			runOfPerson(ctx, ns, "c-1", "chat", "vera")

			first := toolCallGateOf(ctx, ns, "c-1", "message/1/message-1")
			Expect(first.Spec.Message).To(Equal("How can I help?"))
			Expect(first.Annotations).To(HaveKeyWithValue(ergonv1alpha1.AnnotationConversation, "true"))
			Expect(first.Spec.Approvers).To(Equal(&ergonv1alpha1.Approvers{Users: []string{"dana"}}))
			Expect(first.Spec.ForbidSelfApproval).To(BeFalse())
			Expect(first.Spec.Timeout.Duration).To(Equal(ergonv1alpha1.DefaultConversationIdle))
			answer(ctx, first, "vera", "approve", `{"message": "please deploy v2", "end": false}`)

			second := toolCallGateOf(ctx, ns, "c-1", "message/2/message-2")
			Expect(second.Spec.Message).To(Equal("Deploying v2. Anything else?"))
			Expect(toolResultsOf(ctx, ns, "c-1", "work").Results).To(ConsistOf(HaveField("Content",
				MatchJSON(`{"text": "please deploy v2", "from": "vera"}`))))
			answer(ctx, second, "dana", "approve", `{"end": true}`)

			run := finished(ctx, ns, "c-1")
			Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded), "%+v", run.Status)
			Expect(toolResultsOf(ctx, ns, "c-1", "work").Results).To(ConsistOf(HaveField("Content",
				MatchJSON(`{"end": true, "from": "dana", "why": "dana ended the conversation"}`))))
			Expect(run.Status.Steps[0].Attempts).To(Equal(int32(3)))
		}, SpecTimeout(60*time.Second))
})
