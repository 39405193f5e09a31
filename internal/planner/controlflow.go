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
	"fmt"
	"strings"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/compile"
	"github.com/ergon-dev/ergon/internal/naming"
	"github.com/ergon-dev/ergon/internal/outputs"
)

// Unit is one run of a fan-out or looping step: a fan-out instance (Index from 0, -1 when the
// step does not fan out) in one loop iteration (Iteration from 1, 0 when it does not loop).
// Each unit runs in its own pod or child Run, named after it (see naming.UnitPodName).
type Unit struct {
	Index, Iteration int32
}

// StoreRequest asks for a value (and an agent step's transcript) to be kept in a ConfigMap
// owned by the Run, under the keys outputs.KeyOutput and outputs.KeyTranscript, before the
// status that relies on it is written.
type StoreRequest struct {
	ConfigMap  string
	StandsFor  string
	Step       string
	Value      string
	Transcript string
}

// StatusUnits counts the running units a Run's status records without its compiled Scene:
// a fan-out's running instances, and each step whose pod or child Run is active. It agrees
// with ActiveUnits, which the running Run's own passes use.
func StatusUnits(status *ergonv1alpha1.RunStatus) int {
	n := 0
	for i := range status.Steps {
		s := &status.Steps[i]
		switch {
		case s.Phase.Finished():
		case s.Instances != nil:
			n += strings.Count(s.Instances.States, string(rune(ergonv1alpha1.InstanceRunning)))
		case s.PodActive() && (s.PodName != "" || s.ChildRun != ""):
			n++
		}
	}
	return n
}

// ActiveUnits is how many pods or child Runs the steps of a Run's status hold against the
// manager's step pod slots.
func ActiveUnits(scene *compile.Scene, status *ergonv1alpha1.RunStatus) int {
	n := 0
	for i := range status.Steps {
		n += activeUnits(scene.Steps[status.Steps[i].Name], &status.Steps[i])
	}
	return n
}

func isControlFlow(step *compile.Step) bool {
	return step != nil && (step.Spec.ForEach != nil || step.Spec.Loop != nil)
}

// activeUnits is how many pods or child Runs a step holds against parallelism and the pod
// budget.
func activeUnits(step *compile.Step, s *ergonv1alpha1.StepStatus) int {
	switch {
	case !isControlFlow(step):
		if usesCapacity(step) && s.PodActive() {
			return 1
		}
		return 0
	case s.Phase.Finished():
		return 0
	case s.Instances != nil:
		return strings.Count(s.Instances.States, string(rune(ergonv1alpha1.InstanceRunning)))
	case s.PodName != "" || s.ChildRun != "":
		return 1
	}
	return 0
}

// units is a view of the units of one step's status, whichever way it records them: a
// fan-out in its compact instances record, a plain loop in the step's own fields.
type units struct {
	s    *ergonv1alpha1.StepStatus
	fan  bool
	loop bool
	// states, attempts and iterations by instance (one entry for a plain loop).
	states     []byte
	attempts   []int32
	iterations []int32
}

func loadUnits(step *compile.Step, s *ergonv1alpha1.StepStatus) *units {
	u := &units{s: s, fan: s.Instances != nil, loop: step.Until != nil}
	if u.fan {
		in := s.Instances
		u.states = []byte(in.States)
		u.attempts = make([]int32, len(u.states))
		copy(u.attempts, in.Attempts)
		u.iterations = make([]int32, len(u.states))
		copy(u.iterations, in.Iterations)
		for i, st := range u.states {
			if u.attempts[i] == 0 && st != ergonv1alpha1.InstanceNotStarted && st != ergonv1alpha1.InstanceSkipped {
				u.attempts[i] = 1 // not recorded: the step does not retry
			}
			if u.iterations[i] == 0 {
				u.iterations[i] = 1
			}
		}
		return u
	}
	st := byte(ergonv1alpha1.InstanceNotStarted)
	if s.PodName != "" || s.ChildRun != "" {
		st = ergonv1alpha1.InstanceRunning
	}
	iteration := int32(1)
	if s.Loop != nil && s.Loop.Iteration > 0 {
		iteration = s.Loop.Iteration
	}
	u.states, u.attempts, u.iterations = []byte{st}, []int32{s.Attempts}, []int32{iteration}
	return u
}

// unit names unit i.
func (u *units) unit(i int) Unit {
	un := Unit{Index: -1}
	if u.fan {
		un.Index = int32(i)
	}
	if u.loop {
		un.Iteration = u.iterations[i]
	}
	return un
}

func (u *units) count(state byte) int32 {
	n := int32(0)
	for _, st := range u.states {
		if st == state {
			n++
		}
	}
	return n
}

// save writes the view back into the step's status.
func (u *units) save(retries bool) {
	if !u.fan {
		if u.loop {
			if u.s.Loop == nil {
				u.s.Loop = &ergonv1alpha1.LoopStatus{}
			}
			u.s.Loop.Iteration = u.iterations[0]
		}
		u.s.Attempts = u.attempts[0]
		return
	}
	in := u.s.Instances
	in.States = string(u.states)
	in.Succeeded, in.Failed, in.Running = u.count(ergonv1alpha1.InstanceSucceeded), u.count(ergonv1alpha1.InstanceFailed),
		u.count(ergonv1alpha1.InstanceRunning)
	in.Attempts, in.Iterations = nil, nil
	if retries {
		in.Attempts = append([]int32(nil), u.attempts...)
	}
	if u.loop {
		in.Iterations = append([]int32(nil), u.iterations...)
	}
}

// valueConfigMap is the ConfigMap that keeps the final output of unit i: its last
// iteration's.
func (u *units) valueConfigMap(run, step string, i int) string {
	un := u.unit(i)
	return naming.UnitOutputConfigMapName(run, step, un.Index, un.Iteration)
}

// NeededConfigMaps are the unit outputs the planner needs read before it plans a Run: the
// outputs of a fan-out's instances once all have succeeded, to join them into the step's
// output, and the previous iteration's output of a loop iteration that has yet to start or
// may retry.
func NeededConfigMaps(run *ergonv1alpha1.Run, scene *compile.Scene) []string {
	var names []string
	for i := range run.Status.Steps {
		s := &run.Status.Steps[i]
		step := scene.Steps[s.Name]
		if !isControlFlow(step) || s.Phase.Finished() {
			continue
		}
		u := loadUnits(step, s)
		allSucceeded := u.fan && u.count(ergonv1alpha1.InstanceSucceeded) == int32(len(u.states))
		for j, st := range u.states {
			if allSucceeded {
				names = append(names, u.valueConfigMap(run.Name, s.Name, j))
				continue
			}
			if u.loop && u.iterations[j] > 1 && (st == ergonv1alpha1.InstanceNotStarted || st == ergonv1alpha1.InstanceRunning) {
				un := u.unit(j)
				names = append(names, naming.UnitOutputConfigMapName(run.Name, s.Name, un.Index, un.Iteration-1))
			}
		}
	}
	return names
}

// Truncate cuts a message to at most n bytes, for compact records.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return outputs.Preview(s[:n-3]) + "..."
}

func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}
