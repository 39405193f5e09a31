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
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/controllers/internal/shared"
	"github.com/ergon-dev/ergon/internal/authz"
	"github.com/ergon-dev/ergon/internal/identity"
	"github.com/ergon-dev/ergon/internal/workspace"
)

// WorkspacePoolReconciler keeps each WorkspacePool's warm pods and volumes: as many ready as it
// asks for, of its current template, each recorded by UID in its status, the only record a
// Workspace takes one from. It makes them for the pool's last editor: before it creates one,
// it asks whether they may create pods and PersistentVolumeClaims in the namespace.
type WorkspacePoolReconciler struct {
	client.Client
	// APIReader reads the pool itself around the cache: its status is the record of what it
	// made, and a pass must not decide from a record older than its own last write.
	APIReader client.Reader
	Recorder  recorder.EventRecorder
	Clock     clock.PassiveClock
	// EntrypointImage is Ergon's image, whose entrypoint the warm pods run.
	EntrypointImage string
	// Authorizer asks whether the pool's last editor may have its pods made; one of its own
	// when nil.
	Authorizer *authz.Authorizer
}

// +kubebuilder:rbac:groups=ergon.dev,resources=workspacepools,verbs=get;list;watch
// +kubebuilder:rbac:groups=ergon.dev,resources=workspacepools/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;create;delete;patch
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// Reconcile moves one pool toward its spec.
func (r *WorkspacePoolReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	pool := &ergonv1alpha1.WorkspacePool{}
	if err := r.APIReader.Get(ctx, req.NamespacedName, pool); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !pool.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil // the garbage collector deletes what it still controls
	}
	facts, err := r.gatherPool(ctx, pool)
	if err != nil {
		return ctrl.Result{}, err
	}
	plan := workspace.DecidePool(facts)
	if plan.Create > 0 {
		if err := r.authorize(ctx, pool, &plan); err != nil {
			return ctrl.Result{}, err
		}
	}
	for _, name := range plan.DeletePods {
		r.deleteExact(ctx, facts.Pods[name])
	}
	for _, name := range plan.DeleteClaims {
		r.deleteExact(ctx, facts.Claims[name])
	}
	var createErr error
	for range plan.Create {
		entry, err := r.createEntry(ctx, pool)
		if err != nil {
			createErr = err
			break
		}
		plan.Status.Entries = append(plan.Status.Entries, entry)
	}
	if !equality.Semantic.DeepEqual(&pool.Status, &plan.Status) {
		base := pool.DeepCopy()
		pool.Status = plan.Status
		if err := r.Status().Patch(ctx, pool, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
			return ctrl.Result{}, client.IgnoreNotFound(err)
		}
	}
	if createErr != nil {
		return ctrl.Result{}, createErr
	}
	return ctrl.Result{RequeueAfter: plan.RequeueAfter}, nil
}

// gatherPool reads the pods and claims labelled with the pool's UID, and those of the names
// its status records, whoever controls them now.
func (r *WorkspacePoolReconciler) gatherPool(ctx context.Context, pool *ergonv1alpha1.WorkspacePool) (workspace.PoolFacts, error) {
	f := workspace.PoolFacts{Pool: pool, Now: r.Clock.Now(), EntrypointImage: r.EntrypointImage,
		Pods: map[string]*corev1.Pod{}, Claims: map[string]*corev1.PersistentVolumeClaim{}}
	selector := client.MatchingLabels{ergonv1alpha1.LabelWorkspacePoolUID: string(pool.UID)}
	pods, claims := &corev1.PodList{}, &corev1.PersistentVolumeClaimList{}
	if err := r.List(ctx, pods, client.InNamespace(pool.Namespace), selector); err != nil {
		return f, err
	}
	if err := r.List(ctx, claims, client.InNamespace(pool.Namespace), selector); err != nil {
		return f, err
	}
	for i := range pods.Items {
		f.Pods[pods.Items[i].Name] = &pods.Items[i]
	}
	for i := range claims.Items {
		f.Claims[claims.Items[i].Name] = &claims.Items[i]
	}
	for _, e := range pool.Status.Entries {
		key := client.ObjectKey{Namespace: pool.Namespace, Name: e.Name}
		if _, ok := f.Pods[e.Name]; !ok {
			pod := &corev1.Pod{}
			if err := r.Get(ctx, key, pod); err == nil {
				f.Pods[e.Name] = pod
			} else if !apierrors.IsNotFound(err) {
				return f, err
			}
		}
		if _, ok := f.Claims[e.Name]; !ok {
			claim := &corev1.PersistentVolumeClaim{}
			if err := r.Get(ctx, key, claim); err == nil {
				f.Claims[e.Name] = claim
			} else if !apierrors.IsNotFound(err) {
				return f, err
			}
		}
	}
	return f, nil
}

