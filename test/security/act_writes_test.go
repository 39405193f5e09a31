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
	"encoding/json"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/memory"
	"github.com/ergon-dev/ergon/internal/naming"
	"github.com/ergon-dev/ergon/internal/outputs/wire"
	"github.com/ergon-dev/ergon/test/testenv"
)

// The Run controller's act only writes, over what gather read: it creates and updates the
// memory store and checkpoints with no read in between. These specs run it under the
// manager's own role, which envtest's administrator would not: a verb the role lacks fails here.
var _ = Describe("What act writes, under the manager's own role", func() {
	BeforeEach(func() {
		runKubelet()
	})

	It("keeps a Scene's memory across Runs: creates the store, then updates it", func() {
		ns := newNamespace()
		kubelet.Use(ns, func(pod *corev1.Pod) testenv.Outcome {
			b, _ := json.Marshal(map[string]any{"model": "small", "outcome": "Succeeded", "entries": []any{},
				"memory": []memory.Write{{Text: "learned by " + pod.Labels[ergonv1alpha1.LabelRun]}}})
			return testenv.Outcome{Output: "done", Transcript: string(b)}
		})
		DeferCleanup(func() { kubelet.Use(ns, nil) })
		Expect(admin.Create(ctx, &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "weekly"},
			Spec: ergonv1alpha1.SceneSpec{
				Models: map[string]ergonv1alpha1.ModelSpec{"default": {BaseURL: "http://llm.models.svc/v1", Model: "small"}},
				Memory: &ergonv1alpha1.SceneMemory{Name: "team"},
				Steps:  []ergonv1alpha1.Step{{Name: "draft", Agent: &ergonv1alpha1.AgentStep{Prompt: "Write the report."}}},
			}})).To(Succeed())
		for _, run := range []string{"weekly-1", "weekly-2"} {
			startRun(admin, ns, run, "weekly")
			Expect(runFinished(ns, run)).To(Equal(ergonv1alpha1.RunSucceeded))
		}
		cm := &corev1.ConfigMap{}
		Expect(admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: naming.MemoryConfigMapName("team", "Scene", "weekly")}, cm)).To(Succeed())
		store, err := memory.Read([]byte(cm.Data["memory"]))
		Expect(err).NotTo(HaveOccurred())
		Expect(store.Entries).To(HaveLen(2))
		Expect(store.Entries[0].Text).To(Equal("learned by weekly-1"))
		Expect(store.Entries[1].Text).To(Equal("learned by weekly-2"), "the second Run updated the store the first created")
	})

	It("keeps each attempt's checkpoint: creates the ConfigMap, then updates it", func() {
		ns := newNamespace()
		checkpoints := map[string][]byte{"1": []byte(`{"version":1,"turn":1}`), "2": []byte(`{"version":1,"turn":2}`)}
		kubelet.Use(ns, func(pod *corev1.Pod) testenv.Outcome {
			cp, ok := checkpoints[pod.Labels[ergonv1alpha1.LabelAttempt]]
			if !ok {
				return testenv.Outcome{Output: "done"}
			}
			var log bytes.Buffer
			Expect(wire.WriteProgress(&log, wire.Progress{Turn: 1, TotalTokens: 10}, cp)).To(Succeed())
			return testenv.Outcome{ExitCode: 1, Log: log.String()}
		})
		DeferCleanup(func() { kubelet.Use(ns, nil) })
		Expect(admin.Create(ctx, &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "resume"},
			Spec: ergonv1alpha1.SceneSpec{
				Models: map[string]ergonv1alpha1.ModelSpec{"default": {BaseURL: "http://llm.models.svc/v1", Model: "small"}},
				Steps: []ergonv1alpha1.Step{{Name: "work", Retry: &ergonv1alpha1.RetryPolicy{Limit: 2},
					Agent: &ergonv1alpha1.AgentStep{Prompt: "Work."}}},
			}})).To(Succeed())
		startRun(admin, ns, "resume-1", "resume")
		Expect(runFinished(ns, "resume-1")).To(Equal(ergonv1alpha1.RunSucceeded))
		cm := &corev1.ConfigMap{}
		Expect(admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: naming.CheckpointConfigMapName("resume-1", "work")}, cm)).To(Succeed())
		Expect(cm.Data["checkpoint"]).To(Equal(string(checkpoints["2"])), "the second attempt's checkpoint replaced the first's")
		run := &ergonv1alpha1.Run{}
		Expect(admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "resume-1"}, run)).To(Succeed())
		Expect(run.Status.Steps[0].CheckpointSHA256).To(Equal(wire.Digest(checkpoints["2"])))
	})
})
