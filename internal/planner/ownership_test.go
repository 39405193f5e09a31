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
	"slices"
	"strings"
	"testing"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/naming"
	"github.com/ergon-dev/ergon/internal/outputs"
)

func sceneStep(name string) ergonv1alpha1.Step {
	return ergonv1alpha1.Step{Name: name, Scene: &ergonv1alpha1.SceneCall{Name: "sub"}}
}

func gateStep(name string, deps ...string) ergonv1alpha1.Step {
	return ergonv1alpha1.Step{Name: name, DependsOn: deps, Gate: &ergonv1alpha1.GateStep{Options: []string{"approve", "reject"}}}
}

// TestObjectsOfOthersAreNeverUsed: an object under a name the Run uses that is not the Run's
// (the controller reports it as a conflict) fails the step that needs it, naming the object.
func TestObjectsOfOthersAreNeverUsed(t *testing.T) {
	const msg = "X exists but Run r did not create it"
	cases := []struct {
		name  string
		steps []ergonv1alpha1.Step
		// setup makes the facts after a first plan started the step.
		setup func(w *world, f *Facts)
		step  string
		// want is the step's phase afterwards.
		want ergonv1alpha1.StepPhase
	}{
		{
			name: "a child Run someone else created under the child's name fails the scene step", steps: []ergonv1alpha1.Step{sceneStep("call")},
			setup: func(w *world, f *Facts) {
				f.Conflicts[w.status("call").ChildRun] = msg
			},
			step: "call", want: ergonv1alpha1.StepFailed,
		},
		{
			name: "a Gate someone else created under the Gate's name fails the gate step", steps: []ergonv1alpha1.Step{gateStep("ask")},
			setup: func(w *world, f *Facts) {
				f.Conflicts[w.status("ask").Gate] = msg
				f.Gates[w.status("ask").Gate] = GateState{Decided: true, Option: "approve"} // never read
			},
			step: "ask", want: ergonv1alpha1.StepFailed,
		},
		{
			name: "a pod someone else created under the attempt's name fails the attempt", steps: []ergonv1alpha1.Step{step("a")},
			setup: func(w *world, f *Facts) {
				f.Pods["a"] = []PodState{{Name: w.status("a").PodName, Attempt: 1, Phase: PodGone,
					Reason: ergonv1alpha1.ReasonNameConflict, Message: msg}}
			},
			step: "a", want: ergonv1alpha1.StepFailed,
		},
		{
			name: "an output ConfigMap of someone else's fails the attempt that would write it", steps: []ergonv1alpha1.Step{step("a")},
			setup: func(w *world, f *Facts) {
				name := w.status("a").PodName
				f.Pods["a"] = []PodState{{Name: name, Attempt: 1, Phase: PodSucceeded}}
				f.Outputs[name] = Output{Err: msg, Reason: ergonv1alpha1.ReasonNameConflict}
			},
			step: "a", want: ergonv1alpha1.StepFailed,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, ergonv1alpha1.SceneSpec{Steps: tc.steps}, func(string, int32) PodPhase { return "" })
			w.plan()
			f := &Facts{Now: w.now, Run: w.run, Scene: w.scene, Pods: map[string][]PodState{}, Outputs: map[string]Output{},
				Children: map[string]ChildState{}, Gates: map[string]GateState{}, Conflicts: map[string]string{},
				PodBudget: -1, MaxDepth: 5}
			tc.setup(w, f)
			p := Decide(f)
			w.run.Status = p.Status
			s := w.status(tc.step)
			if s.Phase != tc.want || s.Reason != ergonv1alpha1.ReasonNameConflict || !strings.Contains(s.Message, msg) {
				t.Fatalf("step %s is %s (%s: %s), want %s for NameConflict naming the object", tc.step, s.Phase, s.Reason, s.Message, tc.want)
			}
			if len(p.Pods)+len(p.Children)+len(p.Gates) != 0 {
				t.Errorf("the plan creates objects again: %+v %+v %+v", p.Pods, p.Children, p.Gates)
			}
			if p.RequeueAfter != 0 {
				t.Errorf("the plan comes back in %s; a conflict must not loop", p.RequeueAfter)
			}
		})
	}
}

