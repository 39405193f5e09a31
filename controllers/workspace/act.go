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
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/controllers/internal/shared"
	"github.com/ergon-dev/ergon/internal/naming"
	"github.com/ergon-dev/ergon/internal/workspace"
)

// gather reads the objects under the Workspace's names, those an earlier version made for it,
// and the step pods bound to it.
func (r *WorkspaceReconciler) gather(ctx context.Context, ws *ergonv1alpha1.Workspace) (workspace.Facts, error) {
	f := workspace.Facts{Workspace: ws, Now: r.Clock.Now(), EntrypointImage: r.EntrypointImage}
	if r.ArtifactEndpoint != nil {
		f.Artifacts = r.ArtifactEndpoint()
	}
	key := client.ObjectKey{Namespace: ws.Namespace, Name: workspace.ObjectName(ws)}
	var err error
	if f.Pod, err = getOptional(ctx, r, client.ObjectKey{Namespace: ws.Namespace, Name: workspace.PodName(ws)},
		&corev1.Pod{}); err != nil {
		return f, err
	}
	if f.Claim, err = getOptional(ctx, r, client.ObjectKey{Namespace: ws.Namespace, Name: workspace.ClaimName(ws)},
		&corev1.PersistentVolumeClaim{}); err != nil {
		return f, err
	}
	if f.Policy, err = getOptional(ctx, r, key, &networkingv1.NetworkPolicy{}); err != nil {
		return f, err
	}
	if err := r.gatherLegacy(ctx, ws, &f); err != nil {
		return f, err
	}
	steps := &corev1.PodList{}
	if err := r.List(ctx, steps, client.InNamespace(ws.Namespace),
		client.MatchingLabels{ergonv1alpha1.LabelWorkspaceUID: string(ws.UID)}); err != nil {
		return f, err
	}
	for i := range steps.Items {
		countStep(&f, &steps.Items[i])
	}
	return f, nil
}

// gatherLegacy reads the pod and NetworkPolicy an earlier version named after the Workspace's
// user, when this Workspace controls them, and the step pods that version bound to it while
// that policy is there. Both are the Workspace's own objects, so the cache, which holds
// every object Ergon made, has them.
func (r *WorkspaceReconciler) gatherLegacy(ctx context.Context, ws *ergonv1alpha1.Workspace, f *workspace.Facts) error {
	key := client.ObjectKey{Namespace: ws.Namespace, Name: naming.LegacyWorkspaceName(ws.Spec.User)}
	pod, policy := &corev1.Pod{}, &networkingv1.NetworkPolicy{}
	if err := r.Get(ctx, key, pod); client.IgnoreNotFound(err) != nil {
		return err
	} else if err == nil && workspace.Controls(ws, pod) {
		f.LegacyPod = pod
	}
	if err := r.Get(ctx, key, policy); client.IgnoreNotFound(err) != nil {
		return err
	} else if err == nil && workspace.Controls(ws, policy) {
		f.LegacyPolicy = policy
	}
	if f.LegacyPolicy == nil {
		return nil
	}
	steps := &corev1.PodList{}
	if err := r.List(ctx, steps, client.InNamespace(ws.Namespace),
		client.MatchingLabels{ergonv1alpha1.LabelWorkspace: naming.LabelValue(ws.Name)}); err != nil {
		return err
	}
	for i := range steps.Items {
		pod := &steps.Items[i]
		if _, bound := pod.Labels[ergonv1alpha1.LabelWorkspaceUID]; bound {
			continue
		}
		if countStep(f, pod) {
			f.LegacySteps++
		}
	}
	return nil
}

