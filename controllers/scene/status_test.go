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

package scene

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/controllers/internal/shared"
)

func sceneOf(name string, edit func(*ergonv1alpha1.SceneSpec), steps ...ergonv1alpha1.Step) ergonv1alpha1.Scene {
	s := ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Generation: 3}}
	s.Spec.Steps = steps
	if edit != nil {
		edit(&s.Spec)
	}
	return s
}

func TestASceneIsReadyOnlyWhenItCompilesAndWhatItNamesExists(t *testing.T) {
	workspace := func(s *ergonv1alpha1.SceneSpec) { s.Workspace = &corev1.LocalObjectReference{Name: "desk"} }
	for _, tc := range []struct {
		name       string
		scene      ergonv1alpha1.Scene
		namespace  []ergonv1alpha1.Scene
		workspace  bool
		want       metav1.ConditionStatus
		reason     string
		message    string
		reconciles bool
		stalled    bool
	}{
		{name: "a Scene that compiles and names nothing is Ready",
			scene: sceneOf("a", nil, container("x", "x")), want: metav1.ConditionTrue, reason: ergonv1alpha1.ReasonCompiled},
		{name: "a template reading a step that does not exist stalls it, naming the field",
			scene: sceneOf("a", nil, container("x", "{{ .steps.nowhere.output }}")), want: metav1.ConditionFalse,
			reason: ergonv1alpha1.ReasonCompileFailed, message: "spec.steps[0]", stalled: true},
		{name: "an agent naming an undefined model stalls it, as admission refuses it",
			scene: sceneOf("a", nil, ergonv1alpha1.Step{Name: "ask", Agent: &ergonv1alpha1.AgentStep{Prompt: "hi"}}),
			want:  metav1.ConditionFalse, reason: ergonv1alpha1.ReasonCompileFailed, message: "spec.steps[0].agent.model", stalled: true},
		{name: "Scenes calling each other in a cycle stall it",
			scene:     sceneOf("a", nil, callStep("b", "b")),
			namespace: []ergonv1alpha1.Scene{sceneOf("b", nil, callStep("a", "a"))},
			want:      metav1.ConditionFalse, reason: ergonv1alpha1.ReasonCompileFailed, message: "a -> b -> a", stalled: true},
		{name: "a called Scene that does not exist yet keeps it reconciling",
			scene: sceneOf("a", nil, callStep("b", "b"), callStep("c", "c")), namespace: []ergonv1alpha1.Scene{sceneOf("c", nil)},
			want: metav1.ConditionFalse, reason: ergonv1alpha1.ReasonSceneRefMissing, message: `Scene "b"`, reconciles: true},
		{name: "a called Scene that exists makes it Ready",
			scene: sceneOf("a", nil, callStep("b", "b")), namespace: []ergonv1alpha1.Scene{sceneOf("b", nil, container("x", "x"))},
			want: metav1.ConditionTrue, reason: ergonv1alpha1.ReasonCompiled},
		{name: "a Workspace that does not exist yet keeps it reconciling",
			scene: sceneOf("a", workspace, container("x", "x")),
			want:  metav1.ConditionFalse, reason: ergonv1alpha1.ReasonWorkspaceMissing, message: "spec.workspace.name", reconciles: true},
		{name: "a Workspace that exists makes it Ready",
			scene: sceneOf("a", workspace, container("x", "x")), workspace: true, want: metav1.ConditionTrue, reason: ergonv1alpha1.ReasonCompiled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, ev := sceneStatus(sceneFacts{scene: &tc.scene, namespace: tc.namespace, workspaceFound: tc.workspace},
				metav1.NewTime(time.Unix(0, 0)))
			ready := meta.FindStatusCondition(status.Conditions, ergonv1alpha1.ConditionReady)
			if ready == nil || ready.Status != tc.want || ready.Reason != tc.reason || ready.ObservedGeneration != 3 {
				t.Fatalf("Ready = %+v, want %s %s for generation 3", ready, tc.want, tc.reason)
			}
			if !strings.Contains(ready.Message, tc.message) {
				t.Errorf("message %q does not say %q", ready.Message, tc.message)
			}
			if got := meta.IsStatusConditionTrue(status.Conditions, ergonv1alpha1.ConditionReconciling); got != tc.reconciles {
				t.Errorf("Reconciling is %v, want %v", got, tc.reconciles)
			}
			if got := meta.IsStatusConditionTrue(status.Conditions, ergonv1alpha1.ConditionStalled); got != tc.stalled {
				t.Errorf("Stalled is %v, want %v", got, tc.stalled)
			}
			if status.ObservedGeneration != 3 || ev == nil || ev.reason != tc.reason || ev.warning != (tc.want != metav1.ConditionTrue) {
				t.Errorf("observedGeneration %d, event %+v", status.ObservedGeneration, ev)
			}
		})
	}
}

