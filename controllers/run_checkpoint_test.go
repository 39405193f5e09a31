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
	"bytes"
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/controllers/internal/shared"
	"github.com/ergon-dev/ergon/internal/naming"
	"github.com/ergon-dev/ergon/internal/outputs/wire"
	"github.com/ergon-dev/ergon/internal/stepcontract"
)

// progressLog is an agent pod's log after some turns: a progress line with a checkpoint
// after each, with the runtime's other lines around them.
func progressLog(turns int) ([]byte, string) {
	var log bytes.Buffer
	var last string
	for turn := 1; turn <= turns; turn++ {
		last = fmt.Sprintf(`{"version":1,"turn":%d}`, turn)
		Expect(wire.WriteProgress(&log, wire.Progress{Turn: turn, PromptTokens: int64(100 * turn),
			CompletionTokens: int64(10 * turn), TotalTokens: int64(110 * turn)}, []byte(last))).To(Succeed())
		log.WriteString("agent: the model API is rate limiting (429); retrying in 1s\n")
	}
	return log.Bytes(), last
}

var _ = Describe("A running agent step", func() {
	BeforeEach(func() {
		ctx, cancel := context.WithCancel(context.Background())
		go testKubelet.run(ctx)
		DeferCleanup(cancel)
	})

	It("shows its progress, keeps its checkpoint, and its next attempt gets it after the pod is killed", func(ctx SpecContext) {
		ns := newNamespace(ctx, func(pod *corev1.Pod) outcome {
			if pod.Labels[ergonv1alpha1.LabelAttempt] == "1" {
				return outcome{Stay: true}
			}
			return outcome{Output: "resumed", Transcript: `{"usage":{"turns":6,"totalTokens":660},"entries":[]}`}
		})
		Expect(k8sClient.Create(ctx, &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: "long", Namespace: ns},
			Spec: ergonv1alpha1.SceneSpec{
				Models: map[string]ergonv1alpha1.ModelSpec{"default": {BaseURL: "http://llm.models.svc/v1", Model: "small"}},
				Steps: []ergonv1alpha1.Step{{Name: "work", Agent: &ergonv1alpha1.AgentStep{Prompt: "Work long."},
					Retry: &ergonv1alpha1.RetryPolicy{Limit: 1}}},
			}})).To(Succeed())
		run := createRun(ctx, ns, "long-1", "long", nil)
		first := naming.StepPodName("long-1", "work", 1)
		pod := &corev1.Pod{}
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: first}, pod)).To(Succeed())
			g.Expect(pod.Status.Phase).To(Equal(corev1.PodRunning))
		}).Should(Succeed())
		// The first attempt mounts the checkpoint volume though there is nothing to resume.
		Expect(pod.Spec.Volumes).To(ContainElement(HaveField("ConfigMap.LocalObjectReference.Name",
			naming.CheckpointConfigMapName("long-1", "work"))))

		// Turns 1-3 done: the status shows them, the ConfigMap keeps the third's checkpoint.
		log, third := progressLog(3)
		logs.Write(ns, first, log)
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "long-1"}, run)).To(Succeed())
			g.Expect(stepOf(g, run, "work").Phase).To(Equal(ergonv1alpha1.StepRunning))
			g.Expect(stepOf(g, run, "work").Usage).To(Equal(&ergonv1alpha1.AgentUsage{Turns: 3, PromptTokens: 300,
				CompletionTokens: 30, TotalTokens: 330}))
		}).Should(Succeed())
		cm := &corev1.ConfigMap{}
		name := naming.CheckpointConfigMapName("long-1", "work")
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, cm)).To(Succeed())
			g.Expect(cm.Data).To(HaveKeyWithValue("checkpoint", third))
		}).Should(Succeed())
		Expect(shared.ControlledBy(cm, run.UID)).To(BeTrue())

		// Turn 4's line names a checkpoint whose frame the log's end does not hold (cut, or
		// rotated away): the progress shows, and the third checkpoint stays kept.
		cut, _ := progressLog(4)
		begin := bytes.LastIndex(cut, []byte("\n----- ERGON OUTPUT BEGIN"))
		end := bytes.Index(cut[begin:], []byte("----- ERGON OUTPUT END"))
		Expect(begin).To(BeNumerically(">", 0))
		Expect(end).To(BeNumerically(">", 0))
		logs.Write(ns, first, append(cut[:begin:begin], cut[begin+end:]...))
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "long-1"}, run)).To(Succeed())
			g.Expect(stepOf(g, run, "work").Usage.Turns).To(BeEquivalentTo(4))
		}).Should(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, cm)).To(Succeed())
			g.Expect(cm.Data).To(HaveKeyWithValue("checkpoint", third))
		}).WithTimeout(2 * time.Second).Should(Succeed())

		// Turn 4 completes and the pod is deleted at once: the pod being deleted is read once
		// more, whatever the interval, so the next attempt loses no completed turn.
		Expect(controllerutil.AddFinalizer(pod, "test.ergon.dev/hold")).To(BeTrue())
		Expect(k8sClient.Update(ctx, pod)).To(Succeed())
		log, fourth := progressLog(4)
		logs.Write(ns, first, log)
		Expect(k8sClient.Delete(ctx, pod)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, cm)).To(Succeed())
			g.Expect(cm.Data).To(HaveKeyWithValue("checkpoint", fourth))
		}).Should(Succeed())
		Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: first}, pod)).To(Succeed())
		Expect(controllerutil.RemoveFinalizer(pod, "test.ergon.dev/hold")).To(BeTrue())
		Expect(k8sClient.Update(ctx, pod)).To(Succeed())

		second := &corev1.Pod{}
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: naming.StepPodName("long-1", "work", 2)},
				second)).To(Succeed())
		}).Should(Succeed())
		env := map[string]string{}
		for _, e := range second.Spec.Containers[0].Env {
			env[e.Name] = e.Value
		}
		Expect(env).To(HaveKeyWithValue(stepcontract.EnvCheckpoint, "/ergon/checkpoint/checkpoint"))
		Expect(second.Spec.Containers[0].VolumeMounts).To(ContainElement(And(
			HaveField("Name", "ergon-checkpoint"), HaveField("ReadOnly", true))))

		run = finished(ctx, ns, "long-1")
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded))
		Expect(stepStatus(run, "work").Usage.Turns).To(Equal(int32(6)), "the transcript's usage replaces the progress")
	}, SpecTimeout(60*time.Second))

	It("empties the checkpoint when the runtime says a retry must start afresh", func(ctx SpecContext) {
		ns := newNamespace(ctx, func(pod *corev1.Pod) outcome { return outcome{Stay: true} })
		Expect(k8sClient.Create(ctx, &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: "long", Namespace: ns},
			Spec: ergonv1alpha1.SceneSpec{
				Models: map[string]ergonv1alpha1.ModelSpec{"default": {BaseURL: "http://llm.models.svc/v1", Model: "small"}},
				Steps:  []ergonv1alpha1.Step{{Name: "work", Agent: &ergonv1alpha1.AgentStep{Prompt: "Work long."}}},
			}})).To(Succeed())
		createRun(ctx, ns, "long-2", "long", nil)
		first := naming.StepPodName("long-2", "work", 1)
		Eventually(func(g Gomega) {
			pod := &corev1.Pod{}
			g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: first}, pod)).To(Succeed())
			g.Expect(pod.Status.Phase).To(Equal(corev1.PodRunning))
		}).Should(Succeed())
		log, _ := progressLog(2)
		logs.Write(ns, first, log)
		name := naming.CheckpointConfigMapName("long-2", "work")
		cm := &corev1.ConfigMap{}
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, cm)).To(Succeed())
		}).Should(Succeed())
		var reset bytes.Buffer
		reset.Write(log)
		Expect(wire.WriteProgress(&reset, wire.Progress{Turn: 3, TotalTokens: 330, Reset: true}, nil)).To(Succeed())
		logs.Write(ns, first, reset.Bytes())
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, cm)).To(Succeed())
			g.Expect(cm.Data).To(HaveKeyWithValue("checkpoint", ""))
		}).Should(Succeed())
	}, SpecTimeout(60*time.Second))
})
