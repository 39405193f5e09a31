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
	"encoding/json"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/naming"
)

// slowLoopScript is a 7-turn conversation whose model calls take 2 s each: six tool calls,
// then the answer.
func slowLoopScript(ns string) string {
	return fmt.Sprintf(`rules:
- match: {lastRole: user}
  times: 1
  reply:
    delay: 2s
    toolCalls: [{name: http_fetch, arguments: '{"url": "http://tracker.%[1]s.svc:8080/page"}'}]
- match: {lastRole: tool}
  times: 5
  reply:
    delay: 2s
    content: reading on
    toolCalls: [{name: http_fetch, arguments: '{"url": "http://tracker.%[1]s.svc:8080/page"}'}]
- match: {lastRole: tool}
  reply: {delay: 2s, content: all pages read}
routes:
  /page: {body: 'a page of the long document'}
`, ns)
}

// fakeLLMRequests is how many chat requests the fake model received, through the API
// server's Service proxy.
func fakeLLMRequests(ctx SpecContext, ns string) int {
	raw, err := clientset.CoreV1().Services(ns).ProxyGet("http", "llm", "80", "/_fakellm/requests", nil).DoRaw(ctx)
	Expect(err).NotTo(HaveOccurred())
	var n struct{ Count int }
	Expect(json.Unmarshal(raw, &n)).To(Succeed())
	return n.Count
}

var _ = Describe("An agent step that lasts", func() {
	It("shows its turns while it runs, and after its pod is deleted mid-loop resumes from its checkpoint and succeeds",
		func(ctx SpecContext) {
			ns := newNamespace(ctx)
			deployFakeLLMScript(ctx, ns, slowLoopScript(ns))
			scene := &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: "long", Namespace: ns}}
			scene.Spec.Models = map[string]ergonv1alpha1.ModelSpec{"default": {
				BaseURL: ergonv1alpha1.URL(fmt.Sprintf("http://llm.%s.svc/v1", ns)), Model: "fake",
				ContextBudget: &ergonv1alpha1.ContextBudget{Tokens: new(int64(4000))},
			}}
			scene.Spec.Steps = []ergonv1alpha1.Step{{Name: "read", Timeout: &metav1.Duration{Duration: 2 * time.Minute},
				Retry: &ergonv1alpha1.RetryPolicy{Limit: 1},
				Agent: &ergonv1alpha1.AgentStep{Prompt: "Read the whole document.",
					Tools:      []ergonv1alpha1.AgentTool{{Name: ergonv1alpha1.ToolHTTPFetch}},
					AllowHosts: []ergonv1alpha1.Host{ergonv1alpha1.Host(fmt.Sprintf("tracker.%s.svc:8080", ns))}, MaxTurns: new(int32(12))}}}
			Expect(k8sClient.Create(ctx, scene)).To(Succeed())
			run := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: "long-1", Namespace: ns},
				Spec: ergonv1alpha1.RunSpec{SceneRef: corev1.LocalObjectReference{Name: "long"}}}
			Expect(k8sClient.Create(ctx, run)).To(Succeed())

			By("showing the turns and tokens so far in the step's status")
			Eventually(func(g Gomega) {
				g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(run), run)).To(Succeed())
				g.Expect(run.Status.Steps).To(HaveLen(1)) // stepOf fails the spec on no status
				s := stepOf(run, "read")
				g.Expect(s.Phase).To(Equal(ergonv1alpha1.StepRunning))
				g.Expect(s.Usage).NotTo(BeNil())
				g.Expect(s.Usage.Turns).To(BeNumerically(">=", 2))
				g.Expect(s.Usage.TotalTokens).To(BeNumerically(">", 0))
			}).WithTimeout(90 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())

			By("deleting the pod in the middle of the loop")
			pod := naming.StepPodName("long-1", "read", 1)
			Expect(k8sClient.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: pod, Namespace: ns}})).To(Succeed())

			run = finished(ctx, run)
			Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded), "%+v", run.Status)
			read := stepOf(run, "read")
			Expect(read.Attempts).To(BeEquivalentTo(2))
			Expect(read.History).To(HaveLen(1))
			Expect(read.History[0].Reason).To(Equal("PodDeleted"))
			Expect(read.Output.Preview).To(Equal("all pages read"))
			// 7 turns, or 6 when the interrupted request used up one of the fake's tool-call
			// replies before the resumed attempt asked it again.
			Expect(read.Usage.Turns).To(BeNumerically(">=", 6))

			By("asking the model at most once more than the turns the transcript counts")
			Expect(fakeLLMRequests(ctx, ns) - int(read.Usage.Turns)).To(BeNumerically("<=", 1))

			cm := &corev1.ConfigMap{}
			Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: read.Transcript.Ref.ConfigMap}, cm)).To(Succeed())
			transcript := cm.Data["transcript"]
			Expect(transcript).To(ContainSubstring("resumed from the checkpoint of turn"))
			Expect(transcript).To(ContainSubstring(`"checkpoint":"after-each-turn/v1"`))
			GinkgoWriter.Printf("transcript of long-1/read:\n%s\n", transcript)
		})
})
