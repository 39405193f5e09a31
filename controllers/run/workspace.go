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
	"fmt"
	"maps"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/compile"
	"github.com/ergon-dev/ergon/internal/planner"
	"github.com/ergon-dev/ergon/internal/stepcontract"
	"github.com/ergon-dev/ergon/internal/workspace"
	"github.com/ergon-dev/ergon/internal/wslease"
)

// +kubebuilder:rbac:groups=ergon.dev,resources=workspaces,verbs=get;list;watch
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update

// The pieces of a step pod bound to a Workspace.
const (
	workspaceVolume = workspace.VolumeName
	agentPath       = stepcontract.BinDir + "/agent"
	// annotationLease holds a Workspace lease's state: who holds it and who waits, in order.
	annotationLease = ergonv1alpha1.AnnotationPrefix + "lease"
)

// pinWorkspace records in the Run's status the Workspace its Scene binds, as it is when the
// Run starts, read from the API server: its UID is pinned, and no step of the Run binds to
// another Workspace of the name (planner.WorkspaceFacts). A Workspace that does not exist
// yet, or is being deleted, is pinned by the planner when the Run first sees one.
func (r *RunReconciler) pinWorkspace(ctx context.Context, run *ergonv1alpha1.Run, spec *ergonv1alpha1.SceneSpec) error {
	run.Status.Workspace = nil
	if spec.Workspace == nil {
		return nil
	}
	pin := &ergonv1alpha1.PinnedWorkspace{Name: spec.Workspace.Name}
	ws := &ergonv1alpha1.Workspace{}
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: run.Namespace, Name: pin.Name}, ws)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return err
	case ws.DeletionTimestamp.IsZero():
		pin.UID = ws.UID
	}
	run.Status.Workspace = pin
	return nil
}

// gatherWorkspace reads the Workspace a Run's Scene is bound to and who holds its write lease.
func (r *RunReconciler) gatherWorkspace(ctx context.Context, run *ergonv1alpha1.Run, scene *compile.Scene, f *planner.Facts) error {
	ref := scene.Spec.Workspace
	if ref == nil {
		return nil
	}
	w := &planner.WorkspaceFacts{Name: ref.Name}
	f.Workspace = w
	ws := &ergonv1alpha1.Workspace{}
	err := r.Get(ctx, client.ObjectKey{Namespace: run.Namespace, Name: ref.Name}, ws)
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return err
	}
	w.Object = ws
	lease := &coordinationv1.Lease{}
	err = r.Get(ctx, client.ObjectKey{Namespace: run.Namespace, Name: workspace.ObjectName(ws)}, lease)
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return err
	}
	if !workspace.Controls(ws, lease) {
		w.LeaseConflict = fmt.Sprintf("Lease %s exists and is not Workspace %s's (it does not control it); "+
			"Ergon leaves it alone: delete it, or delete the Workspace and create it again", lease.Name, ws.Name)
		return nil
	}
	state := leaseState(lease)
	if h := state.Holder; h != nil {
		w.Holder, w.HolderRun, w.HolderIsThisRun = h.Pod, h.Run, h.RunUID == string(run.UID)
	}
	w.Lease = planner.LeaseFacts{Exists: true, State: state, Object: lease, Live: map[string]bool{}}
	claims := state.Queue
	if state.Holder != nil {
		claims = append([]wslease.Claim{*state.Holder}, claims...)
	}
	for _, c := range claims {
		if f.Now.Sub(c.Since) >= wslease.Grace {
			w.Lease.Live[c.Pod] = r.claimLive(ctx, run.Namespace, c)
		}
	}
	return nil
}

// leaseState reads the state Ergon keeps on a Workspace's lease; a lease it cannot read is free.
func leaseState(lease *coordinationv1.Lease) wslease.State {
	var s struct {
		Holder *wslease.Claim  `json:"holder,omitempty"`
		Queue  []wslease.Claim `json:"queue,omitempty"`
	}
	_ = json.Unmarshal([]byte(lease.Annotations[annotationLease]), &s)
	return wslease.State{Holder: s.Holder, Queue: s.Queue}
}

// setLeaseState writes the state onto the lease, and the holder where kubectl shows it.
func setLeaseState(lease *coordinationv1.Lease, s wslease.State) {
	b, _ := json.Marshal(struct {
		Holder *wslease.Claim  `json:"holder,omitempty"`
		Queue  []wslease.Claim `json:"queue,omitempty"`
	}{s.Holder, s.Queue}) // plain data: cannot fail
	if lease.Annotations == nil {
		lease.Annotations = map[string]string{}
	}
	lease.Annotations[annotationLease] = string(b)
	lease.Spec.HolderIdentity, lease.Spec.AcquireTime, lease.Spec.RenewTime = nil, nil, nil
	if h := s.Holder; h != nil {
		since := metav1.NewMicroTime(h.Since)
		lease.Spec.HolderIdentity, lease.Spec.AcquireTime, lease.Spec.RenewTime = new(h.Pod), &since, &since
	}
}

