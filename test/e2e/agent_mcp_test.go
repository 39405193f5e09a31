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
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

// mcpScript plays a model that calls the sprint_status tool of the MCP server the same fake
// serves at /mcp, and answers with what the tool said.
const mcpScript = `rules:
- match: {lastRole: tool, lastContains: "payments shipped"}
  reply: {content: 'The MCP server says: payments shipped.'}
- match: {lastRole: tool}
  reply: {content: 'the MCP tool did not answer as expected'}
- match: {lastRole: user}
  reply:
    toolCalls: [{name: sprint_status, arguments: '{"sprint": 43}'}]
mcpTools:
- {name: sprint_status, description: "The status of a sprint.", result: "sprint 43: payments shipped"}
- {name: delete_sprint, description: "Deletes a sprint.", result: "deleted"}
`

var _ = Describe("Agent steps with MCP tools on a real cluster", func() {
	It("calls an allowed tool of an in-cluster MCP server reached through allowHosts, and fails with MCPUnavailable without them",
		func(ctx SpecContext) {
			ns := newNamespace(ctx)
			deployFakeLLMScript(ctx, ns, mcpScript)
			mcpURL := fmt.Sprintf("http://tracker.%s.svc:8080/mcp", ns)
			agentScene := func(name string, allowHosts ...ergonv1alpha1.Host) *ergonv1alpha1.Run {
				scene := &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
				scene.Spec.Models = map[string]ergonv1alpha1.ModelSpec{"default": {
					BaseURL: ergonv1alpha1.URL(fmt.Sprintf("http://llm.%s.svc/v1", ns)), Model: "fake"}}
				scene.Spec.Steps = []ergonv1alpha1.Step{{Name: "ask", Timeout: &metav1.Duration{Duration: 2 * time.Minute},
					Agent: &ergonv1alpha1.AgentStep{Prompt: "How is sprint 43?", MaxTurns: new(int32(4)), AllowHosts: allowHosts,
						Tools: []ergonv1alpha1.AgentTool{{MCP: &ergonv1alpha1.MCPTool{URL: ergonv1alpha1.URL(mcpURL), Allow: []string{"sprint_status"}}}}},
				}}
				Expect(k8sClient.Create(ctx, scene)).To(Succeed())
				run := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: name + "-1", Namespace: ns},
					Spec: ergonv1alpha1.RunSpec{SceneRef: corev1.LocalObjectReference{Name: name}}}
				Expect(k8sClient.Create(ctx, run)).To(Succeed())
				return run
			}
			allowed := agentScene("allowed", ergonv1alpha1.Host(fmt.Sprintf("tracker.%s.svc:8080", ns)))
			refused := agentScene("refused")

			run := finished(ctx, allowed)
			Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded), "%+v", run.Status)
			ask := stepOf(run, "ask")
			Expect(ask.Output.Preview).To(Equal("The MCP server says: payments shipped."))
			Expect(ask.Transcript).NotTo(BeNil())
			cm := &corev1.ConfigMap{}
			Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: ask.Transcript.Ref.ConfigMap}, cm)).To(Succeed())
			transcript := cm.Data["transcript"]
			GinkgoWriter.Printf("transcript of allowed-1/ask:\n%s\n", transcript)
			Expect(transcript).To(ContainSubstring(`"mcp":"mcp-streamable-http-text/v1"`))
			Expect(transcript).To(ContainSubstring(`offers the tools sprint_status`))
			Expect(transcript).To(ContainSubstring(`"name":"sprint_status"`))
			Expect(transcript).To(ContainSubstring(`sprint 43: payments shipped`))

			By("refusing the in-cluster server when it is not in allowHosts")
			run = finished(ctx, refused)
			Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunFailed), "%+v", run.Status)
			ask = stepOf(run, "ask")
			Expect(ask.Reason).To(Equal("MCPUnavailable"), "%+v", ask)
			Expect(ask.Message).To(ContainSubstring(mcpURL))
			Expect(ask.Message).To(ContainSubstring("the address guard refuses"))
		})
})
