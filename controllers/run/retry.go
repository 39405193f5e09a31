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
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/controllers/internal/shared"
	"github.com/ergon-dev/ergon/internal/archive"
	"github.com/ergon-dev/ergon/internal/compile"
	"github.com/ergon-dev/ergon/internal/outputs"
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
	src, err := r.retried(ctx, run)
	if rerr, ok := errors.AsType[*retryError](err); ok {
		return r.failUnstarted(ctx, run, ergonv1alpha1.ReasonRetryOfInvalid, rerr.msg)
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	original, spec := src.run, src.spec
	scene, errs := compile.Compile(spec)
	if len(errs) > 0 {
		return r.failUnstarted(ctx, run, ergonv1alpha1.ReasonInvalidScene,
			fmt.Sprintf("the snapshot of Run %s does not compile: %v", original.Name, errs.ToAggregate()))
	}
	if from := run.Spec.RetryOf.From; from != "" {
		if _, ok := scene.Graph.Index(from); !ok {
			return r.failUnstarted(ctx, run, ergonv1alpha1.ReasonRetryOfInvalid, fmt.Sprintf(
				"spec.retryOf.from: %s is not a step of the snapshot of Run %s; its steps are %s",
				from, original.Name, strings.Join(scene.Graph.Names(), ", ")))
		}
	}
	if errs := compile.CheckParams(spec, run.Spec.Params); len(errs) > 0 {
		return r.failUnstarted(ctx, run, ergonv1alpha1.ReasonInvalidParams, fmt.Sprintf(
			"the params do not fit the snapshot of Run %s: %v", original.Name, errs.ToAggregate()))
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
		if conflict, ok := errors.AsType[*shared.ConflictError](err); ok {
			return r.failUnstarted(ctx, run, ergonv1alpha1.ReasonNameConflict, conflict.Error())
		}
		return ctrl.Result{}, err
	}
	steps, err := r.reuse(ctx, run, src, scene)
	if rerr, ok := errors.AsType[*retryError](err); ok {
		return r.failUnstarted(ctx, run, ergonv1alpha1.ReasonRetryOfInvalid, rerr.msg)
	}
	if conflict, ok := errors.AsType[*shared.ConflictError](err); ok {
		return r.failUnstarted(ctx, run, ergonv1alpha1.ReasonNameConflict, conflict.Error())
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	run.Status.Steps = steps
	verb := "retries"
	if run.Spec.RetryOf.Rerun() {
		verb = "reruns"
	}
	if src.values != nil {
		verb += " the archived"
	}
	r.Recorder.Eventf(run, nil, corev1.EventTypeNormal, ergonv1alpha1.ReasonReused, "Start",
		"Run %s %s Run %s: %d of %d steps reused", run.Name, verb, original.Name, len(steps), scene.Graph.Len())
	return r.reconcileRunning(ctx, base, run)
}

// retrySource is the Run a retry starts from: a live Run, or the record of an archived one.
type retrySource struct {
	run  *ergonv1alpha1.Run
	spec *ergonv1alpha1.SceneSpec
	// values are an archived Run's whole values by archive.ValueKey; nil for a live Run,
	// whose values are in the ConfigMaps its status names.
	values map[string]string
}

// retried reads the Run a retry names and its snapshot, checking again what admission
// checked: the original may have changed or gone since. A Run that is gone is looked for in
// the archive, among the records of this namespace (by its UID: a namespace of the same name
// created again sees none of the old one's).
func (r *RunReconciler) retried(ctx context.Context, run *ergonv1alpha1.Run) (*retrySource, error) {
	name := run.Spec.RetryOf.Name
	src := &retrySource{run: &ergonv1alpha1.Run{}}
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: run.Namespace, Name: name}, src.run)
	if apierrors.IsNotFound(err) {
		return r.archivedSource(ctx, run)
	}
	if err != nil {
		return nil, err
	}
	if _, problem := planner.RetryProblem(run, src.run); problem != "" {
		return nil, &retryError{problem}
	}
	src.spec = src.run.Status.SceneSnapshot
	if src.spec == nil {
		src.spec, err = r.values().ReadSnapshot(ctx, src.run)
		if conflict, ok := errors.AsType[*shared.ConflictError](err); ok {
			return nil, &retryError{fmt.Sprintf("the snapshot of Run %s cannot be used: %s", name, conflict.Error())}
		}
		if apierrors.IsNotFound(err) {
			return nil, &retryError{fmt.Sprintf("the snapshot of Run %s is gone", name)}
		} else if err != nil {
			return nil, err
		}
	}
	return src, nil
}

