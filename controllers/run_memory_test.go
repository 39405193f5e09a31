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
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/agentspec"
	"github.com/ergon-dev/ergon/internal/identity"
	"github.com/ergon-dev/ergon/internal/memory"
	"github.com/ergon-dev/ergon/internal/naming"
)

// memoryScene is a Scene whose one agent step may remember.
func memoryScene(ctx context.Context, ns, name string, m ergonv1alpha1.SceneMemory) *ergonv1alpha1.Scene {
	scene := &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	scene.Spec.Models = map[string]ergonv1alpha1.ModelSpec{"default": {BaseURL: "http://llm.models.svc/v1", Model: "small"}}
	scene.Spec.Memory = &m
	scene.Spec.Steps = []ergonv1alpha1.Step{{Name: "draft", Agent: &ergonv1alpha1.AgentStep{
		Prompt: "Write the weekly report.", Tools: []ergonv1alpha1.AgentTool{{Name: ergonv1alpha1.ToolRemember}}}}}
	Expect(k8sClient.Create(ctx, scene)).To(Succeed())
	return scene
}

// remembering is a transcript whose agent proposed the writes.
func remembering(writes ...memory.Write) string {
	b, _ := json.Marshal(map[string]any{"model": "small", "outcome": "Succeeded", "usage": map[string]int{"turns": 2},
		"entries": []any{}, "memory": writes})
	return string(b)
}

// agentPodOf waits for the agent pod of a Run's first attempt of step draft.
func agentPodOf(ctx context.Context, ns, run string) *corev1.Pod {
	pod := &corev1.Pod{}
	Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: naming.StepPodName(run, "draft", 1)}, pod)).To(Succeed())
	}).WithTimeout(20 * time.Second).Should(Succeed())
	return pod
}

// memoryVolume is the ConfigMap an agent pod mounts as its memory, and the memory its spec names.
func memoryVolume(pod *corev1.Pod) (string, *agentspec.MemoryConfig) {
	var spec agentspec.Spec
	Expect(json.Unmarshal([]byte(pod.Annotations[annotationAgentSpec]), &spec)).To(Succeed())
	for _, v := range pod.Spec.Volumes {
		if v.Name == "ergon-memory" {
			Expect(*v.ConfigMap.Optional).To(BeTrue())
			Expect(pod.Spec.Containers[0].VolumeMounts).To(ContainElement(corev1.VolumeMount{
				Name: "ergon-memory", MountPath: memoryDir, ReadOnly: true}))
			return v.ConfigMap.Name, spec.Memory
		}
	}
	return "", spec.Memory
}

func readStore(ctx context.Context, ns, name string) (*corev1.ConfigMap, memory.Store) {
	cm := &corev1.ConfigMap{}
	Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, cm)).To(Succeed())
	store, err := memory.Read([]byte(cm.Data[memoryKey]))
	Expect(err).NotTo(HaveOccurred())
	return cm, store
}

