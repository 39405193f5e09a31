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

package workspace

import (
	"context"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/controllers/internal/shared"
	"github.com/ergon-dev/ergon/internal/naming"
	"github.com/ergon-dev/ergon/internal/workspace"
)

// WorkspaceReconciler keeps each Workspace's pod, volume claim and NetworkPolicy as its spec
// says: it gathers what exists, asks internal/workspace what to do, does it, and writes the
// status once. It stops the pod of a Workspace nobody used for its idleTimeout and starts it
// again when a step bound to it runs or someone touches it.
type WorkspaceReconciler struct {
	client.Client
	// APIReader reads around the cache, which holds only Ergon's pods, claims and policies, to
	// find an object of a Workspace's name that someone else made.
	APIReader client.Reader
	Recorder  recorder.EventRecorder
	Clock     clock.PassiveClock
	// EntrypointImage is the image whose entrypoint the workspace pod runs: Ergon's own.
	EntrypointImage string
	// ArtifactEndpoint says where Ergon's artifact endpoint is, which the NetworkPolicy of every
	// Workspace lets its step pods reach; nil when the manager keeps no artifacts.
	ArtifactEndpoint func() *workspace.ArtifactEndpoint
	// Workers is how many Workspaces are reconciled at once; at least one.
	Workers int
}

// +kubebuilder:rbac:groups=ergon.dev,resources=workspaces,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=ergon.dev,resources=workspaces/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=ergon.dev,resources=workspaces/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;create;delete;patch
// +kubebuilder:rbac:groups=ergon.dev,resources=workspacepools,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies,verbs=get;list;watch;create;update;patch;delete

// Reconcile moves one Workspace toward its spec.
func (r *WorkspaceReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ws := &ergonv1alpha1.Workspace{}
	if err := r.Get(ctx, req.NamespacedName, ws); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	facts, err := r.gather(ctx, ws)
	if err != nil {
		return ctrl.Result{}, err
	}
	if workspace.Fresh(facts) {
		if err := r.takeWarm(ctx, ws, &facts); err != nil {
			return ctrl.Result{}, err
		}
	}
	plan := workspace.Decide(facts)
	if err := r.act(ctx, ws, facts, &plan); err != nil {
		return ctrl.Result{}, err
	}
	// The events tell of what act did, so they go out now: a status write that meets a
	// conflict below decides again, and the next pass sees the effect done, not to be told.
	for _, e := range plan.Events {
		eventType := corev1.EventTypeNormal
		if e.Warning {
			eventType = corev1.EventTypeWarning
		}
		r.Recorder.Eventf(ws, nil, eventType, e.Reason, "Reconcile", "%s", e.Message)
	}
	if ws.DeletionTimestamp.IsZero() && !equality.Semantic.DeepEqual(&ws.Status, &plan.Status) {
		base := ws.DeepCopy()
		ws.Status = plan.Status
		if err := r.Status().Patch(ctx, ws, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
			if apierrors.IsConflict(err) {
				log.FromContext(ctx).V(1).Info("Workspace changed since it was read; deciding again when the cache has it")
				return ctrl.Result{RequeueAfter: time.Second}, nil
			}
			return ctrl.Result{}, client.IgnoreNotFound(err)
		}
	}
	return ctrl.Result{RequeueAfter: plan.RequeueAfter}, nil
}

// SetupWithManager registers the controller: Workspaces, the pods, NetworkPolicies and claims
// they control, and the step pods labelled for them, whose coming and going is use.
func (r *WorkspaceReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&ergonv1alpha1.Workspace{}, builder.WithPredicates(specOrMetadataChanged)).
		Owns(&corev1.Pod{}).
		Owns(&networkingv1.NetworkPolicy{}).
		Owns(&corev1.PersistentVolumeClaim{}).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(r.workspaceOfStep),
			builder.WithPredicates(predicate.NewPredicateFuncs(isStepOfWorkspace))).
		Named("workspace").
		WithOptions(controller.Options{MaxConcurrentReconciles: max(r.Workers, 1)}).
		Complete(shared.QuietWhileNamespaceEnds(r))
}

// specOrMetadataChanged lets through the changes of a Workspace its controller acts on: its
// spec, a touch, a deletion, its finalizers. Its own status writes are not among them.
var specOrMetadataChanged = predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
	o, n := e.ObjectOld, e.ObjectNew
	return o.GetGeneration() != n.GetGeneration() ||
		!maps.Equal(o.GetAnnotations(), n.GetAnnotations()) ||
		!o.GetDeletionTimestamp().Equal(n.GetDeletionTimestamp()) ||
		!slices.Equal(o.GetFinalizers(), n.GetFinalizers())
}}

// isStepOfWorkspace says whether a pod is labelled for a Workspace and not a Workspace's own.
func isStepOfWorkspace(obj client.Object) bool {
	labels := obj.GetLabels()
	_, byUID := labels[ergonv1alpha1.LabelWorkspaceUID]
	_, byName := labels[ergonv1alpha1.LabelWorkspace]
	if !byUID && !byName {
		return false
	}
	ref := metav1.GetControllerOf(obj)
	return ref == nil || ref.Kind != shared.KindWorkspace
}

// workspaceOfStep maps a step pod to the Workspace whose UID it is labelled with; a pod an
// earlier version bound to a Workspace carries only its name, shortened with a hash when it
// is too long for a label value.
func (r *WorkspaceReconciler) workspaceOfStep(ctx context.Context, pod client.Object) []reconcile.Request {
	uid, byUID := pod.GetLabels()[ergonv1alpha1.LabelWorkspaceUID]
	value := pod.GetLabels()[ergonv1alpha1.LabelWorkspace]
	if !byUID && len(value) < naming.MaxLabelLength {
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: pod.GetNamespace(), Name: value}}}
	}
	list := &ergonv1alpha1.WorkspaceList{}
	if err := r.List(ctx, list, client.InNamespace(pod.GetNamespace())); err != nil {
		log.FromContext(ctx).Error(err, "Listing Workspaces to find a step's", "pod", pod.GetName())
		return nil
	}
	var requests []reconcile.Request
	for _, ws := range list.Items {
		if (byUID && string(ws.UID) == uid) || (!byUID && naming.LabelValue(ws.Name) == value) {
			requests = append(requests, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&ws)})
		}
	}
	return requests
}
