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
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

// draftCheckScript plays a model whose drafts are weak until the third iteration asks.
const draftCheckScript = `rules:
- match: {lastContains: "iteration 3"}
  reply: {content: 'a good draft'}
- match: {lastRole: user}
  reply: {content: 'a weak draft'}
`

var _ = Describe("Fan-out and loops on a real cluster", func() {
	It("loops a draft -> check sub-scene until the check passes on the third iteration", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		deployFakeLLMScript(ctx, ns, draftCheckScript)

		inner := &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: "draft-check", Namespace: ns}}
		inner.Spec.Params = []ergonv1alpha1.ParamSpec{{Name: "iteration"}}
		inner.Spec.Models = map[string]ergonv1alpha1.ModelSpec{"default": {BaseURL: ergonv1alpha1.URL(fmt.Sprintf("http://llm.%s.svc/v1", ns)), Model: "fake"}}
		inner.Spec.Steps = []ergonv1alpha1.Step{
			{Name: "draft", Timeout: &metav1.Duration{Duration: time.Minute}, Agent: &ergonv1alpha1.AgentStep{
				Prompt: "Write the summary, iteration {{ .params.iteration }}.", MaxTurns: new(int32(2))}},
			busyboxStep("check", `if grep -q good "$ERGON_INPUTS/draft"; then v=true; else v=false; fi; `+
				`echo -n "{\"pass\": $v, \"iteration\": $ERGON_PARAM_iteration}" > "$ERGON_OUTPUT"`, "draft"),
		}
		Expect(k8sClient.Create(ctx, inner)).To(Succeed())

		outer := &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: "refine", Namespace: ns}}
		outer.Spec.Steps = []ergonv1alpha1.Step{{Name: "refine",
			Scene: &ergonv1alpha1.SceneCall{Name: "draft-check", Params: map[string]string{"iteration": "{{ .loop.iteration }}"}},
			Loop:  &ergonv1alpha1.Loop{Until: "outputs.pass", MaxIterations: 5}}}
		Expect(k8sClient.Create(ctx, outer)).To(Succeed())
		run := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: "refine-1", Namespace: ns},
			Spec: ergonv1alpha1.RunSpec{SceneRef: corev1.LocalObjectReference{Name: "refine"}}}
		Expect(k8sClient.Create(ctx, run)).To(Succeed())

		run = finished(ctx, run)
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded), "%+v", run.Status)
		refine := stepOf(run, "refine")
		Expect(refine.Loop.Iteration).To(BeEquivalentTo(3))
		Expect(refine.Loop.Iterations).To(HaveLen(3))
		Expect(refine.Output.Preview).To(Equal(`{"pass": true, "iteration": 3}`))

		By("keeping every iteration's output, the failed checks included")
		cm := &corev1.ConfigMap{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: refine.Loop.Iterations[1].ConfigMap}, cm)).To(Succeed())
		Expect(cm.Data["output"]).To(Equal(`{"pass": false, "iteration": 2}`))
		children := &ergonv1alpha1.RunList{}
		Expect(k8sClient.List(ctx, children, client.InNamespace(ns),
			client.MatchingLabels{ergonv1alpha1.LabelParentRun: "refine-1"})).To(Succeed())
		Expect(children.Items).To(HaveLen(3), "one child Run per iteration")
	})

	It("fans out over 50 items and hands the fan-in step all 50 outputs in order", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		items := make([]int, 50)
		for i := range items {
			items[i] = i
		}
		raw, err := json.Marshal(items)
		Expect(err).NotTo(HaveOccurred())
		fan := busyboxStep("fan", `echo -n "$ITEM" > "$ERGON_OUTPUT"`)
		fan.Container.Env = []corev1.EnvVar{{Name: "ITEM", Value: "{{ .item }}"}}
		fan.ForEach = &ergonv1alpha1.ForEach{Items: &apiextensionsv1.JSON{Raw: raw}, Parallelism: new(int32(25))}
		started := time.Now()
		run := runScene(ctx, ns, "fan", fan, busyboxStep("join", `cat "$ERGON_INPUTS/fan" > "$ERGON_OUTPUT"`, "fan"))
		run = finished(ctx, run)
		GinkgoWriter.Printf("50-item fan-out and fan-in took %s\n", time.Since(started))
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded), "%+v", run.Status)
		Expect(stepOf(run, "fan").Instances.States).To(Equal(strings.Repeat("S", 50)))
		Expect(stepOf(run, "join").Output.Preview).To(Equal(string(raw)))
	})
})
