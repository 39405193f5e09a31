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

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/controllers/internal/shared"
	"github.com/ergon-dev/ergon/internal/naming"
	"github.com/ergon-dev/ergon/internal/planner"
)

// Names are deterministic, so anyone who may create objects in a Run's namespace can create
// one under the name the Run is about to use. The Run controller therefore never adopts an
// object by its name: it uses one only when the Run (or, for a child's output, the child) is
// its controlling owner, and an output only when it holds what the status recorded. An object
// that fails the check is a conflict: the step that needs it fails, naming it.

// gatherConflicts looks up the child Runs and Gates the status names that the Run does not
// own, and records each one that exists as a conflict. Only names missing from what gather
// found are read, so this costs a request only while an object is new or when it conflicts.
func (r *RunReconciler) gatherConflicts(ctx context.Context, run *ergonv1alpha1.Run, f *planner.Facts) error {
	for _, s := range run.Status.Steps {
		if s.Phase.Finished() {
			continue
		}
		if name := s.ChildRun; name != "" {
			if _, ok := f.Children[name]; !ok {
				if err := r.conflictOf(ctx, run, shared.KindRun, &ergonv1alpha1.Run{}, name, f); err != nil {
					return err
				}
			}
		}
		if name := s.Gate; name != "" {
			if _, ok := f.Gates[name]; !ok {
				if err := r.conflictOf(ctx, run, "Gate", &ergonv1alpha1.Gate{}, name, f); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// conflictOf records obj as a conflict when it exists under name and the Run does not own it.
func (r *RunReconciler) conflictOf(ctx context.Context, run *ergonv1alpha1.Run, kind string, obj client.Object,
	name string, f *planner.Facts) error {
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: run.Namespace, Name: name}, obj)
	if apierrors.IsNotFound(err) {
		return nil // not created yet, or deleted: the planner waits or creates it
	}
	if err != nil {
		return err
	}
	if !shared.ControlledBy(obj, run.UID) {
		f.Conflicts[name] = notOwned(kind, name, run).Error()
	} else if g, ok := obj.(*ergonv1alpha1.Gate); ok && !gateMatches(g, run) {
		f.Conflicts[name] = gateMismatch(g, run).Error()
	}
	return nil
}

// gateMatches reports whether a Gate names the Run and a step whose Gate it is.
func gateMatches(g *ergonv1alpha1.Gate, run *ergonv1alpha1.Run) bool {
	if g.Spec.RunRef.Name != run.Name || g.Spec.Step == "" {
		return false
	}
	if call := g.Annotations[annotationToolCall]; call != "" {
		return naming.ToolCallName(run.Name, g.Spec.Step, call) == g.Name
	}
	// Or an alternate, when someone else's Gate held the name (squatters.go).
	return naming.GateName(run.Name, g.Spec.Step) == shared.StandsFor(g)
}

func gateMismatch(g *ergonv1alpha1.Gate, run *ergonv1alpha1.Run) *shared.ConflictError {
	return &shared.ConflictError{Message: fmt.Sprintf("Gate %s names Run %q step %q, not a step of Run %s; Ergon does not use it",
		g.Name, g.Spec.RunRef.Name, g.Spec.Step, run.Name)}
}

// notOwned is the conflict of an object whose controller is not the Run that needs it.
func notOwned(kind, name string, owner *ergonv1alpha1.Run) *shared.ConflictError {
	return &shared.ConflictError{Message: fmt.Sprintf("%s %s exists but Run %s did not create it (it is not its controlling owner); "+
		"Ergon does not adopt objects by name: delete or rename it", kind, name, owner.Name)}
}