func TestAnInputWhoseConfigMapIsNotTheRunsFailsTheStepThatNeedsIt(t *testing.T) {
	w := newWorld(t, ergonv1alpha1.SceneSpec{Steps: []ergonv1alpha1.Step{step("a"), step("b", "a")}}, succeed)
	out := outputs.Value("r", "a", strings.Repeat("x", outputs.PreviewSize+1))
	w.run.Status.Steps = []ergonv1alpha1.StepStatus{{Name: "a", Phase: ergonv1alpha1.StepSucceeded, Attempts: 1,
		PodName: naming.StepPodName("r", "a", 1), Output: out}}
	f := &Facts{Now: w.now, Run: w.run, Scene: w.scene, Pods: map[string][]PodState{}, Outputs: map[string]Output{},
		Children: map[string]ChildState{}, Gates: map[string]GateState{},
		Conflicts: map[string]string{out.Ref.ConfigMap: "ConfigMap does not hold the output Run r recorded"}, PodBudget: -1, MaxDepth: 5}
	p := Decide(f)
	w.run.Status = p.Status
	if s := w.status("b"); s.Phase != ergonv1alpha1.StepFailed || s.Reason != ergonv1alpha1.ReasonNameConflict ||
		!strings.Contains(s.Message, "does not hold the output") {
		t.Fatalf("b is %s (%s: %s), want Failed for NameConflict", s.Phase, s.Reason, s.Message)
	}
	if len(p.Pods) != 0 {
		t.Fatalf("b started with an input that is not the Run's: %+v", p.Pods)
	}
}

// TestSceneStepsCountAgainstParallelismAndTheBudget: a fan-out of sub-scenes is bounded as a
// fan-out of pods is.
func TestSceneStepsCountAgainstParallelismAndTheBudget(t *testing.T) {
	fanOut := []ergonv1alpha1.Step{sceneStep("s1"), sceneStep("s2"), sceneStep("s3"), step("p1"), step("p2")}
	cases := []struct {
		name        string
		parallelism *int32
		budget      int
		running     []string // scene steps already running
		want        int      // pods and child Runs the plan starts
	}{
		{"no limits start everything", nil, -1, nil, 5},
		{"parallelism 2 starts two, scene steps included", new(int32(2)), -1, nil, 2},
		{"running scene steps take parallelism", new(int32(2)), -1, []string{"s1", "s2"}, 0},
		{"a budget of 3 starts three, scene steps included", nil, 3, nil, 3},
		{"a budget of 0 starts no child Run", nil, 0, nil, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, ergonv1alpha1.SceneSpec{Steps: fanOut, Parallelism: tc.parallelism}, succeed)
			children := map[string]ChildState{}
			for _, name := range tc.running {
				child := naming.ChildRunName("r", "sub", map[string]string{})
				w.run.Status.Steps = append(w.run.Status.Steps, ergonv1alpha1.StepStatus{Name: name,
					Phase: ergonv1alpha1.StepRunning, ChildRun: child, Attempts: 1})
				children[child] = ChildState{Phase: ergonv1alpha1.RunRunning}
			}
			f := &Facts{Now: w.now, Run: w.run, Scene: w.scene, Pods: map[string][]PodState{}, Outputs: map[string]Output{},
				Children: children, Gates: map[string]GateState{}, PodBudget: tc.budget, MaxDepth: 5}
			p := Decide(f)
			if got := len(p.Pods) + countStarted(p, tc.running); got != tc.want {
				t.Fatalf("started %d pods and child Runs (%d pods, %+v), want %d", got, len(p.Pods), p.Status.Steps, tc.want)
			}
		})
	}
}

// countStarted counts the scene steps a plan started (every scene step calls the same Scene
// with the same params, so they share one child Run: count steps, not child requests).
func countStarted(p *Plan, already []string) int {
	n := 0
	for _, s := range p.Status.Steps {
		if strings.HasPrefix(s.Name, "s") && s.ChildRun != "" && !slices.Contains(already, s.Name) {
			n++
		}
	}
	return n
}
