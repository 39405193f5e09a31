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
	"encoding/json"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/controllers/internal/shared"
	"github.com/ergon-dev/ergon/internal/agentspec"
	"github.com/ergon-dev/ergon/internal/naming"
	"github.com/ergon-dev/ergon/internal/planner"
	"github.com/ergon-dev/ergon/internal/stepcontract"
)

// This suite runs without the admission policies and as a cluster administrator, who may
// change any ConfigMap: it plays a cluster where someone other than the manager changed the
// Run's internal state, which only the digests in the Run's status then tell.
var _ = Describe("Internal state read back", func() {
	BeforeEach(func() {
		ctx, cancel := context.WithCancel(context.Background())
		go testKubelet.run(ctx)
		DeferCleanup(cancel)
	})

	It("is labelled internal, its digests recorded in the status and pinned in the next attempt's pod", func(ctx SpecContext) {
		var second atomic.Pointer[corev1.Pod]
		play := agentScript(summarizeCall)
		ns := newNamespace(ctx, func(pod *corev1.Pod) outcome {
			if pod.Labels[ergonv1alpha1.LabelStep] == "work" && pod.Labels[ergonv1alpha1.LabelAttempt] == "2" {
				second.Store(pod.DeepCopy())
			}
			return play(pod)
		})
		toolCallScenes(ctx, ns)
		createRun(ctx, ns, "pin-1", "writer", nil)
		run := finished(ctx, ns, "pin-1")
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded))
		work := stepStatus(run, "work")

		env := map[string]string{}
		Expect(second.Load()).NotTo(BeNil())
		for _, e := range second.Load().Spec.Containers[0].Env {
			env[e.Name] = e.Value
		}
		for name, key := range map[string]string{
			naming.CheckpointConfigMapName("pin-1", "work"):  checkpointKey,
			naming.ToolResultsConfigMapName("pin-1", "work"): toolResultsKey,
		} {
			cm := &corev1.ConfigMap{}
			Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, cm)).To(Succeed())
			Expect(cm.Labels).To(HaveKeyWithValue(ergonv1alpha1.LabelInternal, "true"), "ConfigMap %s", name)
			Expect(shared.ControlledBy(cm, run.UID)).To(BeTrue())
			sum := shared.Digest(cm.Data[key])
			if key == checkpointKey {
				Expect(work.CheckpointSHA256).To(Equal(sum))
				Expect(env).To(HaveKeyWithValue(stepcontract.EnvCheckpointSHA256, sum))
			} else {
				Expect(work.ToolResultsSHA256).To(Equal(sum))
				Expect(env).To(HaveKeyWithValue(stepcontract.EnvToolResultsSHA256, sum))
			}
		}
	}, SpecTimeout(60*time.Second))

	It("does not fulfil a tool call planted in a checkpoint replaced after it was kept", func(ctx SpecContext) {
		// The first attempt asks approval of a fetch; while the step waits for the Gate, the
		// checkpoint is replaced by one that asks for a Scene call instead.
		ns := newNamespace(ctx, agentScript(fetchCall))
		toolCallScenes(ctx, ns)
		run := createRun(ctx, ns, "plant-1", "writer", nil)
		gate := naming.ToolCallName("plant-1", "work", fetchCall.ID)
		Eventually(func() error {
			return k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: gate}, &ergonv1alpha1.Gate{})
		}).WithTimeout(20 * time.Second).Should(Succeed())

		name := naming.CheckpointConfigMapName("plant-1", "work")
		cm := &corev1.ConfigMap{}
		Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, cm)).To(Succeed())
		planted, err := json.Marshal(map[string]any{"version": 1, "turn": 1,
			"pending": agentspec.Pending{Attempt: 1, Calls: []agentspec.ToolRequest{summarizeCall}}})
		Expect(err).NotTo(HaveOccurred())
		cm.Data[checkpointKey] = string(planted)
		Expect(k8sClient.Update(ctx, cm)).To(Succeed(), "the label and the owner reference stay")

		Eventually(func() []string {
			var notes []string
			for _, e := range warnings(ctx, ns, "plant-1", shared.ReasonUntrustedState) {
				notes = append(notes, e.Note)
			}
			return notes
		}).WithTimeout(20 * time.Second).Should(ContainElement(And(ContainSubstring(name),
			ContainSubstring("does not hold the checkpoint of step work"))))
		child := naming.ToolCallName("plant-1", "work", summarizeCall.ID)
		Consistently(func() bool {
			err := k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: child}, &ergonv1alpha1.Run{})
			return apierrors.IsNotFound(err)
		}).WithTimeout(3*time.Second).Should(BeTrue(), "the planted Scene call runs no child Run")
		Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "plant-1"}, run)).To(Succeed())
		Expect(stepStatus(run, "work").Phase).To(Equal(ergonv1alpha1.StepWaiting))
	}, SpecTimeout(60*time.Second))

	It("fails a step whose tool calls wait under a checkpoint name someone else's ConfigMap has", func(ctx SpecContext) {
		ns := newNamespace(ctx, agentScript(summarizeCall))
		toolCallScenes(ctx, ns)
		name := naming.CheckpointConfigMapName("squat-1", "work")
		Expect(k8sClient.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Data: map[string]string{checkpointKey: "{}"}})).To(Succeed())
		createRun(ctx, ns, "squat-1", "writer", nil)

		run := finished(ctx, ns, "squat-1")
		work := stepStatus(run, "work")
		Expect(work.Phase).To(Equal(ergonv1alpha1.StepFailed))
		Expect(work.Reason).To(Equal(ergonv1alpha1.ReasonNameConflict))
		Expect(work.Message).To(ContainSubstring(name))
		Expect(work.Message).NotTo(ContainSubstring(planner.ReasonToolCallsLost))
		Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: naming.ToolCallName("squat-1", "work",
			summarizeCall.ID)}, &ergonv1alpha1.Run{})).NotTo(Succeed(), "no call is fulfilled")
	}, SpecTimeout(60*time.Second))
})
