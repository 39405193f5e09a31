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
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/agentspec"
	"github.com/ergon-dev/ergon/internal/naming"
)

// guardedScene creates a Scene "guarded" whose agent step "work" may fetch URLs with the
// approval given.
func guardedScene(ctx context.Context, ns string, approval *ergonv1alpha1.ToolApproval) {
	Expect(k8sClient.Create(ctx, &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: "guarded", Namespace: ns},
		Spec: ergonv1alpha1.SceneSpec{Models: models, Steps: []ergonv1alpha1.Step{{Name: "work", Agent: &ergonv1alpha1.AgentStep{
			Prompt: "Fetch.", Tools: []ergonv1alpha1.AgentTool{{Name: "http_fetch", Approval: approval}}}}}},
	})).To(Succeed())
}

// runOfPerson creates a Run of a Scene as admission would for person: this suite runs no
// webhooks, so the test stamps the person behind the Run itself.
func runOfPerson(ctx context.Context, ns, name, scene, person string) {
	Expect(k8sClient.Create(ctx, &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns,
		Annotations: map[string]string{ergonv1alpha1.AnnotationCreatedBy: person}},
		Spec: ergonv1alpha1.RunSpec{SceneRef: corev1.LocalObjectReference{Name: scene}}})).To(Succeed())
}

// toolCallGateOf waits for the Gate of a call of step work of a Run.
func toolCallGateOf(ctx context.Context, ns, run, call string) *ergonv1alpha1.Gate {
	gate := &ergonv1alpha1.Gate{}
	Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: naming.ToolCallName(run, "work", call)}, gate)).To(Succeed())
	}).WithTimeout(30 * time.Second).Should(Succeed())
	return gate
}

// castVotes appends votes to a Gate's approvals as they would be stamped; this suite runs no
// admission, so the Gate controller alone decides what they count for.
func castVotes(ctx context.Context, gate *ergonv1alpha1.Gate, votes ...ergonv1alpha1.GateApproval) {
	Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(gate), gate)).To(Succeed())
	patch := client.MergeFrom(gate.DeepCopy())
	gate.Spec.Approvals = append(gate.Spec.Approvals, votes...)
	Expect(k8sClient.Patch(ctx, gate, patch)).To(Succeed())
}

var _ = Describe("An agent tool's approval", func() {
	BeforeEach(func() {
		ctx, cancel := context.WithCancel(context.Background())
		go testKubelet.run(ctx)
		DeferCleanup(cancel)
	})

	It("is asked of the tool's approvers on each call's Gate, which counts neither the Run's person nor one person twice",
		func(ctx SpecContext) {
			ns := newNamespace(ctx, agentScript(fetchCall))
			guardedScene(ctx, ns, &ergonv1alpha1.ToolApproval{
				Approvers: &ergonv1alpha1.Approvers{Users: []string{"alice", "bob", "vera"}}, MinApprovals: new(int32(2))})
			runOfPerson(ctx, ns, "g-1", "guarded", "vera")

			gate := toolCallGateOf(ctx, ns, "g-1", "call_2")
			Expect(gate.Annotations).To(HaveKeyWithValue(ergonv1alpha1.AnnotationToolCall, "call_2"))
			Expect(gate.Spec.Approvers).To(Equal(&ergonv1alpha1.Approvers{Users: []string{"alice", "bob", "vera"}}))
			Expect(gate.Spec.MinApprovals).To(HaveValue(Equal(int32(2))))
			Expect(gate.Spec.ForbidSelfApproval).To(BeTrue(), "a tool's approval forbids self-approval unless it allows it")

			By("counting neither the vote of the person behind the Run nor alice's second")
			castVotes(ctx, gate, ergonv1alpha1.GateApproval{User: "vera", Option: "approve"},
				ergonv1alpha1.GateApproval{User: "alice", Option: "approve"})
			Eventually(func() ergonv1alpha1.GatePhase { return reread(ctx, gate).Status.Phase }).Should(Equal(ergonv1alpha1.GatePending))
			Consistently(func() ergonv1alpha1.GatePhase { return reread(ctx, gate).Status.Phase }, "2s").
				Should(Equal(ergonv1alpha1.GatePending), "vera's vote and alice's make one approval of two")

			By("deciding with a second person's vote")
			castVotes(ctx, gate, ergonv1alpha1.GateApproval{User: "bob", Option: "approve"})
			run := finished(ctx, ns, "g-1")
			Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded))
			Expect(reread(ctx, gate).Status.DecidedBy).To(Equal("alice, bob"))
			Expect(toolResultsOf(ctx, ns, "g-1", "work").Results).To(ConsistOf(HaveField("Approval",
				HaveValue(Equal(agentspec.Approval{Approved: true, By: "alice, bob", Gate: gate.Name})))))
		}, SpecTimeout(60*time.Second))

	It("lets the person behind the Run approve their agent's call when the tool allows self-approval", func(ctx SpecContext) {
		ns := newNamespace(ctx, agentScript(fetchCall))
		guardedScene(ctx, ns, &ergonv1alpha1.ToolApproval{AllowSelfApproval: true})
		runOfPerson(ctx, ns, "g-1", "guarded", "vera")

		gate := toolCallGateOf(ctx, ns, "g-1", "call_2")
		Expect(gate.Spec.ForbidSelfApproval).To(BeFalse())
		Expect(gate.Spec.Approvers).To(BeNil())
		castVotes(ctx, gate, ergonv1alpha1.GateApproval{User: "vera", Option: "approve"})
		Expect(finished(ctx, ns, "g-1").Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded))
		Expect(reread(ctx, gate).Status.DecidedBy).To(Equal("vera"))
	}, SpecTimeout(60*time.Second))
})

// reread returns the stored Gate.
func reread(ctx context.Context, gate *ergonv1alpha1.Gate) *ergonv1alpha1.Gate {
	fresh := &ergonv1alpha1.Gate{}
	ExpectWithOffset(1, k8sClient.Get(ctx, client.ObjectKeyFromObject(gate), fresh)).To(Succeed())
	return fresh
}
