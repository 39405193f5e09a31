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

package run

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/controllers/internal/shared"
	"github.com/ergon-dev/ergon/internal/outputs"
	"github.com/ergon-dev/ergon/internal/stepcontract"
)

// TestInternalStateIsTrustedOnlyWhenVerified: a ConfigMap the manager reads back is used only
// when its expected owner controls it, it carries the internal label, and it holds the
// recorded digest. Each forgery a tenant who may write ConfigMaps can make is refused, with a
// message naming the ConfigMap.
func TestInternalStateIsTrustedOnlyWhenVerified(t *testing.T) {
	run := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: "nightly", UID: "run-uid"}}
	own := func() *corev1.ConfigMap {
		return shared.MarkInternal(&corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "nightly-cm", OwnerReferences: []metav1.OwnerReference{ownerRef(run)}},
			Data:       map[string]string{"checkpoint": "kept"}})
	}
	want := shared.RunWants(run, "the checkpoint of step s", "checkpoint")
	want.SHA256 = shared.Digest("kept")
	for _, c := range []struct {
		name   string
		change func(*corev1.ConfigMap)
		want   func(*shared.Want)
		refuse string
	}{
		{name: "the Run's own, holding the recorded checkpoint, is used"},
		{name: "one without the internal label is refused, though it names the Run as controller",
			change: func(cm *corev1.ConfigMap) { delete(cm.Labels, ergonv1alpha1.LabelInternal) },
			refuse: "does not carry the label ergon.dev/internal=true"},
		{name: "one whose label says anything but true is refused",
			change: func(cm *corev1.ConfigMap) { cm.Labels[ergonv1alpha1.LabelInternal] = "yes" },
			refuse: "does not carry the label"},
		{name: "one another object controls is refused",
			change: func(cm *corev1.ConfigMap) { cm.OwnerReferences[0].UID = "another-run" },
			refuse: "Run nightly did not create it"},
		{name: "one that names the Run as an owner but not as controller is refused",
			change: func(cm *corev1.ConfigMap) { cm.OwnerReferences[0].Controller = nil },
			refuse: "not its controlling owner"},
		{name: "one that holds another checkpoint than the status records is refused",
			change: func(cm *corev1.ConfigMap) { cm.Data["checkpoint"] = "planted tool call" },
			refuse: "does not hold the checkpoint of step s that Run nightly recorded"},
		{name: "one that lacks the key is refused when a digest is recorded",
			change: func(cm *corev1.ConfigMap) { cm.Data = nil },
			refuse: "no key checkpoint"},
		{name: "one whose size differs from the recorded size is refused",
			want:   func(w *shared.Want) { w.SHA256, w.Size = "", 3 },
			refuse: "does not hold the checkpoint"},
		{name: "with nothing recorded, the Run's own is used whatever it holds",
			change: func(cm *corev1.ConfigMap) { cm.Data["checkpoint"] = "anything" },
			want:   func(w *shared.Want) { w.SHA256 = "" }},
		{name: "a memory store, which no owner controls, needs the label",
			change: func(cm *corev1.ConfigMap) { delete(cm.Labels, ergonv1alpha1.LabelInternal); cm.OwnerReferences = nil },
			want:   func(w *shared.Want) { w.Owner, w.SHA256 = "", "" },
			refuse: "does not carry the label"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cm, w := own(), want
			if c.change != nil {
				c.change(cm)
			}
			if c.want != nil {
				c.want(&w)
			}
			_, err := shared.VerifyInternal(cm, w)
			if c.refuse == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if _, ok := errors.AsType[*shared.ConflictError](err); !ok || !strings.Contains(err.Error(), c.refuse) ||
				!strings.Contains(err.Error(), "nightly-cm") {
				t.Fatalf("got %v; want a conflict naming ConfigMap nightly-cm: %q", err, c.refuse)
			}
		})
	}
}

// TestAnOutputIsCheckedAsEveryReaderChecksIt: the controller reads an output back only from
// its Run's own ConfigMap, and only when it passes outputs.Verify, as the plugin, the console
// and the archive check it.
func TestAnOutputIsCheckedAsEveryReaderChecksIt(t *testing.T) {
	run := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: "ns", UID: "run-uid"}}
	value := strings.Repeat("report ", 500)
	out := outputs.Value(run.Name, "s", value)
	cm := outputConfigMap(run, "s", value, "")
	if got, err := shared.CheckOutput(cm, run.UID, run.Name, out); err != nil || got != value {
		t.Fatalf("the Run's own output: %v", err)
	}
	cm.Data[outputs.KeyOutput] = strings.Repeat("r3port ", 500)
	if _, err := shared.CheckOutput(cm, run.UID, run.Name, out); err == nil ||
		!strings.Contains(err.Error(), "does not hold the output that Run nightly recorded") {
		t.Fatalf("a changed output of the same size: %v", err)
	}
	delete(cm.Data, outputs.KeyOutput)
	if _, err := shared.CheckOutput(cm, run.UID, run.Name, out); err == nil || !strings.Contains(err.Error(), "no key output") {
		t.Fatalf("an output ConfigMap without the output: %v", err)
	}
	if _, err := shared.CheckOutput(outputConfigMap(run, "s", value, ""), "another-run", "other", out); err == nil ||
		!strings.Contains(err.Error(), "Run other did not create it") {
		t.Fatalf("another Run's output: %v", err)
	}
	// A transcript is read from its own key: the archive keeps it beside the output.
	transcript := `{"entries":[]}`
	if got, err := shared.CheckOutput(outputConfigMap(run, "s", value, transcript), run.UID, run.Name,
		outputs.Transcript(run.Name, "s", transcript)); err != nil || got != transcript {
		t.Fatalf("the Run's own transcript: %q, %v", got, err)
	}
}

// TestAgentPodsPinTheirInternalState: the digests of what the kubelet mounts by name travel in
// the pod's environment, which cannot change once the pod is created.
func TestAgentPodsPinTheirInternalState(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: shared.StepContainer, Env: []corev1.EnvVar{
			{Name: stepcontract.EnvCheckpoint, Value: "/ergon/checkpoint/checkpoint"},
			{Name: stepcontract.EnvToolResults, Value: "/ergon/tool-results/results"},
		}}},
		Volumes: []corev1.Volume{{Name: memoryVolumeName}},
	}}
	pinAgentState(pod, &ergonv1alpha1.StepStatus{CheckpointSHA256: "c", ToolResultsSHA256: "r"}, "m")
	env := map[string]string{}
	for _, e := range pod.Spec.Containers[0].Env {
		env[e.Name] = e.Value
	}
	for name, value := range map[string]string{stepcontract.EnvCheckpointSHA256: "c",
		stepcontract.EnvToolResultsSHA256: "r", stepcontract.EnvMemorySHA256: "m"} {
		if got, ok := env[name]; !ok || got != value {
			t.Errorf("%s = %q (set: %v), want %q", name, got, ok, value)
		}
	}

	container := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: shared.StepContainer}}}}
	pinAgentState(container, &ergonv1alpha1.StepStatus{CheckpointSHA256: "c"}, "m")
	if len(container.Spec.Containers[0].Env) != 0 {
		t.Errorf("a pod that mounts no internal state gets pins: %v", container.Spec.Containers[0].Env)
	}
}
