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
	"time"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

func TestEndedPods(t *testing.T) {
	running := func(names ...string) []PodState {
		var out []PodState
		for _, n := range names {
			out = append(out, PodState{Name: n, UID: "uid-" + n, Attempt: 1, Phase: PodRunning})
		}
		return out
	}
	retried := ergonv1alpha1.StepStatus{Name: "a", Phase: ergonv1alpha1.StepRunning, PodName: "a-2", Attempts: 2,
		History: []ergonv1alpha1.AttemptStatus{{Attempt: 1, PodName: "a-1", Phase: ergonv1alpha1.StepFailed}}}
	done := ergonv1alpha1.StepStatus{Name: "b", Phase: ergonv1alpha1.StepSucceeded, PodName: "b-1", Attempts: 1}
	failed := ergonv1alpha1.StepStatus{Name: "c", Phase: ergonv1alpha1.StepFailed, PodName: "c-1", Attempts: 1}
	fanOut := ergonv1alpha1.StepStatus{Name: "f", Phase: ergonv1alpha1.StepRunning,
		Instances: &ergonv1alpha1.InstancesStatus{Total: 4, States: "SRRP", Attempts: []int32{1, 2, 1, 0}}}
	loop := ergonv1alpha1.StepStatus{Name: "l", Phase: ergonv1alpha1.StepRunning, Attempts: 1,
		Loop: &ergonv1alpha1.LoopStatus{Iteration: 3}}
	pods := map[string][]PodState{
		"a": running("a-1", "a-2"), "b": running("b-1"), "c": running("c-1"),
		"d": append(running("d-1"), PodState{Name: "d-0", Phase: PodGone}),
		"e": {{Name: "e-1", UID: "uid-e-1", Attempt: 1, Phase: PodSucceeded, TerminatingUntil: time.Unix(100, 0)}},
	}
	unitPods := map[string]map[Unit][]PodState{
		"f": {
			{Index: 0}: running("f-0"),
			{Index: 1}: {{Name: "f-1-a1", Attempt: 1, Phase: PodFailed}, {Name: "f-1-a2", Attempt: 2, Phase: PodRunning}},
			{Index: 2}: running("f-2"),
			{Index: 3}: {{Name: "f-3", Attempt: 1, Phase: PodSucceeded, TerminatingUntil: time.Unix(100, 0)}},
		},
		"l": {{Index: -1, Iteration: 2}: running("l-2"), {Index: -1, Iteration: 3}: running("l-3")},
	}
	deleting := ergonv1alpha1.StepStatus{Name: "e", Phase: ergonv1alpha1.StepSucceeded, PodName: "e-1", Attempts: 1}
	steps := []ergonv1alpha1.StepStatus{retried, done, failed, fanOut, loop, deleting}
	for _, tc := range []struct {
		name       string
		phase      ergonv1alpha1.RunPhase
		keepFailed bool
		want       string
	}{
		{name: "while it runs, only pods whose attempt, instance or iteration ended go, and not twice",
			phase: ergonv1alpha1.RunRunning, want: "a-1,b-1,c-1,f-0,f-1-a1,l-2"},
		{name: "keeping failed pods keeps the failed attempts",
			phase: ergonv1alpha1.RunRunning, keepFailed: true, want: "b-1,f-0,f-1-a1,l-2"},
		{name: "once the Run finished, every pod goes, gone and going ones aside",
			phase: ergonv1alpha1.RunFailed, want: "a-1,a-2,b-1,c-1,d-1,f-0,f-1-a1,f-1-a2,f-2,l-2,l-3"},
		{name: "once finished, failed attempts still stay when kept",
			phase: ergonv1alpha1.RunFailed, keepFailed: true, want: "a-2,b-1,d-1,f-0,f-1-a1,f-1-a2,f-2,l-2,l-3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status := &ergonv1alpha1.RunStatus{Phase: tc.phase, Steps: slices.Clone(steps)}
			got := strings.Join(EndedPods(status, pods, unitPods, tc.keepFailed), ",")
			if got != tc.want {
				t.Errorf("ended pods %s, want %s", got, tc.want)
			}
		})
	}
}

func TestDecideStoresLargeOutputsOnce(t *testing.T) {
	spec := ergonv1alpha1.SceneSpec{Steps: []ergonv1alpha1.Step{step("big"), step("small")}}
	w := newWorld(t, spec, succeed)
	large := strings.Repeat("x", 64<<10)
	w.plan() // both pods start
	for name, out := range map[string]string{"big": large, "small": "ok"} {
		pod := w.pods[name][0]
		pod.Phase = PodSucceeded
		w.pods[name] = []PodState{pod}
		w.outputs[pod.Name] = Output{Value: out, Stored: len(out) > 1024}
	}
	p := w.plan()
	if len(p.Store) != 1 || p.Store[0].Step != "big" || p.Store[0].Value != large ||
		p.Store[0].ConfigMap != w.run.Status.Steps[0].Output.Ref.ConfigMap {
		t.Fatalf("stores %+v, want the large output of big under the name its status gives", summarize(p.Store))
	}
	if again := w.plan(); len(again.Store) != 0 {
		t.Errorf("a step whose end the status records is stored again: %+v", summarize(again.Store))
	}
}

func summarize(stores []StoreRequest) []string {
	var out []string
	for _, s := range stores {
		out = append(out, s.ConfigMap+"/"+s.Step)
	}
	return out
}
