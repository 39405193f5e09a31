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
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

// askScript plays a model that asks a person for a region, then says what it was told: it
// can only repeat the answer from the tool's result.
const askScript = `rules:
- match: {lastRole: user}
  times: 1
  reply:
    toolCalls:
    - name: ask_human
      arguments: '{"question": "Which region do we deploy to?",
        "input": {"type": "object", "required": ["region"], "properties": {"region": {"type": "string"}}}}'
- match: {lastRole: tool}
  reply: {content: 'deploying as told: ', echoLast: true}
`

// gatePatchers lets each user get and patch the Gates and Runs of the namespace, without the
// verb approve: only what a Gate lists lets them decide it.
func gatePatchers(ctx SpecContext, ns string, users ...string) {
	Expect(k8sClient.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "gate-patcher", Namespace: ns},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{ergonv1alpha1.GroupVersion.Group},
			Resources: []string{"gates", "runs"}, Verbs: []string{"get", "list", "watch", "patch"}}}})).To(Succeed())
	for _, user := range users {
		Expect(k8sClient.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: ns},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "gate-patcher"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}})).To(Succeed())
	}
}

var _ = Describe("An agent that asks on a real cluster", func() {
	It("waits for the answer of a person it lists, given with kubectl ergon answer, and goes on with it", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		deployFakeLLMScript(ctx, ns, askScript)
		scene := &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: "asking", Namespace: ns}}
		scene.Spec.Models = map[string]ergonv1alpha1.ModelSpec{"default": {
			BaseURL: ergonv1alpha1.URL(fmt.Sprintf("http://llm.%s.svc/v1", ns)), Model: "fake"}}
		scene.Spec.Steps = []ergonv1alpha1.Step{{Name: "deploy", Timeout: &metav1.Duration{Duration: 2 * time.Minute},
			Agent: &ergonv1alpha1.AgentStep{Prompt: "Deploy the service.",
				Tools: []ergonv1alpha1.AgentTool{{Name: ergonv1alpha1.ToolAskHuman, Ask: &ergonv1alpha1.AskHuman{
					Approvers: &ergonv1alpha1.Approvers{Users: []string{"dana"}}, ForbidSelfApproval: true}}}}}}
		Expect(k8sClient.Create(ctx, scene)).To(Succeed())
		run := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: "asking-1", Namespace: ns},
			Spec: ergonv1alpha1.RunSpec{SceneRef: corev1.LocalObjectReference{Name: "asking"}}}
		Expect(k8sClient.Create(ctx, run)).To(Succeed())
		// Both may patch Gates in the namespace, neither is granted approve; only dana is listed.
		gatePatchers(ctx, ns, "dana", "mallory")

		gate := gateOfRun(ctx, ns, "asking-1")
		Expect(gate.Spec.Message).To(Equal("Which region do we deploy to?"))
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(run), run)).To(Succeed())
			g.Expect(stepOf(run, "deploy").Reason).To(Equal("ToolCallPending"))
		}).WithTimeout(time.Minute).Should(Succeed())

		code, out, _ := ran(ergon(ns, "inbox", "--as", "dana"))
		Expect(code).To(Equal(0))
		Expect(out).To(MatchRegexp(`(?m)^%s\s+asking-1\s+deploy\s+input: region\s+`, ns))
		nonce := rand.Text()
		code, _, errOut := ran(ergon(ns, "answer", "asking-1", "deploy", "--as", "mallory", "--set", "region="+nonce))
		Expect(code).To(Equal(1))
		Expect(errOut).To(ContainSubstring("mallory may not decide this Gate"))
		code, out, errOut = ran(ergon(ns, "answer", "asking-1", "deploy", "--as", "dana", "--set", "region="+nonce))
		Expect(code).To(Equal(0), errOut)
		Expect(out).To(Equal("gate.ergon.dev/" + gate.Name + " answered\n"))

		run = finished(ctx, run)
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded), "%+v", run.Status)
		deploy := stepOf(run, "deploy")
		Expect(deploy.Output.Preview).To(Equal(`deploying as told: {"region":"`+nonce+`"}`),
			"the model can only know the nonce from the tool's result")
		Expect(deploy.Attempts).To(BeEquivalentTo(2))
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(gate), gate)).To(Succeed())
		Expect(gate.Spec.Decision.User).To(Equal("dana"))
		Expect(fakeLLMRequests(ctx, ns)).To(Equal(2), "no turn was asked again")
	})
})
