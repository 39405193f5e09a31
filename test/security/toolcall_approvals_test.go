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

package security

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/agentspec"
	"github.com/ergon-dev/ergon/internal/outputs/wire"
	"github.com/ergon-dev/ergon/test/testenv"
)

// fetchCall is the tool call the agent of the specs below hands over: a URL to fetch, which
// needs approval.
var fetchCall = agentspec.ToolRequest{ID: "call_1", Tool: ergonv1alpha1.ToolHTTPFetch, Kind: agentspec.RequestApproval,
	Arguments: `{"url":"https://example.com/payroll"}`}

// agentThatAsks plays the runtime of agent step "work": its first attempt hands fetchCall
// over to the controller (a checkpoint listing it, then ToolCallsPending), its second answers.
func agentThatAsks(pod *corev1.Pod) testenv.Outcome {
	if pod.Labels[ergonv1alpha1.LabelAttempt] != "1" {
		return testenv.Outcome{Output: "fetched"}
	}
	return handOver(fetchCall)
}

// handOver is the outcome of an agent's attempt that hands call over to the controller, as
// the agent runtime does: a checkpoint listing it, then ToolCallsPending.
func handOver(call agentspec.ToolRequest) testenv.Outcome {
	GinkgoHelper()
	cp, err := json.Marshal(map[string]any{"version": 1, "turn": 1,
		"pending": agentspec.Pending{Attempt: 1, Calls: []agentspec.ToolRequest{call}}})
	Expect(err).NotTo(HaveOccurred())
	var log bytes.Buffer
	Expect(wire.WriteProgress(&log, wire.Progress{Turn: 1, TotalTokens: 10}, cp)).To(Succeed())
	return testenv.Outcome{ExitCode: 7, Log: log.String(), FailReason: agentspec.ReasonToolCallsPending,
		FailMessage: "the agent waits for 1 tool calls"}
}

// agentScene makes a Scene whose agent step may call http_fetch as tool says, and returns its
// name.
func agentScene(ns, name string, tool ergonv1alpha1.AgentTool) string {
	tool.Name = ergonv1alpha1.ToolHTTPFetch
	Expect(admin.Create(ctx, &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: ergonv1alpha1.SceneSpec{
			Models: map[string]ergonv1alpha1.ModelSpec{"default": {BaseURL: "http://llm.models.svc/v1", Model: "small"}},
			Steps: []ergonv1alpha1.Step{{Name: "work", Agent: &ergonv1alpha1.AgentStep{Prompt: "Fetch the report.",
				Tools: []ergonv1alpha1.AgentTool{tool}}}},
		}})).To(Succeed())
	return name
}

// gatePatcher is a client of a person who may patch Gates but holds no verb approve: only being
// listed in a Gate's approvers lets them decide.
func gatePatcher(ns, name string) client.Client {
	role := "security-gate-patcher-" + ns
	if err := admin.Get(ctx, client.ObjectKey{Name: role}, &rbacv1.ClusterRole{}); err != nil {
		Expect(admin.Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: role},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{ergonv1alpha1.GroupVersion.Group}, Resources: []string{"gates"},
				Verbs: []string{"get", "list", "patch"}}}})).To(Succeed())
	}
	return userClient(ns, name, role)
}

// kubeletClient gives the kubelet its client once, before it first runs.
var kubeletClient sync.Once

// runKubelet runs the kubelet for the spec.
func runKubelet() {
	kubeletClient.Do(func() { kubelet.Client = admin })
	kctx, stop := context.WithCancel(context.Background())
	go kubelet.Run(kctx)
	DeferCleanup(stop)
}

// runFinished waits for a Run to end and returns its phase.
func runFinished(ns, name string) ergonv1alpha1.RunPhase {
	run := &ergonv1alpha1.Run{}
	Eventually(func(g Gomega) {
		g.Expect(admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, run)).To(Succeed())
		g.Expect(run.Status.Phase.Finished()).To(BeTrue(), "phase %s", run.Status.Phase)
	}).WithTimeout(30 * time.Second).Should(Succeed())
	return run.Status.Phase
}

