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
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/compile"
	"github.com/ergon-dev/ergon/internal/planner"
	"github.com/ergon-dev/ergon/internal/stepcontract"
	"github.com/ergon-dev/ergon/internal/tracing"
)

// The units a write traces are those whose end it records: an instance that ended, an
// attempt a retry moved past, a loop's iteration that the next one replaced; never one an
// earlier write recorded.
func TestTheUnitsAWriteEndsAreTracedOnce(t *testing.T) {
	instances := func(states string, attempts ...int32) ergonv1alpha1.RunStatus {
		return ergonv1alpha1.RunStatus{Steps: []ergonv1alpha1.StepStatus{{Name: "each", Phase: ergonv1alpha1.StepRunning,
			Instances: &ergonv1alpha1.InstancesStatus{Total: int32(len(states)), States: states, Attempts: attempts}}}}
	}
	loop := func(iteration int32) ergonv1alpha1.RunStatus {
		return ergonv1alpha1.RunStatus{Steps: []ergonv1alpha1.StepStatus{{Name: "each", Phase: ergonv1alpha1.StepRunning,
			Loop: &ergonv1alpha1.LoopStatus{Iteration: iteration}}}}
	}
	pod := func(name string, attempt int32) planner.PodState {
		return planner.PodState{Name: name, Attempt: attempt, Phase: planner.PodSucceeded}
	}
	pods := map[string]map[planner.Unit][]planner.PodState{"each": {
		{Index: 0}: {pod("i0-a1", 1), pod("i0-a2", 2)},
		{Index: 1}: {pod("i1-a1", 1)},
		{Index: 2}: {pod("i2-a1", 1)},
	}}
	loopPods := map[string]map[planner.Unit][]planner.PodState{"each": {
		{Iteration: 3}: {pod("it3", 1)}, {Iteration: 4}: {pod("it4", 1)},
	}}
	cases := []struct {
		name          string
		before, after ergonv1alpha1.RunStatus
		pods          map[string]map[planner.Unit][]planner.PodState
		want          []string
	}{
		{"nothing moved", instances("RRR", 2, 1, 1), instances("RRR", 2, 1, 1), pods, nil},
		{"two instances ended", instances("RRR", 2, 1, 1), instances("RSF", 2, 1, 1), pods, []string{"i1-a1", "i2-a1"}},
		{"a retry moved past an attempt", instances("RRR", 1, 1, 1), instances("RRR", 2, 1, 1), pods, []string{"i0-a1"}},
		{"the step ended: every unit pod not recorded before", instances("RSR", 2, 1, 1),
			func() ergonv1alpha1.RunStatus {
				s := instances("SSS", 2, 1, 1)
				s.Steps[0].Phase = ergonv1alpha1.StepSucceeded
				return s
			}(), pods, []string{"i0-a2", "i2-a1"}},
		{"a loop's next iteration", loop(4), loop(5), loopPods, []string{"it4"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			for _, u := range endedUnits(&c.before, &c.after, c.pods)["each"] {
				got = append(got, u.Name)
			}
			slices.Sort(got)
			if !slices.Equal(got, c.want) {
				t.Errorf("traced %v, want %v", got, c.want)
			}
		})
	}
}

func TestAUnitPodCarriesItsOwnSpan(t *testing.T) {
	run := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "ns", UID: "u"}}
	req := planner.PodRequest{Name: "r-each-3-2", Attempt: 2, Unit: &planner.Unit{Index: 3},
		Rendered: &compile.Rendered{Command: []string{"make"}},
		Step: &compile.Step{Name: "each", Spec: &ergonv1alpha1.Step{Name: "each",
			Container: &ergonv1alpha1.ContainerStep{Image: "busybox", Command: []string{"make"}}}}}
	env := stepPod(run, &compile.Scene{}, req, podParts{bins: ergonBinaries{Image: "ergon/manager:v1", Mode: BinariesImageVolume},
		traced: true}).Spec.Containers[0].Env
	want := tracing.Traceparent(tracing.UnitAttemptContext(run, "each", 3, 0, 2))
	if len(env) == 0 || env[0].Name != stepcontract.EnvTraceparent || env[0].Value != want {
		t.Errorf("env %v, want TRACEPARENT=%s first", env, want)
	}
}
