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

package console

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

func TestSceneGraph(t *testing.T) {
	spec := &ergonv1alpha1.SceneSpec{Steps: []ergonv1alpha1.Step{
		{Name: "fetch", Container: &ergonv1alpha1.ContainerStep{}},
		{Name: "draft", DependsOn: []string{"fetch"}, Agent: &ergonv1alpha1.AgentStep{}},
		{Name: "review", DependsOn: []string{"draft"}, When: "steps.draft.outputs.ok", Gate: &ergonv1alpha1.GateStep{}},
		{Name: "sub", DependsOn: []string{"review", "gone"}, Scene: &ergonv1alpha1.SceneCall{}},
	}}
	cases := []struct {
		name  string
		steps []ergonv1alpha1.StepStatus
		want  Graph
	}{
		{"a Scene's graph has each step by kind, its edges and its when on the edges into it", nil, Graph{
			Nodes: []GraphNode{{Name: "fetch", Kind: "container"}, {Name: "draft", Kind: "agent", Deps: []int{0}},
				{Name: "review", Kind: "gate", When: "steps.draft.outputs.ok", Deps: []int{1}}, {Name: "sub", Kind: "scene", Deps: []int{2}}},
		}},
		{"a Run's graph carries the phase of each step that started", []ergonv1alpha1.StepStatus{
			{Name: "fetch", Phase: ergonv1alpha1.StepSucceeded}, {Name: "draft", Phase: ergonv1alpha1.StepRunning}}, Graph{
			Nodes: []GraphNode{{Name: "fetch", Kind: "container", Phase: "Succeeded"}, {Name: "draft", Kind: "agent", Phase: "Running", Deps: []int{0}},
				{Name: "review", Kind: "gate", When: "steps.draft.outputs.ok", Deps: []int{1}}, {Name: "sub", Kind: "scene", Deps: []int{2}}},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := SceneGraph(spec, tc.steps); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
	if g := SceneGraph(nil, nil); len(g.Nodes) != 0 || g.Nodes == nil {
		t.Errorf("a Run without a snapshot yet has an empty graph, got %+v", g)
	}
}

func TestSummarize(t *testing.T) {
	now := metav1.Now()
	cases := []struct {
		name string
		run  ergonv1alpha1.Run
		want RunSummary
	}{
		{"a new Run is Pending with no progress", ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: "a", CreationTimestamp: now},
			Spec: ergonv1alpha1.RunSpec{SceneRef: ref("s")}},
			RunSummary{Name: "a", Scene: "s", Phase: "Pending", Created: now.Time}},
		{"a Trigger's Run names it, counts progress and the steps waiting on Gates", ergonv1alpha1.Run{
			ObjectMeta: metav1.ObjectMeta{Name: "b", CreationTimestamp: now, Labels: map[string]string{ergonv1alpha1.LabelTrigger: "weekly"}},
			Spec:       ergonv1alpha1.RunSpec{SceneRef: ref("s")},
			Status: ergonv1alpha1.RunStatus{Phase: ergonv1alpha1.RunWaiting, Progress: "2/5", StartedAt: &now,
				Steps: []ergonv1alpha1.StepStatus{{Name: "x", Phase: ergonv1alpha1.StepSucceeded}, {Name: "review", Phase: ergonv1alpha1.StepWaiting}}}},
			RunSummary{Name: "b", Scene: "s", Trigger: "weekly", Phase: "Waiting", Done: 2, Total: 5, Created: now.Time, Started: &now.Time, Waiting: []string{"review"}}},
		{"a progress that does not parse counts nothing", ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: "c", CreationTimestamp: now},
			Spec: ergonv1alpha1.RunSpec{SceneRef: ref("s")}, Status: ergonv1alpha1.RunStatus{Phase: ergonv1alpha1.RunRunning, Progress: "7/3"}},
			RunSummary{Name: "c", Scene: "s", Phase: "Running", Created: now.Time}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Summarize(&tc.run); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func ref(name string) corev1.LocalObjectReference { return corev1.LocalObjectReference{Name: name} }
