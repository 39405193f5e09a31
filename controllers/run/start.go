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
	"encoding/json"
	"errors"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/controllers/internal/shared"
	"github.com/ergon-dev/ergon/internal/naming"
	"github.com/ergon-dev/ergon/internal/planner"
)

// reconcileStart resolves the Run's Scene and params and takes the snapshot the Run executes
// to its end: it gathers the Scene, planner.DecideStart decides, and this acts.
func (r *RunReconciler) reconcileStart(ctx context.Context, run *ergonv1alpha1.Run) (ctrl.Result, error) {
	facts := planner.StartFacts{Run: run, Now: r.Clock.Now(), PendingTimeout: r.Config.PendingTimeout}
	if run.Spec.Cancel {
		started, err := r.hasChildren(ctx, run)
		if err != nil {
			return ctrl.Result{}, err
		}
		facts.Started = started
	}
	if (!run.Spec.Cancel || facts.Started) && run.Spec.RetryOf == nil {
		scene := &ergonv1alpha1.Scene{}
		key := client.ObjectKey{Namespace: run.Namespace, Name: run.Spec.SceneRef.Name}
		err := r.Get(ctx, key, scene)
		if apierrors.IsNotFound(err) {
			// A Scene created just before its Run may not be in the cache yet.
			err = r.APIReader.Get(ctx, key, scene)
		}
		switch {
		case err == nil:
			facts.Scene = scene
			if facts.Spent, err = r.spent(ctx, run, scene); err != nil {
				return ctrl.Result{}, err
			}
		case !apierrors.IsNotFound(err):
			return ctrl.Result{}, err
		}
	}
	plan := planner.DecideStart(facts)
	if plan.Action == planner.StartRetry || plan.Action == planner.StartScene {
		if _, err := actors(run); err != nil {
			return r.failUnstarted(ctx, run, ergonv1alpha1.ReasonNoIdentity, err.Error())
		}
		if err := r.authorizeStart(ctx, run); isNotAuthorized(err) {
			return r.failUnstarted(ctx, run, ergonv1alpha1.ReasonNotAuthorized, "Ergon did not start the Run: "+err.Error())
		} else if err != nil {
			return ctrl.Result{}, err
		}
	}
	switch plan.Action {
	case planner.StartRetry:
		return r.startRetry(ctx, run)
	case planner.StartScene:
		base := run.DeepCopy()
		editors, err := r.closureEditors(ctx, run, facts.Scene)
		if e, ok := errors.AsType[*editorsError](err); ok {
			return r.failUnstarted(ctx, run, ergonv1alpha1.ReasonSceneEditorUnknown, e.msg)
		}
		if err != nil {
			return ctrl.Result{}, err
		}
		run.Status.SceneEditors = editors
		if err := r.takeSnapshot(ctx, run, facts.Scene); err != nil {
			if conflict, ok := errors.AsType[*shared.ConflictError](err); ok {
				return r.failUnstarted(ctx, run, ergonv1alpha1.ReasonNameConflict, conflict.Error())
			}
			return ctrl.Result{}, err
		}
		return r.reconcileRunning(ctx, base, run)
	}
	return r.actStart(ctx, run, plan)
}

// hasChildren reports whether the Run already created a pod, child Run or Gate: a first pass
// acted, and its status write was lost. Asked of the API server, only for a Run cancelled
// before its status says it started.
func (r *RunReconciler) hasChildren(ctx context.Context, run *ergonv1alpha1.Run) (bool, error) {
	selector := client.MatchingLabels{ergonv1alpha1.LabelRun: naming.LabelValue(run.Name)}
	for _, list := range []client.ObjectList{&corev1.PodList{}, &ergonv1alpha1.RunList{}, &ergonv1alpha1.GateList{}} {
		if err := r.APIReader.List(ctx, list, client.InNamespace(run.Namespace), selector); err != nil {
			return false, err
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			return false, err
		}
		for _, o := range items {
			if obj, ok := o.(client.Object); ok && shared.ControlledBy(obj, run.UID) {
				return true, nil
			}
		}
	}
	return false, nil
}

// snapshotInlineLimit is the largest Scene spec a Run keeps in its status; a larger one goes
// to a ConfigMap, so a Scene of a thousand steps does not double the size of every Run of it.
const snapshotInlineLimit = 64 << 10

// snapshotKey is the ConfigMap key of a snapshot kept outside the Run.
const snapshotKey = "scene.json"

// takeSnapshot records the Scene spec the Run executes: in its status, or in a ConfigMap it
// owns when the spec is large, with the snapshot's SHA-256 in the status. A ConfigMap under
// the name is used only when it is the Run's and holds this very snapshot (left by a pass
// whose status write was lost); anything else is a conflict, never adopted. With it goes the
// UID of the Workspace the spec binds (pinWorkspace).
func (r *RunReconciler) takeSnapshot(ctx context.Context, run *ergonv1alpha1.Run, scene *ergonv1alpha1.Scene) error {
	run.Status.SceneGeneration = scene.Generation
	if err := r.pinWorkspace(ctx, run, &scene.Spec); err != nil {
		return err
	}
	raw, err := json.Marshal(&scene.Spec)
	if err != nil {
		return err
	}
	if len(raw) <= snapshotInlineLimit {
		run.Status.SceneSnapshot = scene.Spec.DeepCopy()
		return nil
	}
	cm := shared.MarkInternal(&corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name: naming.SnapshotConfigMapName(run.Name), Namespace: run.Namespace,
			Labels: childLabels(run, ""), OwnerReferences: []metav1.OwnerReference{ownerRef(run)},
		},
		Data:      map[string]string{snapshotKey: string(raw)},
		Immutable: new(true),
	})
	want := shared.RunWants(run, "the snapshot", snapshotKey)
	want.SHA256 = shared.Digest(string(raw))
	if err := r.Create(ctx, cm); apierrors.IsAlreadyExists(err) {
		// Made by an earlier pass whose status write was lost, or by someone else.
		existing := &corev1.ConfigMap{}
		if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(cm), existing); err != nil {
			return err
		}
		if _, err := shared.VerifyInternal(existing, want); err != nil {
			return err
		}
	} else if err != nil {
		return err
	}
	run.Status.SceneSnapshotRef = &ergonv1alpha1.OutputRef{ConfigMap: cm.Name, Key: snapshotKey}
	run.Status.SceneSnapshotSHA256 = want.SHA256
	return nil
}

// failUnstarted fails a Run before it starts, for what the start path finds while acting.
func (r *RunReconciler) failUnstarted(ctx context.Context, run *ergonv1alpha1.Run, reason, message string) (ctrl.Result, error) {
	return r.actStart(ctx, run, planner.Unstarted(run, r.Clock.Now(), ergonv1alpha1.RunFailed, reason, message))
}

// actStart writes the status of a Run that ends or waits before it starts, then its Events.
func (r *RunReconciler) actStart(ctx context.Context, run *ergonv1alpha1.Run, plan planner.StartPlan) (ctrl.Result, error) {
	base := run.DeepCopy()
	if err := r.patchStatus(ctx, base, run, plan.Status); err != nil {
		return ctrl.Result{}, err
	}
	r.emit(run, "Start", plan.Events)
	r.trace(run, &base.Status, plan.Status, nil, nil)
	return ctrl.Result{RequeueAfter: plan.RequeueAfter}, nil
}