func TestASceneStatusHasItsFactsAndAnnouncesOnlyTransitions(t *testing.T) {
	scene := sceneOf("a", func(s *ergonv1alpha1.SceneSpec) {
		s.Params = []ergonv1alpha1.ParamSpec{{Name: "sprint"}, {Name: "team"}}
	}, container("x", "echo {{ .params.sprint | shquote }} {{ .params.team | shquote }}"), callStep("b", "b"), callStep("c", "b"))
	namespace := []ergonv1alpha1.Scene{sceneOf("b", nil, container("y", "y"))}
	status, ev := sceneStatus(sceneFacts{scene: &scene, namespace: namespace}, metav1.NewTime(time.Unix(0, 0)))
	if status.StepCount != 3 || strings.Join(status.Params, ",") != "sprint,team" || strings.Join(status.Calls, ",") != "b" {
		t.Errorf("facts: %d steps, params %v, calls %v; want 3, [sprint team], [b]", status.StepCount, status.Params, status.Calls)
	}
	if ev == nil || ev.warning {
		t.Fatalf("first status announced %+v, want a Normal event", ev)
	}
	scene.Status = status
	again, ev := sceneStatus(sceneFacts{scene: &scene, namespace: namespace}, metav1.NewTime(time.Unix(60, 0)))
	if ev != nil {
		t.Errorf("an unchanged Ready was announced again: %+v", ev)
	}
	first := metav1.NewTime(time.Unix(0, 0))
	if !meta.FindStatusCondition(again.Conditions, ergonv1alpha1.ConditionReady).LastTransitionTime.Equal(&first) {
		t.Error("an unchanged Ready got a new transition time")
	}
}

func TestASceneCallsTheScenesOfItsStepsFinallyAndSceneTools(t *testing.T) {
	call := func(name, scene string) ergonv1alpha1.Step {
		return ergonv1alpha1.Step{Name: name, Scene: &ergonv1alpha1.SceneCall{Name: ergonv1alpha1.SceneName(scene)}}
	}
	spec := &ergonv1alpha1.SceneSpec{
		Steps: []ergonv1alpha1.Step{call("a", "first"), {Name: "agent", Agent: &ergonv1alpha1.AgentStep{Prompt: "Work.",
			Tools: []ergonv1alpha1.AgentTool{{Scene: "as-tool"}, {Name: ergonv1alpha1.ToolHTTPFetch}}}}, call("b", "first")},
		Finally: []ergonv1alpha1.Step{call("report", "reporter")},
	}
	got := shared.CalledScenes(spec)
	want := []string{"first", "as-tool", "reporter"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("CalledScenes = %v, want %v", got, want)
	}
}

func container(name string, command string) ergonv1alpha1.Step {
	return ergonv1alpha1.Step{Name: name, Container: &ergonv1alpha1.ContainerStep{
		Image: "busybox:test", Command: []string{"sh", "-c", command},
	}}
}

func callStep(name, scene string) ergonv1alpha1.Step {
	return ergonv1alpha1.Step{Name: name, Scene: &ergonv1alpha1.SceneCall{Name: ergonv1alpha1.SceneName(scene)}}
}
