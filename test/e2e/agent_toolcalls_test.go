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
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

// toolCallScript plays a model that, in its first turn, calls the Scene summarizer as a tool
// and fetches a page, a call that needs approval; then it answers.
func toolCallScript(ns string) string {
	return fmt.Sprintf(`rules:
- match: {lastRole: user}
  times: 1
  reply:
    toolCalls:
    - {name: summarizer, arguments: '{"text": "the quarterly report"}'}
    - {name: http_fetch, arguments: '{"url": "http://tracker.%s.svc:8080/page"}'}
- match: {lastRole: tool}
  reply: {content: report written}
routes:
  /page: {body: 'a page of the long document'}
`, ns)
}

var _ = Describe("An agent's tool calls on a real cluster", func() {
	It("call a Scene as a tool and wait for an approver's decision on a fetch", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		deployFakeLLMScript(ctx, ns, toolCallScript(ns))
		Expect(k8sClient.Create(ctx, &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: "summarizer", Namespace: ns},
			Spec: ergonv1alpha1.SceneSpec{Params: []ergonv1alpha1.ParamSpec{{Name: "text"}},
				Steps: []ergonv1alpha1.Step{busyboxStep("sum", `echo -n summary of {{ .params.text | shquote }} > "$ERGON_OUTPUT"`)}},
		})).To(Succeed())
		scene := &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: "writer", Namespace: ns}}
		scene.Spec.Models = map[string]ergonv1alpha1.ModelSpec{"default": {BaseURL: ergonv1alpha1.URL(fmt.Sprintf("http://llm.%s.svc/v1", ns)), Model: "fake"}}
		scene.Spec.Steps = []ergonv1alpha1.Step{{Name: "write", Timeout: &metav1.Duration{Duration: 2 * time.Minute},
			Agent: &ergonv1alpha1.AgentStep{Prompt: "Write the report.",
				Tools:      []ergonv1alpha1.AgentTool{{Scene: "summarizer"}, {Name: ergonv1alpha1.ToolHTTPFetch, RequireApproval: true}},
				AllowHosts: []ergonv1alpha1.Host{ergonv1alpha1.Host(fmt.Sprintf("tracker.%s.svc:8080", ns))}}}}
		Expect(k8sClient.Create(ctx, scene)).To(Succeed())
		run := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: "writer-1", Namespace: ns},
			Spec: ergonv1alpha1.RunSpec{SceneRef: corev1.LocalObjectReference{Name: "writer"}}}
		Expect(k8sClient.Create(ctx, run)).To(Succeed())

		By("waiting, with the fetch's Gate open, while the Scene tool's child Run runs")
		gate := gateOfRun(ctx, ns, "writer-1")
		Expect(gate.Spec.Message).To(ContainSubstring("http_fetch"))
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(run), run)).To(Succeed())
			s := stepOf(run, "write")
			g.Expect(s.Phase).To(Equal(ergonv1alpha1.StepWaiting))
			g.Expect(s.Reason).To(Equal("ToolCallPending"))
		}).WithTimeout(time.Minute).Should(Succeed())

		By("approving the fetch as an impersonated approver")
		carol := as(ctx, ns, "carol", "ergon-gate-approver")
		Expect(patchAs(ctx, carol, gate, types.MergePatchType, `{"spec":{"decision":{"option":"approve"}}}`)).To(Succeed())

		run = finished(ctx, run)
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded), "%+v", run.Status)
		write := stepOf(run, "write")
		Expect(write.Output.Preview).To(Equal("report written"))
		Expect(write.Attempts).To(BeEquivalentTo(2))
		children := &ergonv1alpha1.RunList{}
		Expect(k8sClient.List(ctx, children, client.InNamespace(ns),
			client.MatchingLabels{ergonv1alpha1.LabelParentRun: "writer-1"})).To(Succeed())
		Expect(children.Items).To(HaveLen(1))
		Expect(children.Items[0].Spec.Params).To(Equal(map[string]string{"text": "the quarterly report"}))

		cm := &corev1.ConfigMap{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: write.Transcript.Ref.ConfigMap}, cm)).To(Succeed())
		transcript := cm.Data["transcript"]
		Expect(transcript).To(ContainSubstring("summary of the quarterly report"))
		Expect(transcript).To(ContainSubstring("a page of the long document"))
		Expect(transcript).To(ContainSubstring("was approved by carol"))
		Expect(transcript).To(ContainSubstring("ran as child Run " + children.Items[0].Name))
		Expect(fakeLLMRequests(ctx, ns)).To(Equal(2), "no turn was asked again")
	})
})
