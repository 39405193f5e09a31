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

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/naming"
)

// EndedPods lists, sorted, the pods of a Run that may go: those whose attempt the stored
// status records as ended, so their outputs are safe, and every pod once the Run has
// finished. With keepFailed, the pods of failed attempts stay for debugging. pods and
// unitPods are the Run's pods that exist, as in Facts; gone pods, and pods already being
// deleted, are ignored: the kubelet may take a relist or two to stop a pod that succeeded, and
// asking again would only cost the API server a write each pass meanwhile.
func EndedPods(status *ergonv1alpha1.RunStatus, pods map[string][]PodState,
	unitPods map[string]map[Unit][]PodState, keepFailed bool) []string {
	ended := map[string]ergonv1alpha1.StepPhase{}
	byName := map[string]*ergonv1alpha1.StepStatus{}
	for i := range status.Steps {
		s := &status.Steps[i]
		byName[s.Name] = s
		for _, h := range s.History {
			ended[h.PodName] = h.Phase
		}
		if s.Phase.Finished() && s.PodName != "" {
			ended[s.PodName] = s.Phase
		}
	}
	done := status.Phase.Finished()
	var out []string
	keep := func(name string, phase ergonv1alpha1.StepPhase, known bool) {
		if (!known && !done) || (keepFailed && phase == ergonv1alpha1.StepFailed) {
			return
		}
		out = append(out, name)
	}
	for _, states := range pods {
		for _, p := range states {
			if p.Phase != PodGone && p.TerminatingUntil.IsZero() {
				phase, ok := ended[p.Name]
				keep(p.Name, phase, ok)
			}
		}
	}
	for step, byUnit := range unitPods {
		s := byName[step]
		for un, states := range byUnit {
			for _, p := range states {
				if p.Phase == PodGone || !p.TerminatingUntil.IsZero() {
					continue
				}
				phase, ok := ended[p.Name]
				if !ok && s != nil && UnitPodEnded(s, un, p) {
					phase, ok = ergonv1alpha1.StepSucceeded, true
				}
				keep(p.Name, phase, ok)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// UnitPodEnded reports whether the status records that a unit's pod has done its work: its
// step ended, or its unit has moved past it (ended, a later attempt or a later iteration).
func UnitPodEnded(s *ergonv1alpha1.StepStatus, un Unit, p PodState) bool {
	if s.Phase.Finished() {
		return true
	}
	if in := s.Instances; in != nil {
		i := int(un.Index)
		if i < 0 || i >= len(in.States) {
			return false
		}
		if st := in.States[i]; st != ergonv1alpha1.InstanceRunning && st != ergonv1alpha1.InstanceNotStarted {
			return true
		}
		if i < len(in.Iterations) && in.Iterations[i] > un.Iteration {
			return true
		}
		return i < len(in.Attempts) && in.Attempts[i] > p.Attempt
	}
	if s.Loop != nil && s.Loop.Iteration > un.Iteration {
		return true
	}
	return s.Loop != nil && s.Loop.Iteration == un.Iteration && s.Attempts > p.Attempt
}

// decideStores asks for the outputs and transcripts of the steps this plan ends that are too
// large for the status to be kept in the step's output ConfigMap, before the status names
// them. Steps the stored status already records as ended were stored before.
func (p *planner) decideStores(status *ergonv1alpha1.RunStatus) {
	stored := map[string]bool{}
	for _, s := range p.f.Run.Status.Steps {
		stored[s.Name] = s.Phase.Finished()
	}
	for _, s := range status.Steps {
		succeeded := s.Phase == ergonv1alpha1.StepSucceeded && s.Output != nil && (s.Output.Ref != nil || s.Transcript != nil)
		// A failed agent step keeps its last attempt's transcript (keepFailedTranscript).
		failed := s.Phase == ergonv1alpha1.StepFailed && s.Transcript != nil
		if stored[s.Name] || !succeeded && !failed {
			continue
		}
		out, ok := p.f.Outputs[s.PodName]
		if !ok {
			continue // a child Run's output, kept by the child
		}
		transcript := out.Transcript
		if s.Transcript == nil {
			transcript = "" // not kept: it did not fit (keepStepOutput)
		}
		p.plan.Store = append(p.plan.Store, StoreRequest{
			ConfigMap: naming.OutputConfigMapName(p.f.Run.Name, s.Name), Step: s.Name,
			Value: out.Value, Transcript: transcript,
		})
	}
}
