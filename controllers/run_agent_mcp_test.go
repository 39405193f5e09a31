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
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/agentspec"
	"github.com/ergon-dev/ergon/internal/naming"
)

var _ = Describe("An agent step with MCP tools", func() {
	BeforeEach(func() {
		ctx, cancel := context.WithCancel(context.Background())
		go testKubelet.run(ctx)
		DeferCleanup(cancel)
	})

	It("renders each MCP server, its allowed tools and its description into the pod's agent spec", func(ctx SpecContext) {
		ns := newNamespace(ctx, func(pod *corev1.Pod) outcome {
			if isAgentPod(pod) {
				return outcome{Output: `{"title":"Sprint 42 went well"}`,
					Transcript: `{"model":"small","outcome":"Succeeded","usage":{"turns":1},"entries":[]}`}
			}
			return echoLastArg(pod)
		})
		agentScene(ctx, ns, &ergonv1alpha1.AgentStep{
			Prompt: "Summarise sprint {{ .params.sprint }}.",
			Tools: []ergonv1alpha1.AgentTool{
				{Name: ergonv1alpha1.ToolHTTPFetch},
				{Description: "The team's issue tracker.",
					MCP: &ergonv1alpha1.MCPTool{URL: "http://issues.tools.svc:8080/mcp", Allow: []string{"search", "get_issue"}}},
				{MCP: &ergonv1alpha1.MCPTool{URL: "https://mcp.example.com/docs", Allow: []string{"lookup"}}},
			},
			AllowHosts: []ergonv1alpha1.Host{"issues.tools.svc:8080"},
		})
		createRun(ctx, ns, "report-1", "report", nil)

		pod := &corev1.Pod{}
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns,
				Name: naming.StepPodName("report-1", "draft", 1)}, pod)).To(Succeed())
		}).WithTimeout(20 * time.Second).Should(Succeed())

		var spec agentspec.Spec
		Expect(json.Unmarshal([]byte(pod.Annotations[annotationAgentSpec]), &spec)).To(Succeed())
		Expect(spec.Tools).To(Equal([]string{"http_fetch"}), "MCP servers are not built-in tools")
		Expect(spec.MCP).To(Equal([]agentspec.MCPServer{
			{URL: "http://issues.tools.svc:8080/mcp", Allow: []string{"search", "get_issue"}, Description: "The team's issue tracker."},
			{URL: "https://mcp.example.com/docs", Allow: []string{"lookup"}},
		}))
		// The runtime reaches them through the address guard, with the step's allow-list.
		Expect(spec.HTTP.AllowHosts).To(ContainElement("issues.tools.svc:8080"))

		Expect(finished(ctx, ns, "report-1").Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded))
	})
})