// archivedSource reads the newest archived Run of the name a retry names.
func (r *RunReconciler) archivedSource(ctx context.Context, run *ergonv1alpha1.Run) (*retrySource, error) {
	name := run.Spec.RetryOf.Name
	if r.Archive == nil {
		return nil, &retryError{fmt.Sprintf("Run %s, which spec.retryOf names, does not exist (and this manager keeps no archive)", name)}
	}
	rec, err := archive.FindIn(ctx, r.APIReader, r.Archive, run.Namespace, name)
	if errors.Is(err, archive.ErrNotFound) {
		return nil, &retryError{fmt.Sprintf("Run %s, which spec.retryOf names, does not exist, live or archived", name)}
	}
	if err != nil {
		return nil, fmt.Errorf("reading Run %s from the archive: %w", name, err)
	}
	original := rec.Original()
	if _, problem := planner.RetryProblem(run, original); problem != "" {
		return nil, &retryError{problem}
	}
	if rec.Snapshot == nil {
		return nil, &retryError{fmt.Sprintf("the archived Run %s has no snapshot (%s)", name, strings.Join(rec.Missing, "; "))}
	}
	values := rec.Values
	if values == nil {
		values = map[string]string{}
	}
	return &retrySource{run: original, spec: rec.Snapshot, values: values}, nil
}

// reuse returns the status of the original's steps the retry does not run again, in the
// original's order, with their outputs copied into ConfigMaps the retry owns.
func (r *RunReconciler) reuse(ctx context.Context, run *ergonv1alpha1.Run, src *retrySource,
	scene *compile.Scene) ([]ergonv1alpha1.StepStatus, error) {
	original := src.run
	was := map[string]*ergonv1alpha1.StepStatus{}
	for i := range original.Status.Steps {
		was[original.Status.Steps[i].Name] = &original.Status.Steps[i]
	}
	reused := planner.Reused(scene.Graph, func(step string) bool {
		s, ok := was[step]
		return ok && s.Phase == ergonv1alpha1.StepSucceeded
	}, run.Spec.RetryOf)
	var steps []ergonv1alpha1.StepStatus
	var err error
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
			value, err := r.reusedValue(ctx, src, s.Name, s.Output)
			if err != nil {
				return nil, err
			}
			copied.Output = outputs.Value(run.Name, s.Name, value)
			if copied.Output.Ref != nil {
				if err := r.keepOutput(ctx, run, s.Name, value, copied.Output); err != nil {
					return nil, err
				}
				copied.StoredBytes = int64(len(value)) // the retry keeps it: it counts (planner.storedSoFar)
			}
		}
		if copied.Artifacts, err = r.reuseArtifacts(ctx, run, original.Name, s); err != nil {
			return nil, err
		}
		steps = append(steps, copied)
	}
	return steps, nil
}

// reusedValue reads a step's whole output from the original: inline in its status, or from
// the ConfigMap its status names (the archive's copy, for an archived Run), which must hold
// the size and SHA-256 recorded there.
func (r *RunReconciler) reusedValue(ctx context.Context, src *retrySource, step string,
	out *ergonv1alpha1.OutputValue) (string, error) {
	original := src.run
	if out.Ref == nil {
		return out.Preview, nil
	}
	if src.values != nil {
		value, ok := src.values[archive.ValueKey(step, "")]
		switch {
		case !ok:
			return "", &retryError{fmt.Sprintf("the archive holds no output of step %s of Run %s; it cannot be reused", step, original.Name)}
		case outputs.Verify([]byte(value), out) != nil:
			return "", &retryError{fmt.Sprintf("the archived output of step %s of Run %s does not have the size and SHA-256 "+
				"its status records; it cannot be reused", step, original.Name)}
		}
		return value, nil
	}
	cm := &corev1.ConfigMap{}
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: original.Namespace, Name: out.Ref.ConfigMap}, cm)
	if apierrors.IsNotFound(err) {
		return "", &retryError{fmt.Sprintf("the output of step %s of Run %s is gone (ConfigMap %s)", step, original.Name, out.Ref.ConfigMap)}
	}
	if err != nil {
		return "", err
	}
	value, err := shared.VerifyInternal(cm, shared.Want{What: "the output of step " + step, Owner: original.UID, OwnerKind: shared.KindRun,
		OwnerName: original.Name, Key: out.Ref.Key, SHA256: out.SHA256, Size: out.Size})
	if conflict, ok := errors.AsType[*shared.ConflictError](err); ok {
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
	_, err = shared.CheckOutput(existing, run.UID, run.Name, out)
	return err
}
