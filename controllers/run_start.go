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
	"encoding/json"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/compile"
	"github.com/ergon-dev/ergon/internal/naming"
)

// sceneNotFoundRetry is how often a Run looks again for a Scene that does not exist yet
// (GitOps may apply the Run before its Scene), besides being woken when the Scene appears.
const sceneNotFoundRetry = time.Minute

// reconcileStart resolves the Run's Scene and params and takes the snapshot the Run executes
// to its end.
func (r *RunReconciler) reconcileStart(ctx context.Context, run *ergonv1alpha1.Run) (ctrl.Result, error) {
	if run.Spec.Cancel {
		// Nothing has run yet: a Run waiting for its Scene, or cancelled as it was created,
		// ends here instead of waiting on.
		return r.finishUnstarted(ctx, run, ergonv1alpha1.RunCancelled, ergonv1alpha1.ReasonCancelled,
			"the Run was cancelled before it started")
	}
	if run.Spec.RetryOf != nil {
		return r.startRetry(ctx, run)
	}
	scene := &ergonv1alpha1.Scene{}
	key := client.ObjectKey{Namespace: run.Namespace, Name: run.Spec.SceneRef.Name}
	err := r.Get(ctx, key, scene)
	if apierrors.IsNotFound(err) {
		// A Scene created just before its Run may not be in the cache yet.
		err = r.APIReader.Get(ctx, key, scene)
	}
	if apierrors.IsNotFound(err) {
		return r.waitForScene(ctx, run)
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	if errs := compile.CheckParams(&scene.Spec, run.Spec.Params); len(errs) > 0 {
		return r.finishUnstarted(ctx, run, ergonv1alpha1.RunFailed, ergonv1alpha1.ReasonInvalidParams, errs.ToAggregate().Error())
	}
	if _, errs := compile.Compile(&scene.Spec); len(errs) > 0 {
		return r.finishUnstarted(ctx, run, ergonv1alpha1.RunFailed, ergonv1alpha1.ReasonInvalidScene,
			fmt.Sprintf("Scene %s does not compile: %v", scene.Name, errs.ToAggregate()))
	}
	base := run.DeepCopy()
	if err := r.takeSnapshot(ctx, run, scene); err != nil {
		if conflict, ok := errors.AsType[*conflictError](err); ok {
			return r.finishUnstarted(ctx, run, ergonv1alpha1.RunFailed, ergonv1alpha1.ReasonNameConflict, conflict.Error())
		}
		return ctrl.Result{}, err
	}
	return r.reconcileRunning(ctx, base, run)
}

// waitForScene says in the Run's condition, and once in an Event, that its Scene does not
// exist, and fails the Run when the Scene has not appeared within the manager's pending
// timeout of the Run's creation.
func (r *RunReconciler) waitForScene(ctx context.Context, run *ergonv1alpha1.Run) (ctrl.Result, error) {
	missing := fmt.Sprintf("Scene %q does not exist in namespace %s", run.Spec.SceneRef.Name, run.Namespace)
	retry := sceneNotFoundRetry
	message := missing + "; the Run starts when it does"
	if bound := r.Config.PendingTimeout; bound > 0 {
		deadline := run.CreationTimestamp.Add(bound)
		left := deadline.Sub(r.Clock.Now())
		if left <= 0 {
			return r.finishUnstarted(ctx, run, ergonv1alpha1.RunFailed, ergonv1alpha1.ReasonSceneNotFound,
				fmt.Sprintf("%s; the Run waited %s for it (the manager's --pending-timeout)", missing, bound))
		}
		retry = min(retry, left)
		message = fmt.Sprintf("%s; the Run starts when it does, or fails if it does not by %s",
			missing, deadline.UTC().Format(time.RFC3339))
	}
	told := meta.FindStatusCondition(run.Status.Conditions, ergonv1alpha1.ConditionSucceeded)
	status := run.Status.DeepCopy()
	status.Phase = ergonv1alpha1.RunPending
	status.ObservedGeneration = run.Generation
	r.setSucceeded(status, run, metav1.ConditionUnknown, ergonv1alpha1.ReasonSceneNotFound, message)
	if err := r.patchStatus(ctx, run.DeepCopy(), run, status); err != nil {
		return ctrl.Result{}, err
	}
	if told == nil || told.Reason != ergonv1alpha1.ReasonSceneNotFound {
		r.Recorder.Eventf(run, nil, corev1.EventTypeWarning, ergonv1alpha1.ReasonSceneNotFound, "Start", "Run %s waits: %s", run.Name, message)
	}
	return ctrl.Result{RequeueAfter: retry}, nil
}

// snapshotInlineLimit is the largest Scene spec a Run keeps in its status; a larger one goes
// to a ConfigMap, so a Scene of a thousand steps does not double the size of every Run of it.
const snapshotInlineLimit = 64 << 10

// snapshotKey is the ConfigMap key of a snapshot kept outside the Run.
const snapshotKey = "scene.json"

// takeSnapshot records the Scene spec the Run executes: in its status, or in a ConfigMap it
// owns when the spec is large. A ConfigMap left by an attempt whose status write was lost is
// used as it is, so the snapshot never changes once taken.
func (r *RunReconciler) takeSnapshot(ctx context.Context, run *ergonv1alpha1.Run, scene *ergonv1alpha1.Scene) error {
	run.Status.SceneGeneration = scene.Generation
	raw, err := json.Marshal(&scene.Spec)
	if err != nil {
		return err
	}
	if len(raw) <= snapshotInlineLimit {
		run.Status.SceneSnapshot = scene.Spec.DeepCopy()
		return nil
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name: naming.SnapshotConfigMapName(run.Name), Namespace: run.Namespace,
			Labels: childLabels(run, ""), OwnerReferences: []metav1.OwnerReference{ownerRef(run)},
		},
		Data:      map[string]string{snapshotKey: string(raw)},
		Immutable: new(true),
	}
	if err := r.Create(ctx, cm); apierrors.IsAlreadyExists(err) {
		// Made by an earlier pass whose status write was lost, or by someone else.
		existing := &corev1.ConfigMap{}
		if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(cm), existing); err != nil {
			return err
		}
		if !controlledBy(existing, run.UID) {
			return notOwned("ConfigMap", cm.Name, run)
		}
	} else if err != nil {
		return err
	}
	run.Status.SceneSnapshotRef = &ergonv1alpha1.OutputRef{ConfigMap: cm.Name, Key: snapshotKey}
	return nil
}

