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
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"time"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"
	"github.com/a2aproject/a2a-go/a2aclient/agentcard"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/planner"
	"github.com/ergon-dev/ergon/internal/protocols"
	"github.com/ergon-dev/ergon/test/testenv"
)

// The same promises over A2A, with the A2A project's Go SDK as the client: a task is a Run the
// caller started, its Gate is input-required, and the caller's answer is the caller's.
var _ = Describe("Scenes as A2A agents, as the caller and no one else", func() {
	var ns string
	var ts *httptest.Server

	BeforeEach(func() {
		runKubelet()
		ns = newNamespace()
		kubelet.Use(ns, func(pod *corev1.Pod) testenv.Outcome {
			return testenv.Outcome{Output: fmt.Sprintf(`{"step": %q, "done": true}`, pod.Labels[ergonv1alpha1.LabelStep])}
		})
		DeferCleanup(func() { kubelet.Use(ns, nil) })
		for _, name := range []string{"report", "other"} {
			sc := &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
				Labels: map[string]string{ergonv1alpha1.LabelA2AAgent: "true"}},
				Spec: ergonv1alpha1.SceneSpec{
					Description: "Drafts the weekly report, has it approved, and publishes it.",
					Params:      []ergonv1alpha1.ParamSpec{{Name: "topic"}},
					Steps: []ergonv1alpha1.Step{containerStep("draft"),
						{Name: "approve", DependsOn: []string{"draft"}, Gate: &ergonv1alpha1.GateStep{Message: "Publish the report?"}},
						containerStep("publish", "approve")},
				}}
			Expect(admin.Create(ctx, sc)).To(Succeed())
		}
		// A blocking call returns once its task needs the caller, or after this wait.
		ts = protocolServer(protocols.Config{CallWait: 5 * time.Second})
	})

	It("serves the agent card to whoever may run the Scene, and to no one else", func() {
		alice := saToken(ns, "alice", roleEdit)
		card := agentCard(ts, ns, "report", alice)
		Expect(card.Name).To(Equal("report"))
		Expect(card.URL).To(Equal(ts.URL + protocols.A2APath + "/" + ns + "/report"))
		Expect(card.Capabilities.Streaming).To(BeTrue())
		Expect(card.Skills).To(HaveLen(1))
		Expect(card.Skills[0].Description).To(ContainSubstring("topic"))

		_, err := agentcard.NewResolver(ts.Client()).Resolve(ctx, ts.URL+protocols.A2APath+"/"+ns+"/report")
		Expect(err).To(MatchError(ContainSubstring("401")), "no token, no card")
		viewer := saToken(ns, "viewer", roleView)
		_, err = agentcard.NewResolver(ts.Client()).Resolve(ctx, ts.URL+protocols.A2APath+"/"+ns+"/report",
			agentcard.WithRequestHeader("Authorization", "Bearer "+viewer))
		Expect(err).To(MatchError(ContainSubstring("404")), "a viewer may not run the Scene")
	})

	It("runs a task as the caller: input-required at its Gate, completed with the outputs once answered", func() {
		alice := saToken(ns, "alice", roleEdit, roleApprover)
		ag := agentClient(ts, ns, "report", alice)
		res, err := ag.SendMessage(ctx, &a2a.MessageSendParams{Message: a2a.NewMessage(a2a.MessageRoleUser,
			a2a.DataPart{Data: map[string]any{"params": map[string]any{"topic": "sprint 43"}}})})
		Expect(err).NotTo(HaveOccurred())
		task, ok := res.(*a2a.Task)
		Expect(ok).To(BeTrue(), "a task, not a message: %#v", res)
		Expect(task.Status.State).To(Equal(a2a.TaskStateInputRequired))
		Expect(task.Status.Message).NotTo(BeNil())
		gate := dataOf(task.Status.Message.Parts)
		Expect(gate).To(HaveKey("gate"))
		Expect(gate).To(HaveKeyWithValue("schema", HaveKey("properties")))

		// The answer, as a message on the task; streamed this time.
		answer := a2a.NewMessage(a2a.MessageRoleUser, a2a.DataPart{Data: map[string]any{"decision": "approve", "comment": "ok"}})
		answer.TaskID = task.ID
		var states []a2a.TaskState
		var outputs map[string]any
		for ev, err := range ag.SendStreamingMessage(ctx, &a2a.MessageSendParams{Message: answer}) {
			Expect(err).NotTo(HaveOccurred())
			switch ev := ev.(type) {
			case *a2a.Task:
				states = append(states, ev.Status.State)
			case *a2a.TaskStatusUpdateEvent:
				states = append(states, ev.Status.State)
			case *a2a.TaskArtifactUpdateEvent:
				outputs = dataOf(ev.Artifact.Parts)
			}
		}
		Expect(states[len(states)-1]).To(Equal(a2a.TaskStateCompleted), "states %v", states)
		Expect(outputs).To(HaveKeyWithValue("outputs", HaveKeyWithValue("publish", HaveKeyWithValue("done", true))))

		got, err := ag.GetTask(ctx, &a2a.TaskQueryParams{ID: task.ID})
		Expect(err).NotTo(HaveOccurred())
		Expect(got.Status.State).To(Equal(a2a.TaskStateCompleted))
		Expect(got.Artifacts).To(HaveLen(1))

		user := "system:serviceaccount:" + ns + ":alice"
		run := &ergonv1alpha1.Run{}
		Expect(admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: string(task.ID)}, run)).To(Succeed())
		Expect(run.Annotations).To(HaveKeyWithValue(ergonv1alpha1.AnnotationCreatedBy, user))
		Expect(run.Annotations).To(HaveKeyWithValue(ergonv1alpha1.AnnotationVia, "a2a"))
		Expect(gateOf(ns, run.Name).Spec.Decision.User).To(Equal(user))
		Eventually(func(g Gomega) {
			events := &corev1.EventList{}
			g.Expect(admin.List(ctx, events, client.InNamespace(ns))).To(Succeed())
			g.Expect(slices.ContainsFunc(events.Items, func(e corev1.Event) bool {
				return e.InvolvedObject.Name == run.Name && e.Reason == planner.ReasonCreatedThrough &&
					e.Message == "Run created by "+user+" through A2A"
			})).To(BeTrue())
		}).Should(Succeed())
	})

	It("keeps one agent's tasks to it, refuses an answer the caller may not give, and cancels as the caller", func() {
		alice := saToken(ns, "alice", roleEdit) // may not decide Gates
		ag := agentClient(ts, ns, "report", alice)
		res, err := ag.SendMessage(ctx, &a2a.MessageSendParams{Message: a2a.NewMessage(a2a.MessageRoleUser,
			a2a.TextPart{Text: "sprint 44"})})
		Expect(err).NotTo(HaveOccurred())
		task := res.(*a2a.Task)
		Expect(task.Status.State).To(Equal(a2a.TaskStateWorking), "it waits on a Gate alice may not decide")

		answer := a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: "approve"})
		answer.TaskID = task.ID
		_, err = ag.SendMessage(ctx, &a2a.MessageSendParams{Message: answer})
		Expect(errors.Is(err, a2a.ErrInvalidParams)).To(BeTrue(), "%v", err)
		Expect(gateOf(ns, string(task.ID)).Spec.Decision).To(BeNil())

		_, err = agentClient(ts, ns, "other", alice).GetTask(ctx, &a2a.TaskQueryParams{ID: task.ID})
		Expect(errors.Is(err, a2a.ErrTaskNotFound)).To(BeTrue(), "a task of another agent: %v", err)

		_, err = ag.CancelTask(ctx, &a2a.TaskIDParams{ID: task.ID})
		Expect(err).NotTo(HaveOccurred())
		Expect(runFinished(ns, string(task.ID))).To(Equal(ergonv1alpha1.RunCancelled))
		got, err := ag.GetTask(ctx, &a2a.TaskQueryParams{ID: task.ID})
		Expect(err).NotTo(HaveOccurred())
		Expect(got.Status.State).To(Equal(a2a.TaskStateCanceled))
	})
})

// agentCard resolves an agent's card with a token.
func agentCard(ts *httptest.Server, ns, scene, token string) *a2a.AgentCard {
	card, err := agentcard.NewResolver(ts.Client()).Resolve(ctx, ts.URL+protocols.A2APath+"/"+ns+"/"+scene,
		agentcard.WithRequestHeader("Authorization", "Bearer "+token))
	Expect(err).NotTo(HaveOccurred())
	return card
}

// agentClient is the A2A Go SDK's client of an agent, from its card, sending a token.
func agentClient(ts *httptest.Server, ns, scene, token string) *a2aclient.Client {
	hc := &http.Client{Transport: bearer{token: token, next: ts.Client().Transport}}
	c, err := a2aclient.NewFromCard(ctx, agentCard(ts, ns, scene, token), a2aclient.WithJSONRPCTransport(hc))
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { _ = c.Destroy() })
	return c
}

// dataOf is the object of the first data part.
func dataOf(parts a2a.ContentParts) map[string]any {
	for _, p := range parts {
		switch p := p.(type) {
		case a2a.DataPart:
			return p.Data
		case *a2a.DataPart:
			return p.Data
		}
	}
	return nil
}
