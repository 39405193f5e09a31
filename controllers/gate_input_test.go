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
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/naming"
)

// releaseInput asks for a version, a channel and notes; channel has a default.
const releaseInput = `{"type": "object", "required": ["version"], "properties": {
	"version": {"type": "string"},
	"channel": {"type": "string", "enum": ["stable", "beta"], "default": "beta"},
	"notes": {"type": "string"}}}`

// The controller suite runs no webhooks: the answers below are stamped and completed as
// admission would have.
var _ = Describe("Input Gates", func() {
	BeforeEach(func() {
		ctx, cancel := context.WithCancel(context.Background())
		go testKubelet.run(ctx)
		DeferCleanup(cancel)
	})

	inputGate := func(mutate func(*ergonv1alpha1.GateStep)) ergonv1alpha1.Step {
		g := &ergonv1alpha1.GateStep{Message: "Which release?", Input: &apiextensionsv1.JSON{Raw: []byte(releaseInput)}}
		if mutate != nil {
			mutate(g)
		}
		return ergonv1alpha1.Step{Name: "ask", Gate: g}
	}
	gateOf := func(ctx SpecContext, ns, run string) *ergonv1alpha1.Gate {
		gate := &ergonv1alpha1.Gate{}
		Eventually(func() error {
			return k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: naming.GateName(run, "ask")}, gate)
		}).Should(Succeed())
		return gate
	}
	patch := func(ctx SpecContext, gate *ergonv1alpha1.Gate, spec string) {
		Expect(k8sClient.Patch(ctx, gate, client.RawPatch(types.MergePatchType, []byte(`{"spec":`+spec+`}`)))).To(Succeed())
	}

	It("hands the values a person gave to later steps as outputs, for when and templates alike", func(ctx SpecContext) {
		ns := newNamespace(ctx, echoLastArg)
		stable := container("ship", "shipping {{ .steps.ask.outputs.version | shquote }} to {{ .steps.ask.outputs.channel | shquote }}", "ask")
		stable.When = "steps.ask.outputs.channel == 'stable'"
		beta := container("preview", "previewing {{ .steps.ask.outputs.version | shquote }}", "ask")
		beta.When = "steps.ask.outputs.channel == 'beta'"
		createScene(ctx, ns, "release", inputGate(nil), stable, beta)
		createRun(ctx, ns, "release-1", "release", nil)
		gate := gateOf(ctx, ns, "release-1")
		Expect(string(gate.Spec.Input.Raw)).To(MatchJSON(releaseInput))
		Expect(gate.Spec.Message).To(Equal("Which release?"))

		// Notes longer than the status holds: the answer is kept in the step's ConfigMap.
		notes := strings.Repeat("n", 2000)
		patch(ctx, gate, `{"decision":{"option":"approve","user":"alice","values":{"version":"v7","channel":"stable","notes":"`+notes+`"}}}`)
		run := finished(ctx, ns, "release-1")
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded), "%+v", run.Status)
		ask := stepStatus(run, "ask")
		Expect(ask.Decision).To(Equal("approve"))
		Expect(ask.Output.Size).To(BeNumerically(">", 2000))
		Expect(ask.Output.Ref).NotTo(BeNil(), "an answer past the preview is kept in a ConfigMap")
		cm := &corev1.ConfigMap{}
		Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: ask.Output.Ref.ConfigMap}, cm)).To(Succeed())
		Expect(cm.Data[ask.Output.Ref.Key]).To(MatchJSON(`{"version":"v7","channel":"stable","notes":"` + notes + `"}`))
		Expect(stepStatus(run, "ship").Output.Preview).To(Equal("shipping 'v7' to 'stable'"))
		Expect(stepStatus(run, "preview").Phase).To(Equal(ergonv1alpha1.StepSkipped))

		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(gate), gate)).To(Succeed())
		Expect(gate.Status.Values).NotTo(BeNil())
		Expect(string(gate.Status.Values.Raw)).To(MatchJSON(`{"version":"v7","channel":"stable","notes":"` + notes + `"}`))
	})

	It("passes a quorum only when that many people gave the same values", func(ctx SpecContext) {
		ns := newNamespace(ctx, echoLastArg)
		createScene(ctx, ns, "agree", inputGate(func(g *ergonv1alpha1.GateStep) { g.MinApprovals = new(int32(2)) }),
			container("go", "going {{ .steps.ask.outputs.version | shquote }}", "ask"))
		createRun(ctx, ns, "agree-1", "agree", nil)
		gate := gateOf(ctx, ns, "agree-1")
		vote := func(user, version string) string {
			return `{"user":"` + user + `","option":"approve","values":{"version":"` + version + `","channel":"beta"}}`
		}
		patch(ctx, gate, `{"approvals":[`+vote("alice", "v1")+`,`+vote("bob", "v2")+`]}`)
		pending := func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(gate), gate)).To(Succeed())
			g.Expect(gate.Status.ObservedGeneration).To(Equal(gate.Generation))
			g.Expect(gate.Status.Phase).To(Equal(ergonv1alpha1.GatePending), "two votes with different values are no quorum")
		}
		Eventually(pending).Should(Succeed())
		Consistently(pending).WithTimeout(time.Second).Should(Succeed())

		patch(ctx, gate, `{"approvals":[`+vote("alice", "v1")+`,`+vote("bob", "v2")+`,`+vote("carol", "v2")+`]}`)
		run := finished(ctx, ns, "agree-1")
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded), "%+v", run.Status)
		Expect(stepStatus(run, "go").Output.Preview).To(Equal("going 'v2'"))
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(gate), gate)).To(Succeed())
		Expect(gate.Status.DecidedBy).To(Equal("bob, carol"))
	})

	It("takes the input's defaults when a timeout approves, and fails the step when no onTimeout is set", func(ctx SpecContext) {
		ns := newNamespace(ctx, echoLastArg)
		defaulted := `{"type": "object", "properties": {"version": {"type": "string", "default": "v0"},
			"replicas": {"type": "integer", "default": 3}}}`
		createScene(ctx, ns, "quiet", inputGate(func(g *ergonv1alpha1.GateStep) {
			g.Input.Raw = []byte(defaulted)
			g.Timeout, g.OnTimeout = &metav1.Duration{Duration: time.Second}, "approve"
		}), container("go", "going {{ .steps.ask.outputs.version | shquote }} x{{ .steps.ask.outputs.replicas | shquote }}", "ask"))
		createScene(ctx, ns, "strict", inputGate(func(g *ergonv1alpha1.GateStep) {
			g.Timeout = &metav1.Duration{Duration: time.Second}
		}))
		createRun(ctx, ns, "quiet-1", "quiet", nil)
		createRun(ctx, ns, "strict-1", "strict", nil)

		run := finished(ctx, ns, "quiet-1")
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded), "%+v", run.Status)
		Expect(stepStatus(run, "ask").Output.Preview).To(MatchJSON(`{"version":"v0","replicas":3}`))
		Expect(stepStatus(run, "go").Output.Preview).To(Equal("going 'v0' x'3'"))

		run = finished(ctx, ns, "strict-1")
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunFailed))
		Expect(stepStatus(run, "ask").Reason).To(Equal(ergonv1alpha1.ReasonGateTimedOut))
	})
})