// authorize asks whether the pool's last editor may create pods and claims in its namespace;
// when not, or when admission stamped no editor, the plan makes nothing and says why.
func (r *WorkspacePoolReconciler) authorize(ctx context.Context, pool *ergonv1alpha1.WorkspacePool, plan *workspace.PoolPlan) error {
	now := metav1.NewTime(r.Clock.Now())
	id, ok, err := identity.Of(pool, ergonv1alpha1.AnnotationIdentity)
	if err != nil || !ok {
		r.refuse(pool, plan, now, ergonv1alpha1.ReasonNoIdentity, fmt.Sprintf("the WorkspacePool carries no identity "+
			"stamped by admission (annotation %s), so Ergon makes no warm pods for it; apply it again with the "+
			"webhook installed", ergonv1alpha1.AnnotationIdentity))
		return nil
	}
	questions := []authz.Attributes{
		{Verb: "create", Resource: "pods", Namespace: pool.Namespace},
		{Verb: "create", Resource: "persistentvolumeclaims", Namespace: pool.Namespace},
	}
	err = r.authorizer().Check(ctx, []authz.Actor{{Identity: id, Role: "the WorkspacePool's last editor"}}, questions)
	if denied, isDenied := errors.AsType[*authz.Denied](err); isDenied {
		r.refuse(pool, plan, now, ergonv1alpha1.ReasonNotAuthorized, denied.Error()+"; Ergon makes no warm pods for them")
		return nil
	}
	return err
}

// refuse makes the plan create nothing, with a Warning Event when the reason is new.
func (r *WorkspacePoolReconciler) refuse(pool *ergonv1alpha1.WorkspacePool, plan *workspace.PoolPlan, now metav1.Time,
	reason, message string) {
	if c := meta.FindStatusCondition(pool.Status.Conditions, ergonv1alpha1.ConditionReady); c == nil || c.Reason != reason {
		r.Recorder.Eventf(pool, nil, corev1.EventTypeWarning, reason, "Warm", "%s", message)
	}
	plan.Refuse(pool, now, reason, message)
	// Permissions change without the pool changing: look again.
	plan.RequeueAfter = time.Minute
}

// authorizer is the reconciler's, made on first use when none was given.
func (r *WorkspacePoolReconciler) authorizer() *authz.Authorizer {
	if r.Authorizer == nil {
		r.Authorizer = &authz.Authorizer{Client: r.Client, Clock: r.Clock}
	}
	return r.Authorizer
}

// createEntry makes one warm volume and its pod, under the name the API server gives the
// claim. When that name is taken for the pod, the claim is deleted again.
func (r *WorkspacePoolReconciler) createEntry(ctx context.Context,
	pool *ergonv1alpha1.WorkspacePool) (ergonv1alpha1.WorkspacePoolEntry, error) {
	claim := workspace.PoolClaim(pool)
	if err := r.Create(ctx, claim); err != nil {
		return ergonv1alpha1.WorkspacePoolEntry{}, fmt.Errorf("creating a warm volume claim: %w", err)
	}
	pod := workspace.PoolPod(pool, r.EntrypointImage, claim.Name)
	if err := r.Create(ctx, pod); err != nil {
		r.deleteExact(ctx, claim)
		return ergonv1alpha1.WorkspacePoolEntry{}, fmt.Errorf("creating warm pod %s: %w", pod.Name, err)
	}
	log.FromContext(ctx).Info("Made a warm pod and volume", "pod", pod.Name)
	return ergonv1alpha1.WorkspacePoolEntry{Name: claim.Name, PodUID: pod.UID, ClaimUID: claim.UID}, nil
}

// deleteExact deletes the object as read, with its UID and resourceVersion as preconditions:
// one a Workspace took (or anyone changed) meanwhile is left alone.
func (r *WorkspacePoolReconciler) deleteExact(ctx context.Context, obj client.Object) {
	if obj == nil {
		return
	}
	uid, rv := obj.GetUID(), obj.GetResourceVersion()
	err := r.Delete(ctx, obj, client.Preconditions{UID: &uid, ResourceVersion: &rv})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		log.FromContext(ctx).Error(err, "Deleting a warm pod or claim", "name", obj.GetName())
	}
}

// SetupWithManager registers the controller: pools, and the pods and claims they control.
func (r *WorkspacePoolReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&ergonv1alpha1.WorkspacePool{}).
		Owns(&corev1.Pod{}).
		Owns(&corev1.PersistentVolumeClaim{}).
		Named("workspacepool").
		Complete(shared.QuietWhileNamespaceEnds(r))
}
