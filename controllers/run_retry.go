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
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/compile"
	"github.com/ergon-dev/ergon/internal/planner"
)

// retryError is why a Run cannot retry the Run it names; the Run then fails RetryOfInvalid.
type retryError struct{ msg string }

func (e *retryError) Error() string { return e.msg }

// startRetry starts a Run that retries another (spec.retryOf): it executes the original's
// snapshot, and records the original's steps that succeeded, and whose dependencies all are
// reused too, as Succeeded with reason Reused, their outputs copied into ConfigMaps the retry
// owns after their size and SHA-256 were checked against the original's status. The planner
// then runs only the other steps. The original is only read. Every write is under a
// deterministic name and checked when it exists, so a pass cut short is simply done again.
func (r *RunReconciler) startRetry(ctx context.Context, run *ergonv1alpha1.Run) (ctrl.Result, error) {
	original, spec, err := r.retried(ctx, run)
	if rerr, ok := errors.AsType[*retryError](err); ok {
		return r.failUnstarted(ctx, run, ergonv1alpha1.ReasonRetryOfInvalid, rerr.msg)
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	scene, errs := compile.Compile(spec)
	if len(errs) > 0 {
		return r.failUnstarted(ctx, run, ergonv1alpha1.ReasonInvalidScene,
			fmt.Sprintf("the snapshot of Run %s does not compile: %v", original.Name, errs.ToAggregate()))
	}
	if len(original.Status.SceneEditors) == 0 {
		return r.failUnstarted(ctx, run, ergonv1alpha1.ReasonSceneEditorUnknown, fmt.Sprintf("Run %s records no editors "+
			"of the Scenes it ran (it ran before Ergon recorded them), so whose authority its snapshot uses is unknown; "+
			"create a new Run of the Scene instead", original.Name))
	}
	base := run.DeepCopy()
	// The retry runs the original's program, written by the original's editors: its effects
	// are authorized against them and against whoever asked for the retry.
	run.Status.SceneEditors = original.Status.SceneEditors
	snapshot := &ergonv1alpha1.Scene{Spec: *spec}
	snapshot.Generation = original.Status.SceneGeneration
	if err := r.takeSnapshot(ctx, run, snapshot); err != nil {
		if conflict, ok := errors.AsType[*conflictError](err); ok {
			return r.failUnstarted(ctx, run, ergonv1alpha1.ReasonNameConflict, conflict.Error())
		}
		return ctrl.Result{}, err
	}
	steps, err := r.reuse(ctx, run, original, scene)
	if rerr, ok := errors.AsType[*retryError](err); ok {
		return r.failUnstarted(ctx, run, ergonv1alpha1.ReasonRetryOfInvalid, rerr.msg)
	}
	if conflict, ok := errors.AsType[*conflictError](err); ok {
		return r.failUnstarted(ctx, run, ergonv1alpha1.ReasonNameConflict, conflict.Error())
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	run.Status.Steps = steps
	r.Recorder.Eventf(run, nil, corev1.EventTypeNormal, ergonv1alpha1.ReasonReused, "Start",
		"Run %s retries Run %s: %d of %d steps reused", run.Name, original.Name, len(steps), scene.Graph.Len())
	return r.reconcileRunning(ctx, base, run)
}

// retried reads the Run a retry names and its snapshot, checking again what admission
// checked: the original may have changed or gone since.
func (r *RunReconciler) retried(ctx context.Context, run *ergonv1alpha1.Run) (*ergonv1alpha1.Run, *ergonv1alpha1.SceneSpec, error) {
	name := run.Spec.RetryOf.Name
	original := &ergonv1alpha1.Run{}
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: run.Namespace, Name: name}, original)
	if apierrors.IsNotFound(err) {
		return nil, nil, &retryError{fmt.Sprintf("Run %s, which spec.retryOf names, does not exist", name)}
	}
	if err != nil {
		return nil, nil, err
	}
	if _, problem := planner.RetryProblem(run, original); problem != "" {
		return nil, nil, &retryError{problem}
	}
	spec := original.Status.SceneSnapshot
	if spec == nil {
		spec, err = r.readSnapshot(ctx, original)
		if conflict, ok := errors.AsType[*conflictError](err); ok {
			return nil, nil, &retryError{fmt.Sprintf("the snapshot of Run %s cannot be used: %s", name, conflict.Error())}
		}
		if apierrors.IsNotFound(err) {
			return nil, nil, &retryError{fmt.Sprintf("the snapshot of Run %s is gone", name)}
		} else if err != nil {
			return nil, nil, err
		}
	}
	return original, spec, nil
}