// countStep counts a step pod bound to the Workspace as activity, and reports whether it has
// not terminated. Only a Run's pods count: a pod anyone labels does not keep the Workspace up.
func countStep(f *workspace.Facts, pod *corev1.Pod) bool {
	if !shared.RunControlled(pod) {
		return false
	}
	if pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed {
		f.ActiveSteps++
		return true
	}
	for _, c := range pod.Status.ContainerStatuses {
		if t := c.State.Terminated; t != nil && t.FinishedAt.After(f.LastStepFinish) {
			f.LastStepFinish = t.FinishedAt.Time
		}
	}
	return false
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

// act carries out a plan, except for the status, which Reconcile writes. Every delete is
// preconditioned on the UID of the object the plan was made from, so an object made anew under
// the same name meanwhile is not deleted.
func (r *WorkspaceReconciler) act(ctx context.Context, ws *ergonv1alpha1.Workspace, f workspace.Facts, p *workspace.Plan) error {
	logger := log.FromContext(ctx)
	if p.AddFinalizer {
		base := ws.DeepCopy()
		controllerutil.AddFinalizer(ws, ergonv1alpha1.FinalizerWorkspaceVolume)
		if err := r.Patch(ctx, ws, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
			return err
		}
	}
	if err := r.actOnClaim(ctx, ws, f, p); err != nil {
		return err
	}
	if p.Policy != nil {
		if err := r.applyPolicy(ctx, f.Policy, p.Policy); err != nil {
			return err
		}
	}
	if p.LegacyPolicySpec != nil {
		logger.Info("Updating the NetworkPolicy an earlier version made to the spec", "networkPolicy", f.LegacyPolicy.Name)
		updated := f.LegacyPolicy.DeepCopy()
		updated.Spec = *p.LegacyPolicySpec
		if err := r.Update(ctx, updated); err != nil {
			return fmt.Errorf("updating NetworkPolicy %s: %w", updated.Name, err)
		}
	}
	if p.DeletePod && f.Pod != nil {
		if err := r.deleteOwn(ctx, f.Pod, "pod"); err != nil {
			return err
		}
	}
	if p.DeleteLegacyPod && f.LegacyPod != nil {
		if err := r.deleteOwn(ctx, f.LegacyPod, "pod"); err != nil {
			return err
		}
	}
	if p.CreatePod {
		pod := workspace.Pod(ws, r.EntrypointImage, p.Status.ClaimName)
		logger.Info("Creating the Workspace's pod", "pod", pod.Name, "image", ws.Spec.Image)
		if err := r.Create(ctx, pod); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating pod %s: %w", pod.Name, err)
		}
	}
	if p.DeletePolicy && f.Policy != nil {
		if err := r.deleteOwn(ctx, f.Policy, "NetworkPolicy"); err != nil {
			return err
		}
	}
	if p.DeleteLegacyPolicy && f.LegacyPolicy != nil {
		if err := r.deleteOwn(ctx, f.LegacyPolicy, "NetworkPolicy"); err != nil {
			return err
		}
	}
	if p.DeleteClaim && f.Claim != nil {
		if err := r.deleteOwn(ctx, f.Claim, "volume claim (reclaimPolicy Delete)"); err != nil {
			return err
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

// deleteOwn deletes an object the plan found to be the Workspace's.
func (r *WorkspaceReconciler) deleteOwn(ctx context.Context, obj client.Object, what string) error {
	log.FromContext(ctx).Info("Deleting the Workspace's "+what, "name", obj.GetName())
	uid := obj.GetUID()
	if err := r.Delete(ctx, obj, client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting %s %s: %w", what, obj.GetName(), err)
	}
	return nil
}

// actOnClaim creates the Workspace's claim, recording the new claim's UID in the plan's status,
// or sets or takes off the Workspace's owner reference on it.
func (r *WorkspaceReconciler) actOnClaim(ctx context.Context, ws *ergonv1alpha1.Workspace, f workspace.Facts, p *workspace.Plan) error {
	logger := log.FromContext(ctx)
	if p.CreateClaim {
		claim := workspace.Claim(ws)
		logger.Info("Creating the Workspace's volume claim", "claim", claim.Name)
		err := r.Create(ctx, claim)
		switch {
		case err == nil:
			p.Status.ClaimUID = claim.UID
		case !apierrors.IsAlreadyExists(err):
			return fmt.Errorf("creating claim %s: %w", claim.Name, err)
		}
		// Already there: made by an earlier pass whose status write was lost, or by someone
		// else; the next pass reads it and tells which.
	}
	if !p.OwnClaim && !p.ReleaseClaim {
		return nil
	}
	claim := f.Claim.DeepCopy()
	if p.OwnClaim {
		logger.Info("Making the Workspace the owner of its volume claim (reclaimPolicy Delete)", "claim", claim.Name)
		claim.OwnerReferences = append(claim.OwnerReferences, workspace.OwnerRef(ws))
	} else {
		logger.Info("Releasing the Workspace's volume claim from its owner reference (reclaimPolicy Retain)", "claim", claim.Name)
		claim.OwnerReferences = slices.DeleteFunc(claim.OwnerReferences, func(ref metav1.OwnerReference) bool {
			return ref.UID == ws.UID
		})
	}
	if err := r.Patch(ctx, claim, client.MergeFromWithOptions(f.Claim, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return nil // changed meanwhile: decided again on the next pass
		}
		return fmt.Errorf("patching the owner of claim %s: %w", claim.Name, err)
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
