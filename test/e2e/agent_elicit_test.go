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
	"crypto/rand"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

// elicitScript plays a model that calls the MCP tool deploy, whose server asks a person for
// a region (MCP elicitation) before it answers, and then repeats what the tool said: the
// model can know the answer only from the tool's result.
const elicitScript = `rules:
- match: {lastRole: tool}
  reply: {content: 'the MCP server said: ', echoLast: true}
- match: {lastRole: user}
  reply:
    toolCalls: [{name: deploy, arguments: '{}'}]
mcpTools:
- name: deploy
  description: Deploys the service.
  result: "deployed:"
  elicit:
    message: Which region do we deploy to?
    schema: {type: object, required: [region], properties: {region: {type: string, title: Region}}}
`

var _ = Describe("An MCP server that asks on a real cluster", func() {
	It("waits in its pod for the answer of a person it lists, given with kubectl ergon answer, and goes on with it", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		deployFakeLLMScript(ctx, ns, elicitScript)
		mcpURL := fmt.Sprintf("http://tracker.%s.svc:8080/mcp", ns)
		scene := &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: "deploying", Namespace: ns}}
		scene.Spec.Models = map[string]ergonv1alpha1.ModelSpec{"default": {
			BaseURL: ergonv1alpha1.URL(fmt.Sprintf("http://llm.%s.svc/v1", ns)), Model: "fake"}}
		scene.Spec.Steps = []ergonv1alpha1.Step{{Name: "deploy", Timeout: &metav1.Duration{Duration: 3 * time.Minute},
			Agent: &ergonv1alpha1.AgentStep{Prompt: "Deploy the service.", MaxTurns: new(int32(4)),
				AllowHosts: []ergonv1alpha1.Host{ergonv1alpha1.Host(fmt.Sprintf("tracker.%s.svc:8080", ns))},
				Tools: []ergonv1alpha1.AgentTool{{MCP: &ergonv1alpha1.MCPTool{URL: ergonv1alpha1.URL(mcpURL), Allow: []string{"deploy"}},
					Ask: &ergonv1alpha1.AskHuman{Approvers: &ergonv1alpha1.Approvers{Users: []string{"dana"}},
						ForbidSelfApproval: true, Timeout: &metav1.Duration{Duration: 2 * time.Minute}}}}}}}
		Expect(k8sClient.Create(ctx, scene)).To(Succeed())
		run := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: "deploying-1", Namespace: ns},
			Spec: ergonv1alpha1.RunSpec{SceneRef: corev1.LocalObjectReference{Name: "deploying"}}}
		Expect(k8sClient.Create(ctx, run)).To(Succeed())
		gatePatchers(ctx, ns, "dana", "mallory")

		gate := gateOfRun(ctx, ns, "deploying-1")
		Expect(gate.Spec.Message).To(Equal("The MCP server " + mcpURL + " asks: Which region do we deploy to?"))
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(run), run)).To(Succeed())
		Expect(stepOf(run, "deploy").Phase).To(Equal(ergonv1alpha1.StepRunning), "the call waits in its pod")

		nonce := rand.Text()
		code, _, errOut := ran(ergon(ns, "answer", "deploying-1", "deploy", "--as", "mallory", "--set", "region="+nonce))
		Expect(code).To(Equal(1))
		Expect(errOut).To(ContainSubstring("mallory may not decide this Gate"))
		answered := time.Now()
		code, _, errOut = ran(ergon(ns, "answer", "deploying-1", "deploy", "--as", "dana", "--set", "region="+nonce))
		Expect(code).To(Equal(0), errOut)

		run = finished(ctx, run)
		GinkgoWriter.Printf("answer to the end of the Run: %s\n", time.Since(answered).Round(100*time.Millisecond))
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded), "%+v", run.Status)
		deploy := stepOf(run, "deploy")
		Expect(deploy.Output.Preview).To(Equal(`the MCP server said: deployed: accept {"region":"`+nonce+`"}`),
			"the model can only know the nonce from the tool's result")
		Expect(deploy.Attempts).To(BeEquivalentTo(1), "the pod waited: no second attempt")
	})
})
