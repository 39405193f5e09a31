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
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

// containerToolScript plays a model that calls the container tool count once, and answers
// only when the tool's output is in its last message.
const containerToolScript = `rules:
- match: {lastRole: user}
  times: 1
  reply:
    toolCalls:
    - {name: count, arguments: '{"word": "ergon"}'}
- match: {lastContains: "COUNT: ergon has 5 letters"}
  reply: {content: counted}
`

var _ = Describe("An agent's container tool on a real cluster", func() {
	It("runs the tool's pod and hands its output to the model", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		deployFakeLLMScript(ctx, ns, containerToolScript)
		scene := &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: "counter", Namespace: ns}}
		scene.Spec.Models = map[string]ergonv1alpha1.ModelSpec{"default": {BaseURL: ergonv1alpha1.URL(fmt.Sprintf("http://llm.%s.svc/v1", ns)), Model: "fake"}}
		scene.Spec.Steps = []ergonv1alpha1.Step{{Name: "count", Timeout: &metav1.Duration{Duration: 2 * time.Minute},
			Agent: &ergonv1alpha1.AgentStep{Prompt: "Count the letters of ergon.",
				Tools: []ergonv1alpha1.AgentTool{{Name: "count", Description: "Counts a word's letters.",
					Container: &ergonv1alpha1.ContainerTool{Image: toolImage,
						Command: []string{"sh", "-c", `echo -n "COUNT: $1 has $(echo -n "$1" | wc -c) letters" > "$ERGON_OUTPUT"`, "count"},
						Args:    []string{"{{ .args.word }}"},
						Parameters: &apiextensionsv1.JSON{Raw: []byte(
							`{"type":"object","properties":{"word":{"type":"string"}},"required":["word"]}`)}}}}}}}
		Expect(k8sClient.Create(ctx, scene)).To(Succeed())
		run := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: "counter-1", Namespace: ns},
			Spec: ergonv1alpha1.RunSpec{SceneRef: corev1.LocalObjectReference{Name: "counter"}}}
		Expect(k8sClient.Create(ctx, run)).To(Succeed())

		run = finished(ctx, run)
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded), "%+v", run.Status)
		count := stepOf(run, "count")
		Expect(count.Output.Preview).To(Equal("counted"))
		Expect(count.Attempts).To(BeEquivalentTo(2))

		cm := &corev1.ConfigMap{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: count.Transcript.Ref.ConfigMap}, cm)).To(Succeed())
		Expect(cm.Data["transcript"]).To(ContainSubstring("COUNT: ergon has 5 letters"))
		// The tool pod is named like the call: <run>-<step>-<hash>.
		Expect(cm.Data["transcript"]).To(MatchRegexp(`ran as tool pod counter-1-count-[0-9a-f]{10}\b`))
		Expect(fakeLLMRequests(ctx, ns)).To(Equal(2), "no turn was asked again")
	})
})
