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

package controllers

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

// activeSlots counts what holds the manager-wide step pod budget (--max-step-pods) now, for
// run to plan against. It is counted from the status of the Runs that have not finished,
// which only the manager writes, not from pods: anyone who may create a pod can give it
// Ergon's labels, and a flood of such pods must not stall every Run.
//
// A running pod step holds one slot. A running scene step holds one too, as a pod would, until
// its child Run runs a step of its own, which then holds it: a fan-out of sub-scenes is bounded
// like a fan-out of pods, and nested Runs do not hold a slot per level (a parent waiting on its
// child would otherwise hold the slot the child needs). The slot a parent holds for run itself
// is run's to use, so it is not counted.
func (r *RunReconciler) activeSlots(ctx context.Context, run *ergonv1alpha1.Run) (int, error) {
	runs := &ergonv1alpha1.RunList{}
	// Read only: the cache's objects are counted, not copied.
	if err := r.List(ctx, runs, client.UnsafeDisableDeepCopy); err != nil {
		return 0, err
	}
	type key struct{ namespace, name string }
	byName := make(map[key]*ergonv1alpha1.Run, len(runs.Items))
	for i := range runs.Items {
		byName[key{runs.Items[i].Namespace, runs.Items[i].Name}] = &runs.Items[i]
	}
	n := 0
	for i := range runs.Items {
		parent := &runs.Items[i]
		if parent.Status.Phase.Finished() {
			continue
		}
		for _, s := range parent.Status.Steps {
			if s.Phase != ergonv1alpha1.StepRunning {
				continue
			}
			switch {
			case s.ChildRun == "":
				if s.PodName != "" {
					n++
				}
			case parent.Namespace == run.Namespace && s.ChildRun == run.Name:
				// run's own slot.
			default:
				child := byName[key{parent.Namespace, s.ChildRun}]
				if child == nil || !controlledBy(child, parent.UID) || !runsAStep(child) {
					n++
				}
			}
		}
	}
	return n, nil
}

// runsAStep reports whether a Run has a step running (a pod or a child Run of its own), which
// then holds the slot its parent held for it.
func runsAStep(run *ergonv1alpha1.Run) bool {
	if run.Status.Phase.Finished() {
		return false
	}
	for _, s := range run.Status.Steps {
		if s.Phase == ergonv1alpha1.StepRunning {
			return true
		}
	}
	return false
}