// actOnLease writes the Workspace's lease in the state the plan decided (LeaseWrite): over
// the Lease gathered, guarded by its resourceVersion, or into a new one. A write that loses a
// race with another Run's is dropped: the waiting step asks again when the lease changes.
func (a *runActor) actOnLease(ctx context.Context, run *ergonv1alpha1.Run, f *planner.Facts, plan *planner.Plan) error {
	w := f.Workspace
	if plan.LeaseWrite == nil || w == nil || w.Object == nil {
		return nil
	}
	var lease *coordinationv1.Lease
	if w.Lease.Object != nil {
		lease = w.Lease.Object.DeepCopy()
	} else {
		lease = workspaceLease(client.ObjectKey{Namespace: run.Namespace, Name: workspace.ObjectName(w.Object)}, w.Object)
	}
	setLeaseState(lease, plan.LeaseWrite.State)
	var err error
	if w.Lease.Object == nil {
		err = a.Create(ctx, lease)
	} else {
		err = a.Update(ctx, lease)
	}
	if err == nil {
		log.FromContext(ctx).V(1).Info("Wrote the Workspace's lease", "workspace", w.Name, "holder", lease.Spec.HolderIdentity)
	}
	if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) {
		log.FromContext(ctx).V(1).Info("The Workspace's lease changed meanwhile; asking again later", "workspace", w.Name)
		return nil
	}
	return err
}

// claimLive reports whether the Run of a claim still holds or waits for it.
func (r *RunReconciler) claimLive(ctx context.Context, namespace string, c wslease.Claim) bool {
	other := &ergonv1alpha1.Run{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: c.Run}, other); err != nil {
		return !apierrors.IsNotFound(err) // unknown: keep it
	}
	return string(other.UID) == c.RunUID && wslease.Holds(other, c.Pod)
}

// workspaceLease is a new, free write lease of a Workspace, controlled by it: a Lease of the
// name that the Workspace does not control is never used.
func workspaceLease(key client.ObjectKey, ws *ergonv1alpha1.Workspace) *coordinationv1.Lease {
	return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{
		Name: key.Name, Namespace: key.Namespace, Labels: workspace.Labels(ws),
		OwnerReferences: []metav1.OwnerReference{workspace.OwnerRef(ws)},
	}}
}

// runsOfLease maps a Workspace lease to the Runs that hold it or wait for it.
func runsOfLease(_ context.Context, obj client.Object) []reconcile.Request {
	lease, ok := obj.(*coordinationv1.Lease)
	if !ok {
		return nil
	}
	s := leaseState(lease)
	var requests []reconcile.Request
	seen := map[string]bool{}
	add := func(c wslease.Claim) {
		if !seen[c.Run] {
			seen[c.Run] = true
			requests = append(requests, reconcile.Request{NamespacedName: client.ObjectKey{Namespace: lease.Namespace, Name: c.Run}})
		}
	}
	if s.Holder != nil {
		add(*s.Holder)
	}
	for _, c := range s.Queue {
		add(c)
	}
	return requests
}

// workspaceNode is the node a Workspace's pod runs on, where steps bound to it must run too
// when its volume can be attached to one node only; "" when its pod does not run.
func (r *RunReconciler) workspaceNode(ctx context.Context, ws *ergonv1alpha1.Workspace) (string, error) {
	if ws.Status.PodName == "" {
		return "", nil
	}
	pod := &corev1.Pod{}
	// The cache keeps only the pods Runs control whole; the Workspace's is not one.
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: ws.Namespace, Name: ws.Status.PodName}, pod)
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil || pod.Status.Phase != corev1.PodRunning || !pod.DeletionTimestamp.IsZero() {
		return "", err
	}
	return pod.Spec.NodeName, nil
}

// bindToWorkspace turns a step pod into one that works inside a Workspace: it mounts the
// Workspace's volume (the claim its status records as its own) at /workspace (read-only for
// a step that does not write), carries the Workspace's env under its own, runs beside the
// Workspace's pod, hardened as that pod is (workspace.Harden: its user, so files written by
// either belong to the other, and its runtime class), and carries the labels of the
// Workspace's UID, which its NetworkPolicy selects and its controller counts as activity, and
// of its name, for people. An agent step runs in the Workspace's own image, with the
// entrypoint and the agent runtime copied in, so its tools find the user's programs.
func bindToWorkspace(pod *corev1.Pod, step *compile.Step, ws *ergonv1alpha1.Workspace, node string, bins ergonBinaries) {
	writes := planner.WritesWorkspace(step)
	maps.Copy(pod.Labels, workspace.Labels(ws))
	spec := &pod.Spec
	spec.Volumes = append(spec.Volumes, corev1.Volume{Name: workspaceVolume, VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: ws.Status.ClaimName, ReadOnly: !writes},
	}})
	c := &spec.Containers[0]
	c.Env = workspace.StepEnv(ws, c.Env)
	c.VolumeMounts = append(c.VolumeMounts,
		corev1.VolumeMount{Name: workspaceVolume, MountPath: stepcontract.DefaultWorkspace, ReadOnly: !writes})
	if c.WorkingDir == "" {
		c.WorkingDir = stepcontract.DefaultWorkspace
	}
	if node != "" {
		spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}},
			}}},
		}}
	}
	if step.Spec.Agent != nil {
		c.Image, c.ImagePullPolicy = ws.Spec.Image, corev1.PullIfNotPresent
		entrypoint, agent := bins.add(pod, c, true)
		c.Command, c.Args = []string{entrypoint}, []string{entrypointRun, "--", agent}
		c.Resources = *ws.Spec.Resources.DeepCopy()
	}
	workspace.Harden(spec, ws)
}
