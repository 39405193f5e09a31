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
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/workspace"
)

// takeWarm gives a new Workspace a warm pod and volume from a pool of its namespace, when one
// of its exact shape is ready: the Workspace's NetworkPolicy first, then the claim and the pod
// become the Workspace's (labels and controlling owner), each patched with an optimistic lock,
// so of two Workspaces only one takes an entry. It sets the facts to what the Workspace now
// has, for Decide; nothing when no pool has one.
func (r *WorkspaceReconciler) takeWarm(ctx context.Context, ws *ergonv1alpha1.Workspace, f *workspace.Facts) error {
	pools := &ergonv1alpha1.WorkspacePoolList{}
	if err := r.List(ctx, pools, client.InNamespace(ws.Namespace)); err != nil || len(pools.Items) == 0 {
		return err
	}
	if took, err := r.tookBefore(ctx, ws, f); took || err != nil {
		return err
	}
	for i := range pools.Items {
		pool := &pools.Items[i]
		if !workspace.SameStorage(ws.Spec.Storage, pool.Spec.Template.Storage) {
			continue
		}
		for _, e := range pool.Status.Entries {
			took, err := r.takeEntry(ctx, ws, pool, e, f)
			if took || err != nil {
				return err
			}
		}
	}
	return nil
}

// tookBefore finds, around the cache, a warm volume (and its pod) an earlier pass took for
// the Workspace and could not record, its status write lost: those are the Workspace's, and
// it takes no second one.
func (r *WorkspaceReconciler) tookBefore(ctx context.Context, ws *ergonv1alpha1.Workspace, f *workspace.Facts) (bool, error) {
	claims := &corev1.PersistentVolumeClaimList{}
	if err := r.APIReader.List(ctx, claims, client.InNamespace(ws.Namespace),
		client.MatchingLabels{ergonv1alpha1.LabelWorkspaceUID: string(ws.UID)}); err != nil {
		return false, err
	}
	for i := range claims.Items {
		claim := &claims.Items[i]
		if !strings.HasPrefix(claim.Name, workspace.PoolPrefix) || !workspace.Controls(ws, claim) {
			continue
		}
		f.Claim = claim
		pod := &corev1.Pod{}
		err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(claim), pod)
		if err == nil && workspace.Controls(ws, pod) {
			f.Pod = pod
		}
		return true, client.IgnoreNotFound(err)
	}
	return false, nil
}

// takeEntry takes one recorded entry of a pool when it is takable, and says whether it did.
func (r *WorkspaceReconciler) takeEntry(ctx context.Context, ws *ergonv1alpha1.Workspace, pool *ergonv1alpha1.WorkspacePool,
	e ergonv1alpha1.WorkspacePoolEntry, f *workspace.Facts) (bool, error) {
	key := client.ObjectKey{Namespace: ws.Namespace, Name: e.Name}
	pod, claim := &corev1.Pod{}, &corev1.PersistentVolumeClaim{}
	if err := r.Get(ctx, key, pod); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	if err := r.Get(ctx, key, claim); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	if ok, why := workspace.Takable(ws, pool, e, pod, claim, r.EntrypointImage); !ok {
		log.FromContext(ctx).V(1).Info("Not taking a warm pod: "+why, "pool", pool.Name, "pod", e.Name)
		return false, nil
	}
	if f.Policy == nil {
		policy := workspace.NetworkPolicy(ws, f.Artifacts)
		if err := r.Create(ctx, policy); err != nil && !apierrors.IsAlreadyExists(err) {
			return false, err
		} else if err == nil {
			f.Policy = policy
		}
	}
	logger := log.FromContext(ctx).WithValues("pool", pool.Name, "pod", e.Name)
	taken := claim.DeepCopy()
	workspace.Take(ws, taken)
	if err := r.Patch(ctx, taken, client.MergeFromWithOptions(claim, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			logger.V(1).Info("Another Workspace or the pool changed the warm volume first")
			return false, nil
		}
		return false, err
	}
	f.Claim = taken
	logger.Info("Took a warm volume from a WorkspacePool")
	tookPod := pod.DeepCopy()
	workspace.Take(ws, tookPod)
	if err := r.Patch(ctx, tookPod, client.MergeFromWithOptions(pod, client.MergeFromWithOptimisticLock{})); err != nil {
		// The volume is the Workspace's; it starts a pod of its own on it.
		logger.Info("Could not take the warm pod; starting one on the volume", "error", err.Error())
		return true, nil
	}
	f.Pod = tookPod
	r.Recorder.Eventf(ws, nil, corev1.EventTypeNormal, "TookWarmPod", "Reconcile",
		"took warm pod %s and its empty volume from WorkspacePool %s", e.Name, pool.Name)
	return true, nil
}