// readSnapshot reads a snapshot kept in a ConfigMap.
func (r *RunReconciler) readSnapshot(ctx context.Context, run *ergonv1alpha1.Run) (*ergonv1alpha1.SceneSpec, error) {
	ref := run.Status.SceneSnapshotRef
	cm := &corev1.ConfigMap{}
	if err := r.getLive(ctx, client.ObjectKey{Namespace: run.Namespace, Name: ref.ConfigMap}, cm); err != nil {
		return nil, err
	}
	if !controlledBy(cm, run.UID) {
		return nil, notOwned("ConfigMap", ref.ConfigMap, run)
	}
	spec := &ergonv1alpha1.SceneSpec{}
	if err := json.Unmarshal([]byte(cm.Data[ref.Key]), spec); err != nil {
		return nil, fmt.Errorf("the snapshot in ConfigMap %s is corrupt: %w", ref.ConfigMap, err)
	}
	return spec, nil
}

// finishUnstarted ends a Run before it starts: cancelled, or unable to execute.
func (r *RunReconciler) finishUnstarted(ctx context.Context, run *ergonv1alpha1.Run, phase ergonv1alpha1.RunPhase,
	reason, message string) (ctrl.Result, error) {
	status := run.Status.DeepCopy()
	now := metav1.NewTime(r.Clock.Now())
	status.Phase = phase
	status.ObservedGeneration = run.Generation
	status.FinishedAt = &now
	r.setSucceeded(status, run, metav1.ConditionFalse, reason, message)
	if err := r.patchStatus(ctx, run.DeepCopy(), run, status); err != nil {
		return ctrl.Result{}, err
	}
	if phase == ergonv1alpha1.RunCancelled {
		r.Recorder.Eventf(run, nil, corev1.EventTypeNormal, reason, "Start", "Run %s: %s", run.Name, message)
	} else {
		r.Recorder.Eventf(run, nil, corev1.EventTypeWarning, reason, "Start", "Run %s cannot start: %s", run.Name, message)
	}
	return ctrl.Result{}, nil
}

func (r *RunReconciler) setSucceeded(status *ergonv1alpha1.RunStatus, run *ergonv1alpha1.Run,
	s metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(&status.Conditions, metav1.Condition{
		Type: ergonv1alpha1.ConditionSucceeded, Status: s, Reason: reason, Message: message,
		ObservedGeneration: run.Generation, LastTransitionTime: metav1.NewTime(r.Clock.Now()),
	})
}
