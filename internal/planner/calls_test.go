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

package planner

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/cause"
	"github.com/ergon-dev/ergon/internal/compile"
)

// callFacts are the facts of a fresh Run r of spec, at the given depth and counts.
func callFacts(t *testing.T, spec ergonv1alpha1.SceneSpec, depth, caused, children int) *Facts {
	t.Helper()
	scene, errs := compile.Compile(&spec)
	if len(errs) > 0 {
		t.Fatalf("compile: %v", errs)
	}
	run := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "ns", UID: "uid-1"}}
	run.Status.SceneSnapshot = &spec
	return &Facts{Now: t0, Run: run, Scene: scene, Children: map[string]ChildState{}, Gates: map[string]GateState{},
		PodBudget: -1, MaxDepth: 3, Depth: depth, Caused: caused, ChildRuns: children,
		Calls: cause.Limits{MaxCaused: 10, MaxChildren: 4}}
}

func TestASceneStepAsksForItsChildRunOnlyWithinTheCauseCaps(t *testing.T) {
	spec := ergonv1alpha1.SceneSpec{Steps: []ergonv1alpha1.Step{sceneStep("call")}}
	cases := []struct {
		name                    string
		depth, caused, children int
		wantReason              string
		wantInMessage           []string
	}{
		{name: "below every cap, the child Run is asked for", depth: 2, caused: 9, children: 3},
		{name: "at the depth cap, the step fails DepthExceeded", depth: 3, wantReason: ergonv1alpha1.ReasonDepthExceeded,
			wantInMessage: []string{"nest deeper than 3", cause.FlagMaxDepth, cause.ValueMaxDepth}},
		{name: "at the child Runs cap, the step fails ChildRunsExceeded", children: 4,
			wantReason:    ergonv1alpha1.ReasonChildRunsExceeded,
			wantInMessage: []string{"limit of child Runs per Run (4)", cause.FlagMaxChildren, cause.ValueMaxChildren}},
		{name: "at the cap of Runs one root causes, the step fails CausedRunsExceeded", caused: 10,
			wantReason:    ergonv1alpha1.ReasonCausedRunsExceeded,
			wantInMessage: []string{"limit of Runs one root may cause (10)", cause.FlagMaxCaused, cause.ValueMaxCaused}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := Decide(callFacts(t, spec, tc.depth, tc.caused, tc.children))
			st := p.Status.Steps[0]
			if tc.wantReason == "" {
				if len(p.Children) != 1 || st.Phase != ergonv1alpha1.StepRunning {
					t.Fatalf("children %v, step %s %s", p.Children, st.Phase, st.Message)
				}
				return
			}
			if len(p.Children) != 0 || st.Phase != ergonv1alpha1.StepFailed || st.Reason != tc.wantReason {
				t.Fatalf("children %v, step %s %s: %s", p.Children, st.Phase, st.Reason, st.Message)
			}
			for _, want := range tc.wantInMessage {
				if !strings.Contains(st.Message, want) {
					t.Errorf("message %q does not name %q", st.Message, want)
				}
			}
		})
	}
}

func TestAFanOutOfSceneStepsCreatesNoChildRunPastTheCapAndFailsNamingIt(t *testing.T) {
	fan := ergonv1alpha1.Step{Name: "fan", ForEach: &ergonv1alpha1.ForEach{Items: jsonOf(t, []int{0, 1, 2, 3, 4, 5})},
		Scene: &ergonv1alpha1.SceneCall{Name: "sub", Params: map[string]string{"item": "{{ .item }}"}}}
	f := callFacts(t, ergonv1alpha1.SceneSpec{Steps: []ergonv1alpha1.Step{fan}}, 0, 0, 1)
	p := Decide(f)
	if len(p.Children) != 3 {
		t.Fatalf("asked for %d child Runs; the cap of 4 with 1 made allows 3", len(p.Children))
	}
	in := p.Status.Steps[0].Instances
	if in == nil || len(in.Failures) == 0 || in.Failures[0].Reason != ergonv1alpha1.ReasonChildRunsExceeded ||
		!strings.Contains(in.Failures[0].Message, cause.FlagMaxChildren) {
		t.Fatalf("instances %+v", in)
	}
}

func TestASceneToolCallPastACapIsAnsweredWithTheLimit(t *testing.T) {
	w := newToolWorld(t, nil)
	w.plan()
	w.handOver(sceneCall)
	w.childRuns, w.limits = 50, cause.Limits{MaxChildren: 50}
	p := w.plan()
	if len(p.Children) != 0 || len(p.ToolResults) != 1 {
		t.Fatalf("children %v results %v", p.Children, p.ToolResults)
	}
	res := p.ToolResults[0].Results.Results[0]
	if !res.Error || !strings.Contains(res.Content, ergonv1alpha1.ReasonChildRunsExceeded) || !strings.Contains(res.Content, "(50)") {
		t.Fatalf("result %+v", res)
	}
}