var _ = Describe("A Scene's memory", func() {
	BeforeEach(func() {
		ctx, cancel := context.WithCancel(context.Background())
		go testKubelet.run(ctx)
		DeferCleanup(cancel)
	})

	It("keeps what the first weekly Run's agent remembered, and the second Run's agent reads it", func(ctx SpecContext) {
		ns := newNamespace(ctx, func(pod *corev1.Pod) outcome {
			switch pod.Labels[ergonv1alpha1.LabelRun] {
			case "weekly-1":
				return outcome{Output: "report 1", Transcript: remembering(
					memory.Write{Key: "lead", Text: "The sprint lead is Ada."},
					memory.Write{Text: "The tracker's password=hunter2-hunter2 works."})}
			case "weekly-2":
				return outcome{Stay: true}
			}
			return outcome{Output: "report", Transcript: remembering()}
		})
		scene := memoryScene(ctx, ns, "weekly", ergonv1alpha1.SceneMemory{Name: "team", MaxBytes: new(int32(4096))})
		createRun(ctx, ns, "weekly-1", "weekly", nil)
		Expect(finished(ctx, ns, "weekly-1").Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded))

		name := naming.MemoryConfigMapName("team", "Scene", "weekly")
		cm, store := readStore(ctx, ns, name)
		Expect(store.Entries).To(HaveLen(2), "the step's writes, once, however often the Run was reconciled")
		Expect(store.Entries[0].Key).To(Equal("lead"))
		Expect(store.Entries[0].Text).To(Equal("The sprint lead is Ada."))
		Expect(store.Entries[1].Text).To(Equal("The tracker's password=[REDACTED] works."))
		Expect(cm.Data[memoryKey]).NotTo(ContainSubstring("hunter2"))
		Expect(cm.Labels).To(HaveKeyWithValue(labelMemory, "team"))
		Expect(cm.OwnerReferences).To(ConsistOf(HaveField("UID", scene.UID)), "the Scene owns the store; no Run does")
		Expect(cm.OwnerReferences[0].Controller).To(BeNil())

		createRun(ctx, ns, "weekly-2", "weekly", nil)
		pod := agentPodOf(ctx, ns, "weekly-2")
		mounted, spec := memoryVolume(pod)
		Expect(mounted).To(Equal(name))
		Expect(spec).To(Equal(&agentspec.MemoryConfig{Name: "team", Scope: "Scene", File: memoryDir + "/" + memoryFile}))
	})

	It("keeps a User memory per person, shared by the Scenes that name it, and another person's apart", func(ctx SpecContext) {
		ns := newNamespace(ctx, func(pod *corev1.Pod) outcome {
			if pod.Labels[ergonv1alpha1.LabelRun] == "prefs-1" {
				return outcome{Output: "ok", Transcript: remembering(memory.Write{Key: "tone", Text: "Ada likes short reports."})}
			}
			return outcome{Stay: true}
		})
		user := ergonv1alpha1.SceneMemory{Name: "prefs", Scope: ergonv1alpha1.MemoryScopeUser}
		first := memoryScene(ctx, ns, "prefs", user)
		memoryScene(ctx, ns, "digest", user)
		byAda := func(name, scene string) {
			run := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns,
				Annotations: map[string]string{ergonv1alpha1.AnnotationCreatedBy: "ada@example.com"}},
				Spec: ergonv1alpha1.RunSpec{SceneRef: corev1.LocalObjectReference{Name: scene}}}
			identity.Stamp(run, ergonv1alpha1.AnnotationIdentity, ergonv1alpha1.UserIdentity{
				Username: "ada@example.com", Groups: []string{"system:authenticated", "system:masters"}})
			Expect(k8sClient.Create(ctx, run)).To(Succeed())
		}
		byAda("prefs-1", "prefs")
		Expect(finished(ctx, ns, "prefs-1").Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded))
		name := naming.MemoryConfigMapName("prefs", "User", "ada@example.com")
		Expect(name).NotTo(ContainSubstring("ada"))
		cm, store := readStore(ctx, ns, name)
		Expect(store.Entries).To(HaveLen(1))
		Expect(cm.OwnerReferences).To(ConsistOf(HaveField("UID", first.UID)))

		byAda("digest-1", "digest")
		mounted, spec := memoryVolume(agentPodOf(ctx, ns, "digest-1"))
		Expect(mounted).To(Equal(name), "another Scene naming the same User memory reads the person's store")
		Expect(spec.Scope).To(Equal("User"))

		// The suite's administrator is another person: their Run never reads Ada's store.
		createRun(ctx, ns, "digest-2", "digest", nil)
		mounted, _ = memoryVolume(agentPodOf(ctx, ns, "digest-2"))
		Expect(mounted).To(Equal(naming.MemoryConfigMapName("prefs", "User", suiteUser.Username)))
		Expect(mounted).NotTo(Equal(name))
	})
})
