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
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/agentspec"
	"github.com/ergon-dev/ergon/internal/naming"
	"github.com/ergon-dev/ergon/internal/outputs/wire"
	"github.com/ergon-dev/ergon/internal/stepcontract"
)

// askLog is an agent pod's log while its attempt waits on questions of its MCP servers.
func askLog(asks ...agentspec.Ask) []byte {
	var log bytes.Buffer
	Expect(wire.WriteProgress(&log, wire.Progress{Turn: 1, TotalTokens: 10, Asks: asks}, nil)).To(Succeed())
	return log.Bytes()
}

var _ = Describe("An MCP server's question (elicitation)", func() {
	BeforeEach(func() {
		ctx, cancel := context.WithCancel(context.Background())
		go testKubelet.run(ctx)
		DeferCleanup(cancel)
	})

	It("opens an input Gate while the pod waits, and hands the answer back into the waiting pod", func(ctx SpecContext) {
		const asking, silent = "http://deploy.tools:8080/mcp", "http://search.tools:8080/mcp"
		ns := newNamespace(ctx, func(*corev1.Pod) outcome { return outcome{Stay: true} })
		Expect(k8sClient.Create(ctx, &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: "deploy", Namespace: ns},
			Spec: ergonv1alpha1.SceneSpec{Models: models, Steps: []ergonv1alpha1.Step{{Name: "work", Agent: &ergonv1alpha1.AgentStep{
				Prompt: "Deploy.", Tools: []ergonv1alpha1.AgentTool{
					{MCP: &ergonv1alpha1.MCPTool{URL: silent, Allow: []string{"search"}}},
					{MCP: &ergonv1alpha1.MCPTool{URL: asking, Allow: []string{"deploy"}}, Ask: &ergonv1alpha1.AskHuman{
						Approvers: &ergonv1alpha1.Approvers{Users: []string{"dana"}}, Timeout: &metav1.Duration{Duration: 20 * time.Minute}}},
				}}}}},
		})).To(Succeed())
		runOfPerson(ctx, ns, "d-1", "deploy", "vera")
		podName := naming.StepPodName("d-1", "work", 1)
		pod := &corev1.Pod{}
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: podName}, pod)).To(Succeed())
			g.Expect(pod.Status.Phase).To(Equal(corev1.PodRunning))
		}).Should(Succeed())
		var spec agentspec.Spec
		Expect(json.Unmarshal([]byte(pod.Annotations[annotationAgentSpec]), &spec)).To(Succeed())
		Expect(spec.MCP).To(HaveLen(2))
		Expect(spec.MCP[0].Ask).To(BeNil(), "a server without ask may not ask")
		Expect(spec.MCP[1].Ask).To(Equal(&agentspec.Duration{Duration: 20 * time.Minute}))
		Expect(spec.Answers).To(Equal("/ergon/agent/answers.json"))
		Expect(pod.Spec.Volumes).To(ContainElement(HaveField("DownwardAPI.Items", ContainElement(And(
			HaveField("Path", "answers.json"),
			HaveField("FieldRef.FieldPath", "metadata.annotations['agent.ergon.dev/answers']"))))))

		By("the attempt lists a question of each server")
		schema := json.RawMessage(`{"type":"object","required":["region"],"properties":{"region":{"type":"string","enum":["eu","us"]}}}`)
		logs.Write(ns, podName, askLog(
			agentspec.Ask{ID: "e1", Server: asking, Message: "Which region?", Schema: schema},
			agentspec.Ask{ID: "e2", Server: silent, Message: "Your password?", Schema: json.RawMessage(`{"type":"object","properties":{}}`)}))
		gate := toolCallGateOf(ctx, ns, "d-1", "elicit/1/e1")
		Expect(gate.Spec.Message).To(Equal("The MCP server " + asking + " asks: Which region?"))
		Expect(string(gate.Spec.Input.Raw)).To(MatchJSON(schema))
		Expect(gate.Spec.Approvers).To(Equal(&ergonv1alpha1.Approvers{Users: []string{"dana"}}))
		Expect(gate.Spec.Timeout.Duration).To(Equal(20 * time.Minute))
		Expect(gate.Spec.ForbidSelfApproval).To(BeFalse())
		Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: naming.ToolCallName("d-1", "work", "elicit/1/e2")},
			&ergonv1alpha1.Gate{})).NotTo(Succeed(), "a server the step does not let ask opens no Gate")
		answers := func(g Gomega) map[string]agentspec.Answer {
			g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: podName}, pod)).To(Succeed())
			got := map[string]agentspec.Answer{}
			if raw := pod.Annotations["agent.ergon.dev/answers"]; raw != "" {
				g.Expect(json.Unmarshal([]byte(raw), &got)).To(Succeed())
			}
			return got
		}
		Eventually(func(g Gomega) {
			got := answers(g)
			g.Expect(got).To(HaveKeyWithValue("e2", And(HaveField("Action", agentspec.AnswerCancel),
				HaveField("Why", ContainSubstring("no MCP server of the step at "+silent+" may ask")))))
			g.Expect(got).NotTo(HaveKey("e1"), "nobody answered yet")
		}).Should(Succeed(), "the question nobody may be asked is refused at once, so its pod waits for nothing")

		By("the answer goes back into the waiting pod, stamped with who gave it")
		answer(ctx, gate, "dana", "approve", `{"region":"eu"}`)
		Eventually(func(g Gomega) {
			g.Expect(answers(g)).To(HaveKeyWithValue("e1", And(HaveField("Action", agentspec.AnswerAccept),
				HaveField("By", "dana"), HaveField("Content", MatchJSON(`{"region":"eu"}`)))))
		}).Should(Succeed())
		By("each answer is signed for its pod and question with the key pinned in the pod's environment")
		env := map[string]corev1.EnvVar{}
		for _, e := range pod.Spec.Containers[0].Env {
			env[e.Name] = e
		}
		Expect(env).To(HaveKey(stepcontract.EnvAnswerKey))
		Expect(env[stepcontract.EnvPodUID].ValueFrom.FieldRef.FieldPath).To(Equal("metadata.uid"))
		pub, err := base64.StdEncoding.DecodeString(env[stepcontract.EnvAnswerKey].Value)
		Expect(err).NotTo(HaveOccurred())
		for id, a := range answers(Default) {
			sig, err := base64.StdEncoding.DecodeString(a.Sig)
			Expect(err).NotTo(HaveOccurred())
			Expect(ed25519.Verify(pub, agentspec.AnswerPayload(string(pod.UID), id, a), sig)).To(BeTrue(), "answer %s", id)
			Expect(ed25519.Verify(pub, agentspec.AnswerPayload("another-pod", id, a), sig)).To(BeFalse())
		}
		run := &ergonv1alpha1.Run{}
		Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "d-1"}, run)).To(Succeed())
		Expect(run.Status.Steps[0].Phase).To(Equal(ergonv1alpha1.StepRunning), "the step keeps its pod while it waits")
	}, SpecTimeout(60*time.Second))
})