var _ = Describe("Attacks on tool-call approvals", func() {
	BeforeEach(func() {
		runKubelet()
	})

	It("self-approval of a tool call: the person behind a Run cannot approve their own agent's call", func() {
		ns := newNamespace()
		kubelet.Use(ns, agentThatAsks)
		DeferCleanup(func() { kubelet.Use(ns, nil) })
		vera := userClient(ns, "vera", roleEdit)
		bindRole(ns, "vera", roleApprover) // RBAC lets vera approve any Gate of the namespace
		dave := userClient(ns, "dave", roleApprover)
		scene := agentScene(ns, "fetcher", ergonv1alpha1.AgentTool{RequireApproval: true})
		startRun(vera, ns, "fetch-1", scene)

		gate := gateOf(ns, "fetch-1")
		Expect(gate.Annotations).To(HaveKeyWithValue(ergonv1alpha1.AnnotationToolCall, fetchCall.ID))
		Expect(gate.Spec.ForbidSelfApproval).To(BeTrue(), "requireApproval forbids self-approval")
		refusedWith(decide(vera, gate, "approve"), "spec.decision", "vera created Run fetch-1", "forbids self-approval",
			"approval.allowSelfApproval")
		refusedWith(vote(vera, gate, "approve"), "spec.approvals", "vera created Run fetch-1", "forbids self-approval")
		Expect(reread(gate).Status.Phase).NotTo(Equal(ergonv1alpha1.GateApproved))

		Expect(decide(dave, gate, "approve")).To(Succeed(), "another approver may")
		Expect(runFinished(ns, "fetch-1")).To(Equal(ergonv1alpha1.RunSucceeded))
		Expect(reread(gate).Status.DecidedBy).To(Equal("dave"))
	})

	It("tool approvers: listed people approve without RBAC's verb, a quorum of two needs two of them, never the Run's person",
		func() {
			ns := newNamespace()
			kubelet.Use(ns, agentThatAsks)
			DeferCleanup(func() { kubelet.Use(ns, nil) })
			vera := userClient(ns, "vera", roleEdit)
			bindRole(ns, "vera", roleApprover)
			alice, bob, mallory := gatePatcher(ns, "alice"), gatePatcher(ns, "bob"), gatePatcher(ns, "mallory")
			scene := agentScene(ns, "fetcher", ergonv1alpha1.AgentTool{Approval: &ergonv1alpha1.ToolApproval{
				Approvers: &ergonv1alpha1.Approvers{Users: []string{"alice", "bob", "vera"}}, MinApprovals: new(int32(2))}})
			startRun(vera, ns, "fetch-1", scene)

			gate := gateOf(ns, "fetch-1")
			Expect(gate.Spec.Approvers.Users).To(ConsistOf("alice", "bob", "vera"))
			Expect(gate.Spec.MinApprovals).To(HaveValue(Equal(int32(2))))
			Expect(gate.Spec.ForbidSelfApproval).To(BeTrue())

			By("the Run's person, although listed and an RBAC approver")
			refusedWith(vote(vera, gate, "approve"), "spec.approvals", "vera created Run fetch-1", "forbids self-approval")
			By("someone neither listed nor granted approve")
			refusedWith(vote(mallory, gate, "approve"), "spec.approvals", "mallory may not decide this Gate")
			By("one listed approver, once")
			refusedWith(decide(alice, gate, "approve"), "spec.decision", "needs 2 approvals from different people")
			Expect(vote(alice, gate, "approve")).To(Succeed(), "a listed approver needs no verb approve")
			refusedWith(vote(alice, gate, "approve"), "spec.approvals")
			Eventually(func() ergonv1alpha1.GatePhase { return reread(gate).Status.Phase }).Should(Equal(ergonv1alpha1.GatePending))
			Consistently(func() ergonv1alpha1.GatePhase { return reread(gate).Status.Phase }).
				WithTimeout(2*time.Second).Should(Equal(ergonv1alpha1.GatePending), "one approval of two decides nothing")

			By("a second listed approver")
			Expect(vote(bob, gate, "approve")).To(Succeed())
			Expect(runFinished(ns, "fetch-1")).To(Equal(ergonv1alpha1.RunSucceeded))
			decided := reread(gate)
			Expect(decided.Status.Phase).To(Equal(ergonv1alpha1.GateApproved))
			Expect(decided.Status.DecidedBy).To(Equal("alice, bob"))
		})
})
