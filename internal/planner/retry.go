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
	"maps"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/dag"
)

// RetryProblem says why run cannot retry original (spec.retryOf), and the field of run at
// fault; "" when it can: the same Scene, and an original that started and ended. A retry also
// needs the same params and an original that Failed or was Cancelled; a rerun (from a step,
// or a replay) takes any ended original and its own params. Admission and the Run controller
// ask the same.
func RetryProblem(run, original *ergonv1alpha1.Run) (field, problem string) {
	retryOf := "spec.retryOf.name"
	switch {
	case original.Spec.SceneRef.Name != run.Spec.SceneRef.Name:
		return "spec.sceneRef.name", fmt.Sprintf("Run %s ran Scene %s, not %s; a retry runs the same Scene: set spec.sceneRef.name to %s",
			original.Name, original.Spec.SceneRef.Name, run.Spec.SceneRef.Name, original.Spec.SceneRef.Name)
	case !original.Status.Phase.Finished():
		phase := original.Status.Phase
		if phase == "" {
			phase = ergonv1alpha1.RunPending
		}
		return retryOf, fmt.Sprintf("Run %s has not finished (it is %s); wait for it to end, or cancel it, then retry it",
			original.Name, phase)
	case original.Status.Phase == ergonv1alpha1.RunSucceeded && !run.Spec.RetryOf.Rerun():
		return retryOf, fmt.Sprintf("Run %s succeeded: there is nothing to retry; create a new Run to run the Scene again, or rerun it (spec.retryOf.from or replay)", original.Name)
	case original.Status.SceneSnapshot == nil && original.Status.SceneSnapshotRef == nil:
		return retryOf, fmt.Sprintf("Run %s never started (it has no snapshot); create a new Run instead", original.Name)
	case !maps.Equal(original.Spec.Params, run.Spec.Params) && !run.Spec.RetryOf.Rerun():
		return "spec.params", fmt.Sprintf("a retry runs with the params of Run %s; copy spec.params from it exactly (kubectl ergon retry does)",
			original.Name)
	}
	return "", ""
}

// Reused returns the steps a retry or rerun (ref) takes from the original instead of running:
// those that succeeded there and all of whose dependencies are reused too, except, for a
// rerun from a step, that step and its descendants, and, for a replay, every step.
func Reused(g *dag.Graph, succeeded func(step string) bool, ref *ergonv1alpha1.RetryReference) map[string]bool {
	reused := map[string]bool{}
	if ref.Replay {
		return reused
	}
	again := map[string]bool{}
	if ref.From != "" {
		again[ref.From] = true
		for _, d := range g.Descendants(ref.From) {
			again[d] = true
		}
	}
	for _, name := range g.TopologicalOrder() {
		if again[name] || !succeeded(name) {
			continue
		}
		all := true
		for _, d := range g.Dependencies(name) {
			all = all && reused[d]
		}
		if all {
			reused[name] = true
		}
	}
	return reused
}
