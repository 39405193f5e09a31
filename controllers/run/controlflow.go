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
	"context"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/controllers/internal/shared"
	"github.com/ergon-dev/ergon/internal/compile"
	"github.com/ergon-dev/ergon/internal/naming"
	"github.com/ergon-dev/ergon/internal/outputs"
	"github.com/ergon-dev/ergon/internal/planner"
)

// The Run controller's side of fan-out and loops: the pods of units are told apart by their
// instance and iteration labels, their outputs are kept in ConfigMaps of their own, and the
// outputs the planner needs are read back from those.

// unitOf reads the unit a step pod runs from its labels; false for a plain step's pod.
func unitOf(pod *corev1.Pod) (planner.Unit, bool) {
	index, hasIndex := pod.Labels[ergonv1alpha1.LabelInstance]
	iteration, hasIteration := pod.Labels[ergonv1alpha1.LabelIteration]
	if !hasIndex && !hasIteration {
		return planner.Unit{}, false
	}
	un := planner.Unit{Index: -1}
	if hasIndex {
		i, _ := strconv.Atoi(index)
		un.Index = int32(i)
	}
	if hasIteration {
		i, _ := strconv.Atoi(iteration)
		un.Iteration = int32(i)
	}
	return un, true
}

// labelUnit labels the pod of a unit.
func labelUnit(pod *corev1.Pod, un *planner.Unit) {
	if un == nil {
		return
	}
	if un.Index >= 0 {
		pod.Labels[ergonv1alpha1.LabelInstance] = strconv.Itoa(int(un.Index))
	}
	if un.Iteration > 0 {
		pod.Labels[ergonv1alpha1.LabelIteration] = strconv.Itoa(int(un.Iteration))
	}
}

// addUnitPod files a unit's pod under its step and unit.
func addUnitPod(f *planner.Facts, step string, un planner.Unit, state planner.PodState) {
	if f.UnitPods == nil {
		f.UnitPods = map[string]map[planner.Unit][]planner.PodState{}
	}
	if f.UnitPods[step] == nil {
		f.UnitPods[step] = map[planner.Unit][]planner.PodState{}
	}
	f.UnitPods[step][un] = append(f.UnitPods[step][un], state)
}

// gatherUnits completes what gather found of units: the pod of a running unit that the cache
// does not have is looked up live, and reported Gone when it no longer exists; and the unit
// outputs the planner needs are read from their ConfigMaps.
func (r *RunReconciler) gatherUnits(ctx context.Context, run *ergonv1alpha1.Run, scene *compile.Scene, f *planner.Facts) error {
	for _, s := range run.Status.Steps {
		step := scene.Steps[s.Name]
		if step == nil || step.Spec.Scene != nil || (step.Spec.ForEach == nil && step.Spec.Loop == nil) || s.Phase.Finished() {
			continue
		}
		for _, want := range runningUnitPods(run.Name, &s) {
			if podSeen(f.UnitPods[s.Name][want.unit], want.name) {
				continue
			}
			pod := &corev1.Pod{}
			err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: run.Namespace, Name: want.name}, pod)
			switch {
			case apierrors.IsNotFound(err):
				if state, ok := r.refusedPod(run, want.name, want.attempt); ok {
					addUnitPod(f, s.Name, want.unit, state)
					continue
				}
				addUnitPod(f, s.Name, want.unit, planner.PodState{Name: want.name, Attempt: want.attempt, Phase: planner.PodGone,
					Reason: ergonv1alpha1.ReasonPodDeleted, Message: "the instance's pod was deleted before it finished"})
			case err != nil:
				return err
			case !shared.ControlledBy(pod, run.UID):
				addUnitPod(f, s.Name, want.unit, planner.PodState{Name: want.name, Attempt: want.attempt, Phase: planner.PodGone,
					Reason: ergonv1alpha1.ReasonNameConflict, Message: notOwned("pod", want.name, run).Error()})
			default:
				state := podState(pod)
				addUnitPod(f, s.Name, want.unit, state)
				if state.Phase == planner.PodSucceeded {
					f.Outputs[pod.Name] = r.collect(ctx, run, pod)
				}
			}
		}
	}
	f.Stored, f.Missing = map[string]string{}, map[string]bool{}
	recorded := iterationDigests(run)
	for _, name := range planner.NeededConfigMaps(run, scene) {
		cm := &corev1.ConfigMap{}
		// Under its name or, when someone else's ConfigMap holds it, an alternate (squatters.go).
		err := getOwned(ctx, r.APIReader, run.UID, client.ObjectKey{Namespace: run.Namespace, Name: name}, cm,
			naming.MaxSubdomainLength)
		switch {
		case apierrors.IsNotFound(err):
			f.Missing[name] = true // read live: it was deleted, and the planner fails its step
			continue
		case err != nil:
			return err
		}
		want := shared.RunWants(run, "the output", outputs.KeyOutput)
		if it, ok := recorded[name]; ok {
			want.SHA256, want.Size = it.SHA256, it.Size
		}
		value, err := shared.VerifyInternal(cm, want)
		if err != nil {
			f.Conflicts[name] = err.Error()
			continue
		}
		if _, ok := outputs.ConfigMapValue(cm, outputs.KeyOutput); ok {
			f.Stored[name] = value
		}
	}
	return nil
}

