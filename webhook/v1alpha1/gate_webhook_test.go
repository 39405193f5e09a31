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

package v1alpha1

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

// bind grants a user a ClusterRole in a namespace.
func bind(ctx context.Context, ns, user, role string) {
	Expect(k8sClient.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{GenerateName: user + "-", Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
	})).To(Succeed())
}

// decide patches a Gate's decision as kubectl patch does, forging the user it claims.
func decide(ctx context.Context, c client.Client, gate *ergonv1alpha1.Gate, option string) error {
	patch := []byte(`{"spec":{"decision":{"option":"` + option + `","comment":"ok","user":"mallory","groups":["admins"]}}}`)
	return c.Patch(ctx, gate.DeepCopy(), client.RawPatch(types.MergePatchType, patch))
}

func approve(ctx context.Context, c client.Client, gate *ergonv1alpha1.Gate, approvals string) error {
	return c.Patch(ctx, gate.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(`{"spec":{"approvals":[`+approvals+`]}}`)))
}

var _ = Describe("The Gate webhook", Ordered, func() {
	var ns string
	var alice, bob, dave client.Client

	BeforeAll(func(ctx SpecContext) {
		ns = newNamespace(ctx)
		// Everyone may patch Gates; only RBAC's verb approve or the Gate's approvers decide.
		Expect(client.IgnoreAlreadyExists(k8sClient.Create(ctx, &rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: "gate-patcher"},
			Rules: []rbacv1.PolicyRule{
				{APIGroups: []string{"ergon.dev"}, Resources: []string{"gates"}, Verbs: []string{"get", "patch"}},
				{APIGroups: []string{"ergon.dev"}, Resources: []string{"runs"}, Verbs: []string{"create", "get"}},
			},
		}))).To(Succeed())
		data, err := os.ReadFile(filepath.Join("..", "..", "config", "rbac", "user_roles.yaml"))
		Expect(err).NotTo(HaveOccurred())
		approver := &rbacv1.ClusterRole{}
		Expect(yaml.Unmarshal([]byte(strings.SplitN(string(data), "\n---", 2)[0]), approver)).To(Succeed())
		Expect(approver.Name).To(Equal("gate-approver"))
		approver.Name = "ergon-gate-approver" // as kustomize's namePrefix and the chart name it
		Expect(client.IgnoreAlreadyExists(k8sClient.Create(ctx, approver))).To(Succeed())
		for _, u := range []string{"alice", "bob", "dave"} {
			bind(ctx, ns, u, "gate-patcher")
		}
		bind(ctx, ns, "dave", "ergon-gate-approver")
		alice, bob, dave = clientAs("alice", "leads"), clientAs("bob"), clientAs("dave")
		// The Runs' Scene uses no Secret, so people who cannot read Secrets may run it.
		plain := scene("plain", container("a", "true"))
		plain.Namespace = ns
		Expect(k8sClient.Create(ctx, &plain)).To(Succeed())
	})

	gateOf := func(ctx SpecContext, name string, mutate func(*ergonv1alpha1.GateSpec)) *ergonv1alpha1.Gate {
		run := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: ergonv1alpha1.RunSpec{SceneRef: corev1.LocalObjectReference{Name: "plain"}}}
		Expect(alice.Create(ctx, run)).To(Succeed())
		gate := &ergonv1alpha1.Gate{ObjectMeta: metav1.ObjectMeta{Name: name + "-review", Namespace: ns},
			Spec: ergonv1alpha1.GateSpec{RunRef: corev1.LocalObjectReference{Name: name}, Step: "review",
				Approvers: &ergonv1alpha1.Approvers{Groups: []string{"leads"}}}}
		if mutate != nil {
			mutate(&gate.Spec)
		}
		Expect(k8sClient.Create(ctx, gate)).To(Succeed())
		return gate
	}

	It("stamps a listed approver's identity over the one the client sent", func(ctx SpecContext) {
		gate := gateOf(ctx, "r1", nil)
		Expect(decide(ctx, alice, gate, "approve")).To(Succeed())
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(gate), gate)).To(Succeed())
		Expect(gate.Spec.Decision.User).To(Equal("alice"))
		Expect(gate.Spec.Decision.Groups).To(ContainElement("leads"))
		Expect(gate.Spec.Decision.Groups).NotTo(ContainElement("admins"))

		By("refusing a second decision")
		Expect(decide(ctx, dave, gate, "reject")).To(MatchError(ContainSubstring("a Gate is decided once")))
	})

	It("refuses someone neither listed nor granted approve by RBAC", func(ctx SpecContext) {
		gate := gateOf(ctx, "r2", nil)
		refused(decide(ctx, bob, gate, "approve"), "spec.decision", "bob may not decide this Gate", "ergon-gate-approver")
	})

	It("allows someone RBAC grants the verb approve, though not listed", func(ctx SpecContext) {
		gate := gateOf(ctx, "r3", nil)
		Expect(decide(ctx, dave, gate, "reject")).To(Succeed())
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(gate), gate)).To(Succeed())
		Expect(gate.Spec.Decision.User).To(Equal("dave"))
	})

	It("refuses the Run's creator when the Gate forbids self-approval", func(ctx SpecContext) {
		gate := gateOf(ctx, "r4", func(s *ergonv1alpha1.GateSpec) { s.ForbidSelfApproval = true })
		run := &ergonv1alpha1.Run{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "r4"}, run)).To(Succeed())
		Expect(run.Annotations).To(HaveKeyWithValue(ergonv1alpha1.AnnotationCreatedBy, "alice"))
		refused(decide(ctx, alice, gate, "approve"), "alice created Run r4", "forbids self-approval")
		Expect(decide(ctx, dave, gate, "approve")).To(Succeed())
	})

	It("keeps the tool call a Gate asks approval of", func(ctx SpecContext) {
		gate := gateOf(ctx, "r8", nil)
		patch := []byte(`{"metadata":{"annotations":{"` + ergonv1alpha1.AnnotationToolCall + `":"call_9"}}}`)
		refused(alice.Patch(ctx, gate.DeepCopy(), client.RawPatch(types.MergePatchType, patch)),
			"metadata.annotations[agent.ergon.dev/tool-call]", "never changes")
	})

	It("refuses decisions once the Run has finished", func(ctx SpecContext) {
		gate := gateOf(ctx, "r5", nil)
		run := &ergonv1alpha1.Run{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "r5"}, run)).To(Succeed())
		run.Status.Phase = ergonv1alpha1.RunCancelled
		Expect(k8sClient.Status().Update(ctx, run)).To(Succeed())
		refused(decide(ctx, alice, gate, "approve"), "Run r5 has finished (Cancelled)")
	})

	It("refuses decisions and votes on a Gate that is closed or decided already", func(ctx SpecContext) {
		closed := gateOf(ctx, "r9", nil)
		closed.Status.Phase = ergonv1alpha1.GateClosed
		Expect(k8sClient.Status().Update(ctx, closed)).To(Succeed())
		refused(decide(ctx, dave, closed, "approve"), "spec.decision", "Gate r9-review is Closed",
			"its Run r9 ended before anyone decided", "can no longer be decided")
		refused(decide(ctx, alice, closed, "reject"), "spec.decision", "is Closed")

		quorum := gateOf(ctx, "r10", func(s *ergonv1alpha1.GateSpec) { s.MinApprovals = new(int32(2)) })
		quorum.Status.Phase, quorum.Status.DecidedBy = ergonv1alpha1.GateTimedOut, "timeout"
		Expect(k8sClient.Status().Update(ctx, quorum)).To(Succeed())
		refused(approve(ctx, dave, quorum, `{"user":"dave","option":"approve"}`), "spec.approvals",
			"Gate r10-review is TimedOut already (by timeout)")
	})

	It("needs two different people for a quorum of two, each stamped", func(ctx SpecContext) {
		gate := gateOf(ctx, "r6", func(s *ergonv1alpha1.GateSpec) { s.MinApprovals = new(int32(2)) })
		Expect(approve(ctx, alice, gate, `{"user":"zed","option":"approve"}`)).To(Succeed())
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(gate), gate)).To(Succeed())
		Expect(gate.Spec.Approvals).To(ConsistOf(HaveField("User", "alice")))

		By("refusing a second approval by the same person, whatever name it claims")
		refused(approve(ctx, alice, gate, `{"user":"alice","option":"approve"},{"user":"zed","option":"approve"}`),
			`spec.approvals[1]: Duplicate value: {"user":"alice"}`)
		By("refusing to withdraw an approval")
		refused(approve(ctx, dave, gate, `{"user":"someone","option":"approve"}`), "approvals are never withdrawn")
		By("appending a vote after the ones cast, as kubectl patch --type json does")
		Expect(dave.Patch(ctx, gate.DeepCopy(), client.RawPatch(types.JSONPatchType,
			[]byte(`[{"op":"add","path":"/spec/approvals/-","value":{"user":"someone","option":"approve"}}]`)))).To(Succeed())
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(gate), gate)).To(Succeed())
		Expect(gate.Spec.Approvals).To(ConsistOf(HaveField("User", "alice"), HaveField("User", "dave")))
	})

	// release asks for a version and, with defaults, a channel and a replica count.
	release := func(s *ergonv1alpha1.GateSpec) {
		s.Input = &apiextensionsv1.JSON{Raw: []byte(`{"type": "object", "required": ["version"], "properties": {
			"version": {"type": "string", "pattern": "^v[0-9]+$"},
			"channel": {"type": "string", "enum": ["stable", "beta"], "default": "beta"},
			"replicas": {"type": "integer", "minimum": 1, "default": 2}}}`)}
	}
	answer := func(ctx SpecContext, c client.Client, gate *ergonv1alpha1.Gate, decision string) error {
		return c.Patch(ctx, gate.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(`{"spec":{"decision":`+decision+`}}`)))
	}

	It("refuses an input Gate's values that do not fit, naming each field", func(ctx SpecContext) {
		gate := gateOf(ctx, "in1", release)
		err := answer(ctx, alice, gate, `{"values": {"version": "1.0", "replicas": 0, "colour": "red"}}`)
		refused(err, `spec.decision.values.version: Invalid value: "1.0": must match ^v[0-9]+$`,
			"spec.decision.values.replicas: Invalid value: 0: must be at least 1",
			`spec.decision.values.colour: Unsupported value: "colour"`)
		refused(answer(ctx, alice, gate, `{"values": {"channel": "stable"}}`), "spec.decision.values.version: Required value")
		refused(answer(ctx, alice, gate, `{"option": "approve", "values": {"version": "v`+strings.Repeat("1", 17<<10)+`"}}`),
			"spec.decision.values: Too long")
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(gate), gate)).To(Succeed())
		Expect(gate.Spec.Decision).To(BeNil())
	})

	It("completes an input Gate's answer with the option that approves and the defaults, stamped", func(ctx SpecContext) {
		gate := gateOf(ctx, "in2", release)
		Expect(answer(ctx, alice, gate, `{"values": {"version": "v3"}, "user": "mallory"}`)).To(Succeed())
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(gate), gate)).To(Succeed())
		d := gate.Spec.Decision
		Expect(d.User).To(Equal("alice"))
		Expect(d.Option).To(Equal("approve"))
		Expect(string(d.Values.Raw)).To(MatchJSON(`{"version": "v3", "channel": "beta", "replicas": 2}`))
	})

	It("takes a rejection without values, and refuses values on a Gate that asks none", func(ctx SpecContext) {
		gate := gateOf(ctx, "in3", release)
		Expect(answer(ctx, dave, gate, `{"option": "reject", "comment": "not now"}`)).To(Succeed())
		plain := gateOf(ctx, "in4", nil)
		refused(answer(ctx, alice, plain, `{"option": "approve", "values": {"version": "v3"}}`),
			"spec.decision.values: Forbidden: this Gate asks for no input")
	})

	It("keeps the input a Gate asks for", func(ctx SpecContext) {
		gate := gateOf(ctx, "in5", release)
		refused(alice.Patch(ctx, gate.DeepCopy(), client.RawPatch(types.MergePatchType,
			[]byte(`{"spec":{"input":{"type":"object","properties":{"anything":{"type":"string"}}}}}`))), "spec.input: Forbidden")
	})

	It("refuses a Scene whose gate input no form can render, or whose timeout has no defaults to take", func(ctx SpecContext) {
		gateStep := func(input string, onTimeout string) *ergonv1alpha1.Scene {
			g := &ergonv1alpha1.GateStep{Input: &apiextensionsv1.JSON{Raw: []byte(input)}, OnTimeout: onTimeout}
			if onTimeout != "" {
				g.Timeout = &metav1.Duration{Duration: time.Hour}
			}
			return &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{GenerateName: "ask-", Namespace: ns},
				Spec: ergonv1alpha1.SceneSpec{Steps: []ergonv1alpha1.Step{{Name: "ask", Gate: g}}}}
		}
		const (
			encoded = `{"type": "object", "properties": {"file": {"type": "string", "contentEncoding": "base64"}}}`
			version = `{"type": "object", "required": ["version"], "properties": {"version": {"type": "string"}}}`
			withV1  = `{"type": "object", "required": ["version"], "properties": {"version": {"type": "string", "default": "v1"}}}`
		)
		refused(k8sClient.Create(ctx, gateStep(encoded, "")),
			`spec.steps[0].gate.input.properties[file].contentEncoding: Unsupported value: "contentEncoding"`)
		refused(k8sClient.Create(ctx, gateStep(`{"type": "array", "items": {"type": "string"}}`, "")),
			`spec.steps[0].gate.input.type: Invalid value: "array"`)
		refused(k8sClient.Create(ctx, gateStep(version, "approve")),
			"spec.steps[0].gate.input.version: Required value: required, with no default for a timeout to take; onTimeout approve")
		Expect(k8sClient.Create(ctx, gateStep(version, "reject"))).To(Succeed())
		Expect(k8sClient.Create(ctx, gateStep(withV1, "approve"))).To(Succeed())
	})

	It("takes a vote with values on an input Gate with a quorum, each checked", func(ctx SpecContext) {
		gate := gateOf(ctx, "in6", func(s *ergonv1alpha1.GateSpec) { release(s); s.MinApprovals = new(int32(2)) })
		refused(approve(ctx, alice, gate, `{"option":"approve","user":"x","values":{"version":"latest"}}`),
			`spec.approvals[0].values.version: Invalid value: "latest"`)
		Expect(approve(ctx, alice, gate, `{"option":"approve","user":"x","values":{"version":"v4"}}`)).To(Succeed())
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(gate), gate)).To(Succeed())
		Expect(string(gate.Spec.Approvals[0].Values.Raw)).To(MatchJSON(`{"version": "v4", "channel": "beta", "replicas": 2}`))
	})
})