// reuse returns the status of the original's steps the retry does not run again, in the
// original's order, with their outputs copied into ConfigMaps the retry owns.
func (r *RunReconciler) reuse(ctx context.Context, run, original *ergonv1alpha1.Run,
	scene *compile.Scene) ([]ergonv1alpha1.StepStatus, error) {
	was := map[string]*ergonv1alpha1.StepStatus{}
	for i := range original.Status.Steps {
		was[original.Status.Steps[i].Name] = &original.Status.Steps[i]
	}
	reused := map[string]bool{}
	for _, name := range scene.Graph.TopologicalOrder() {
		s, ok := was[name]
		if !ok || s.Phase != ergonv1alpha1.StepSucceeded {
			continue
		}
		all := true
		for _, d := range scene.Graph.Dependencies(name) {
			all = all && reused[d]
		}
		reused[name] = all
	}
	var steps []ergonv1alpha1.StepStatus
	for _, s := range original.Status.Steps {
		if !reused[s.Name] {
			continue
		}
		copied := ergonv1alpha1.StepStatus{
			Name: s.Name, Phase: ergonv1alpha1.StepSucceeded, Reason: ergonv1alpha1.ReasonReused,
			Message:  fmt.Sprintf("reused from Run %s", original.Name),
			Decision: s.Decision, StartedAt: s.StartedAt, FinishedAt: s.FinishedAt, Usage: s.Usage,
		}
		if s.Output != nil {
			value, err := r.reusedValue(ctx, original, s.Name, s.Output)
			if err != nil {
				return nil, err
			}
			copied.Output = planner.OutputValue(run.Name, s.Name, value)
			if copied.Output.Ref != nil {
				if err := r.keepOutput(ctx, run, s.Name, value, copied.Output); err != nil {
					return nil, err
				}
				copied.StoredBytes = int64(len(value)) // the retry keeps it: it counts (planner.storedSoFar)
			}
		}
		steps = append(steps, copied)
	}
	return steps, nil
}

// reusedValue reads a step's whole output from the original: inline in its status, or from
// the ConfigMap its status names, which must hold the size and SHA-256 recorded there.
func (r *RunReconciler) reusedValue(ctx context.Context, original *ergonv1alpha1.Run, step string,
	out *ergonv1alpha1.OutputValue) (string, error) {
	if out.Ref == nil {
		return out.Preview, nil
	}
	cm := &corev1.ConfigMap{}
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: original.Namespace, Name: out.Ref.ConfigMap}, cm)
	if apierrors.IsNotFound(err) {
		return "", &retryError{fmt.Sprintf("the output of step %s of Run %s is gone (ConfigMap %s)", step, original.Name, out.Ref.ConfigMap)}
	}
	if err != nil {
		return "", err
	}
	value, err := verifyInternal(cm, internalWant{what: "the output of step " + step, owner: original.UID, ownerKind: kindRun,
		ownerName: original.Name, key: out.Ref.Key, sha256: out.SHA256, size: out.Size})
	if conflict, ok := errors.AsType[*conflictError](err); ok {
		return "", &retryError{conflict.Error() + "; it cannot be reused"}
	}
	return value, err
}

// keepOutput writes a reused output to the retry's own output ConfigMap; one an earlier pass
// wrote must be the retry's and hold the same value.
func (r *RunReconciler) keepOutput(ctx context.Context, run *ergonv1alpha1.Run, step, value string, out *ergonv1alpha1.OutputValue) error {
	cm := outputConfigMap(run, step, value, "")
	err := r.Create(ctx, cm)
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	existing := &corev1.ConfigMap{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(cm), existing); err != nil {
		return err
	}
	_, err = checkOutput(existing, run.UID, run.Name, out)
	return err
}