// iterationDigests maps the ConfigMap of each finished loop iteration the status records to
// that record, whose size and digest the ConfigMap must match. A fan-out's instances record
// none (a thousand digests would crowd the Run): theirs are accepted on their controller and
// label, which only the manager can set.
func iterationDigests(run *ergonv1alpha1.Run) map[string]ergonv1alpha1.IterationStatus {
	recorded := map[string]ergonv1alpha1.IterationStatus{}
	for _, s := range run.Status.Steps {
		if s.Loop == nil {
			continue
		}
		for _, it := range s.Loop.Iterations {
			if it.ConfigMap != "" && it.SHA256 != "" {
				recorded[it.ConfigMap] = it
			}
		}
	}
	return recorded
}

type unitPod struct {
	unit    planner.Unit
	name    string
	attempt int32
}

// runningUnitPods are the pods the stored status says units of a step run now.
func runningUnitPods(run string, s *ergonv1alpha1.StepStatus) []unitPod {
	var pods []unitPod
	if in := s.Instances; in != nil {
		for i, st := range in.States {
			if st != ergonv1alpha1.InstanceRunning {
				continue
			}
			un := planner.Unit{Index: int32(i)}
			if i < len(in.Iterations) {
				un.Iteration = in.Iterations[i]
			}
			attempt := int32(1)
			if i < len(in.Attempts) {
				attempt = in.Attempts[i]
			}
			pods = append(pods, unitPod{un, naming.UnitPodName(run, s.Name, un.Index, un.Iteration, attempt), attempt})
		}
		return pods
	}
	if s.PodName != "" && s.Loop != nil {
		pods = append(pods, unitPod{planner.Unit{Index: -1, Iteration: s.Loop.Iteration}, s.PodName, s.Attempts})
	}
	return pods
}

func podSeen(states []planner.PodState, name string) bool {
	for _, p := range states {
		if p.Name == name {
			return true
		}
	}
	return false
}

// storeOutputs writes the ConfigMaps a plan asks for. One that exists already was written by
// an earlier pass whose status write was lost; it must be the Run's and hold the same value.
// One the API server refuses for good (invalid, or forbidden by a quota on ConfigMaps or a
// policy) can never be written: it is remembered, and the plan fails with an error so that its
// status is not written; the next pass fails the step that needs it instead of asking again
// (planner.Facts.Refused).
func (a *runActor) storeOutputs(ctx context.Context, run *ergonv1alpha1.Run, plan *planner.Plan, held *heldNames) error {
	key := client.ObjectKeyFromObject(run).String()
	for _, req := range plan.Store {
		cm := outputConfigMap(run, req.Step, req.Value, req.Transcript)
		cm.Name = req.ConfigMap
		shared.MarkStandsFor(cm, req.StandsFor)
		err := a.createHeld(ctx, "ConfigMap", cm, held)
		if refused(err) {
			// Remembered under the name the planner asks for, which is how it looks it up.
			a.refused.add(key, shared.StandsFor(cm), err, a.Clock.Now(), nil)
			a.Recorder.Eventf(run, nil, corev1.EventTypeWarning, ergonv1alpha1.ReasonOutputError, "CreateConfigMap",
				"Step %s cannot keep its output in ConfigMap %s: %v", req.Step, cm.Name, err)
			return fmt.Errorf("the API server refused ConfigMap %s for the output of step %s: %w", cm.Name, req.Step, err)
		}
		// One the Run controls already is this output, kept by an earlier pass: whoever reads
		// it checks it against the size and digest the status records (outputs.Verify).
		if err != nil {
			return err
		}
	}
	return nil
}
