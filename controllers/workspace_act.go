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
	"fmt"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/naming"
	"github.com/ergon-dev/ergon/internal/workspace"
)

// gather reads the Workspace's pod, claim and NetworkPolicy, and the step pods bound to it.
func (r *WorkspaceReconciler) gather(ctx context.Context, ws *ergonv1alpha1.Workspace) (workspace.Facts, error) {
	f := workspace.Facts{Workspace: ws, Now: r.Clock.Now(), EntrypointImage: r.EntrypointImage}
	key := client.ObjectKey{Namespace: ws.Namespace, Name: naming.WorkspaceName(ws.Spec.User)}
	var err error
	if f.Pod, err = getOptional(ctx, r, key, &corev1.Pod{}); err != nil {
		return f, err
	}
	if f.Claim, err = getOptional(ctx, r, key, &corev1.PersistentVolumeClaim{}); err != nil {
		return f, err
	}
	if f.Policy, err = getOptional(ctx, r, key, &networkingv1.NetworkPolicy{}); err != nil {
		return f, err
	}
	steps := &corev1.PodList{}
	if err := r.List(ctx, steps, client.InNamespace(ws.Namespace),
		client.MatchingLabels{ergonv1alpha1.LabelWorkspace: naming.LabelValue(ws.Name)}); err != nil {
		return f, err
	}
	for i := range steps.Items {
		pod := &steps.Items[i]
		if ref := metav1.GetControllerOf(pod); ref != nil && ref.UID == ws.UID {
			continue
		}
		if pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed {
			f.ActiveSteps++
			continue
		}
		for _, c := range pod.Status.ContainerStatuses {
			if t := c.State.Terminated; t != nil && t.FinishedAt.After(f.LastStepFinish) {
				f.LastStepFinish = t.FinishedAt.Time
			}
		}
	}
	return f, nil
}

// getOptional reads an object of the Workspace's name, nil when there is none. The cache holds
// only objects labelled as Ergon's, so an object it lacks is looked for around it: one that
// someone else made under the name must be seen, not created over.
func getOptional[T client.Object](ctx context.Context, r *WorkspaceReconciler, key client.ObjectKey, obj T) (T, error) {
	var none T
	err := r.Get(ctx, key, obj)
	if apierrors.IsNotFound(err) {
		err = r.APIReader.Get(ctx, key, obj)
	}
	if apierrors.IsNotFound(err) {
		return none, nil
	}
	if err != nil {
		return none, err
	}
	return obj, nil
}

// act carries out a plan, except for the status, which Reconcile writes.
func (r *WorkspaceReconciler) act(ctx context.Context, ws *ergonv1alpha1.Workspace, f workspace.Facts, p *workspace.Plan) error {
	logger := log.FromContext(ctx)
	if p.AddFinalizer {
		base := ws.DeepCopy()
		controllerutil.AddFinalizer(ws, ergonv1alpha1.FinalizerWorkspaceVolume)
		if err := r.Patch(ctx, ws, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
			return err
		}
	}
	if p.CreateClaim {
		claim := workspace.Claim(ws)
		logger.Info("Creating the Workspace's volume claim", "claim", claim.Name)
		if err := r.Create(ctx, claim); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating claim %s: %w", claim.Name, err)
		}
	}
	if p.Policy != nil {
		if err := r.applyPolicy(ctx, f.Policy, p.Policy); err != nil {
			return err
		}
	}
	if p.DeletePod && f.Pod != nil {
		logger.Info("Deleting the Workspace's pod", "pod", f.Pod.Name)
		if err := r.Delete(ctx, f.Pod, client.Preconditions{UID: &f.Pod.UID}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting pod %s: %w", f.Pod.Name, err)
		}
	}
	if p.CreatePod {
		pod := workspace.Pod(ws, r.EntrypointImage)
		logger.Info("Creating the Workspace's pod", "pod", pod.Name, "image", ws.Spec.Image)
		if err := r.Create(ctx, pod); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating pod %s: %w", pod.Name, err)
		}
	}
	if p.DeletePolicy && f.Policy != nil {
		if err := r.Delete(ctx, f.Policy, client.Preconditions{UID: &f.Policy.UID}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting NetworkPolicy %s: %w", f.Policy.Name, err)
		}
	}
	if p.DeleteClaim && f.Claim != nil {
		logger.Info("Deleting the Workspace's volume claim (reclaimPolicy Delete)", "claim", f.Claim.Name)
		if err := r.Delete(ctx, f.Claim, client.Preconditions{UID: &f.Claim.UID}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting claim %s: %w", f.Claim.Name, err)
		}
	}
	if p.RemoveFinalizer {
		base := ws.DeepCopy()
		controllerutil.RemoveFinalizer(ws, ergonv1alpha1.FinalizerWorkspaceVolume)
		if err := r.Patch(ctx, ws, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
			return client.IgnoreNotFound(err)
		}
	}
	return nil
}

// applyPolicy creates the Workspace's NetworkPolicy, or puts its spec back.
func (r *WorkspaceReconciler) applyPolicy(ctx context.Context, existing, want *networkingv1.NetworkPolicy) error {
	if existing == nil {
		log.FromContext(ctx).Info("Creating the Workspace's NetworkPolicy", "networkPolicy", want.Name)
		if err := r.Create(ctx, want); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating NetworkPolicy %s: %w", want.Name, err)
		}
		return nil
	}
	log.FromContext(ctx).Info("Updating the Workspace's NetworkPolicy to its spec", "networkPolicy", want.Name)
	updated := existing.DeepCopy()
	updated.Spec = want.Spec
	return r.Update(ctx, updated)
}
