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

package scene

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/controllers/internal/shared"
)

// SceneReconciler keeps each Scene's status: compiled with the compiler admission uses, and
// Ready once the Scenes and Workspace it names exist, so Argo CD, Flux and
// `kubectl wait --for=condition=Ready` can tell a Scene that can run from one that cannot.
// It never writes a Scene's spec.
type SceneReconciler struct {
	client.Client
	Recorder recorder.EventRecorder
	Clock    clock.PassiveClock
}

// +kubebuilder:rbac:groups=ergon.dev,resources=scenes,verbs=get;list;watch
// +kubebuilder:rbac:groups=ergon.dev,resources=scenes/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=ergon.dev,resources=workspaces,verbs=get;list;watch

// Reconcile decides one Scene's status.
func (r *SceneReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	scene := &ergonv1alpha1.Scene{}
	if err := r.Get(ctx, req.NamespacedName, scene); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !scene.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	facts, err := r.gather(ctx, scene)
	if err != nil {
		return ctrl.Result{}, err
	}
	status, ev := sceneStatus(facts, metav1.NewTime(r.Clock.Now()))
	if equality.Semantic.DeepEqual(&scene.Status, &status) {
		return ctrl.Result{}, nil
	}
	base := scene.DeepCopy()
	scene.Status = status
	if err := r.Status().Patch(ctx, scene, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsConflict(err) {
			// The Scene changed since it was read. Not only its spec: this controller's own
			// status write may not have reached the cache yet, and a status change is not
			// an event here (GenerationChangedPredicate), so it does not wait for one.
			log.FromContext(ctx).V(1).Info("Scene changed since it was read; deciding again")
			return ctrl.Result{RequeueAfter: shared.ContendedRetry}, nil
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if ev != nil {
		eventType := corev1.EventTypeNormal
		if ev.warning {
			eventType = corev1.EventTypeWarning
		}
		r.Recorder.Eventf(scene, nil, eventType, ev.reason, "Compile", "Scene %s: %s", scene.Name, ev.message)
	}
	return ctrl.Result{}, nil
}

// gather reads the Scenes of the Scene's namespace and the Workspace it names.
func (r *SceneReconciler) gather(ctx context.Context, scene *ergonv1alpha1.Scene) (sceneFacts, error) {
	facts := sceneFacts{scene: scene}
	scenes := &ergonv1alpha1.SceneList{}
	if err := r.List(ctx, scenes, client.InNamespace(scene.Namespace)); err != nil {
		return facts, err
	}
	facts.namespace = scenes.Items
	if ws := scene.Spec.Workspace; ws != nil {
		err := r.Get(ctx, client.ObjectKey{Namespace: scene.Namespace, Name: ws.Name}, &ergonv1alpha1.Workspace{})
		if err != nil && !apierrors.IsNotFound(err) {
			return facts, err
		}
		facts.workspaceFound = err == nil
	}
	return facts, nil
}

// SetupWithManager registers the controller: Scenes, and the Scenes and Workspaces they
// name, so a Scene turns Ready when what it waits for appears and not Ready when it goes.
func (r *SceneReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := shared.SetupIndexes(mgr); err != nil {
		return err
	}
	// A Workspace appearing or going matters to the Scenes that name it; a called Scene's
	// spec too, since it may close a cycle of calls.
	appearOrGo := predicate.Funcs{UpdateFunc: func(event.UpdateEvent) bool { return false }}
	return ctrl.NewControllerManagedBy(mgr).
		For(&ergonv1alpha1.Scene{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&ergonv1alpha1.Scene{}, handler.EnqueueRequestsFromMapFunc(r.scenesNaming(shared.SceneCallsField)),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&ergonv1alpha1.Workspace{}, handler.EnqueueRequestsFromMapFunc(r.scenesNaming(shared.SceneWorkspaceField)),
			builder.WithPredicates(appearOrGo)).
		Named("scene").
		Complete(r)
}

// scenesNaming maps an object to the Scenes of its namespace whose field index names it.
func (r *SceneReconciler) scenesNaming(field string) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		scenes := &ergonv1alpha1.SceneList{}
		if err := r.List(ctx, scenes, client.InNamespace(obj.GetNamespace()), client.MatchingFields{field: obj.GetName()}); err != nil {
			log.FromContext(ctx).Error(err, "Listing the Scenes that name an object", "name", obj.GetName(), "field", field)
			return nil
		}
		requests := make([]reconcile.Request, 0, len(scenes.Items))
		for _, s := range scenes.Items {
			requests = append(requests, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&s)})
		}
		return requests
	}
}
