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
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

const entrypointImage = "ergon/manager:test"

// newWorkspace is a Workspace created at t0 with a one-hour idle timeout, as stored after its
// first reconcile (finalizer set).
func newWorkspace(opts ...func(*ergonv1alpha1.Workspace)) *ergonv1alpha1.Workspace {
	ws := &ergonv1alpha1.Workspace{
		ObjectMeta: metav1.ObjectMeta{Name: "desk", Namespace: "team", UID: "ws-uid", Generation: 1,
			CreationTimestamp: metav1.NewTime(t0), Finalizers: []string{ergonv1alpha1.FinalizerWorkspaceVolume}},
		Spec: ergonv1alpha1.WorkspaceSpec{User: "alice", Image: "python:3.13",
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}},
			Storage:       ergonv1alpha1.WorkspaceStorage{Size: resource.MustParse("1Gi")},
			IdleTimeout:   &metav1.Duration{Duration: time.Hour},
			ReclaimPolicy: ergonv1alpha1.ReclaimRetain},
	}
	for _, o := range opts {
		o(ws)
	}
	return ws
}

func withPhase(phase ergonv1alpha1.WorkspacePhase, reason string) func(*ergonv1alpha1.Workspace) {
	return func(ws *ergonv1alpha1.Workspace) {
		ws.Status.Phase = phase
		ws.Status.Conditions = []metav1.Condition{{Type: ergonv1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: reason}}
	}
}

func deleting(policy ergonv1alpha1.ReclaimPolicy) func(*ergonv1alpha1.Workspace) {
	return func(ws *ergonv1alpha1.Workspace) {
		ws.Spec.ReclaimPolicy = policy
		ws.DeletionTimestamp = &metav1.Time{Time: t0.Add(time.Minute)}
	}
}

// podOf is the pod the controller made for ws, with the status the kubelet reports.
func podOf(ws *ergonv1alpha1.Workspace, status corev1.PodStatus) *corev1.Pod {
	pod := Pod(ws, entrypointImage)
	pod.Status = status
	return pod
}

var (
	running = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	pulling = corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{Name: Container,
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "Back-off pulling image"}}}}}
)

func ourClaim(ws *ergonv1alpha1.Workspace) *corev1.PersistentVolumeClaim {
	c := Claim(ws)
	c.Status.Phase = corev1.ClaimBound
	return c
}

// settled are the facts of a Workspace whose claim and policy exist.
func settled(ws *ergonv1alpha1.Workspace, now time.Time, pod *corev1.Pod) Facts {
	return Facts{Workspace: ws, Now: now, EntrypointImage: entrypointImage, Pod: pod, Claim: ourClaim(ws), Policy: NetworkPolicy(ws)}
}

func TestDecide(t *testing.T) {
	type want struct {
		phase                                      ergonv1alpha1.WorkspacePhase
		reason                                     string
		createClaim, createPod, deletePod, policy  bool
		deleteClaim, addFinalizer, removeFinalizer bool
		deletePolicy                               bool
		events                                     []string
		requeue                                    time.Duration
	}
	ws := newWorkspace()
	upgraded := newWorkspace(func(w *ergonv1alpha1.Workspace) { w.Spec.Image = "python:3.14"; w.Generation = 2 })
	terminating := podOf(ws, running)
	terminating.DeletionTimestamp = &metav1.Time{Time: t0}
	foreign := podOf(ws, running)
	foreign.OwnerReferences[0].UID = "another-workspace"
	notOurs := ourClaim(ws)
	notOurs.Labels = nil
	lost := ourClaim(ws)
	lost.Status.Phase = corev1.ClaimLost
	crashed := podOf(ws, corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted"})
	looser := NetworkPolicy(ws)
	looser.Spec.Egress = []networkingv1.NetworkPolicyEgressRule{{}}

	for _, tc := range []struct {
		name  string
		facts Facts
		want  want
	}{
		{"a new Workspace gets its finalizer, claim, policy and pod, and is Pending",
			Facts{Workspace: newWorkspace(func(w *ergonv1alpha1.Workspace) { w.Finalizers = nil }), Now: t0, EntrypointImage: entrypointImage},
			want{phase: ergonv1alpha1.WorkspacePending, reason: ergonv1alpha1.ReasonPodPending, addFinalizer: true,
				createClaim: true, createPod: true, policy: true, requeue: time.Hour}},
		{"a starting pod keeps it Pending and nothing is created again",
			settled(ws, t0.Add(time.Minute), podOf(ws, corev1.PodStatus{Phase: corev1.PodPending})),
			want{phase: ergonv1alpha1.WorkspacePending, reason: ergonv1alpha1.ReasonPodPending, requeue: 59 * time.Minute}},
		{"a ready pod makes it Running, announced once",
			settled(ws, t0.Add(time.Minute), podOf(ws, running)),
			want{phase: ergonv1alpha1.WorkspaceRunning, reason: ergonv1alpha1.ReasonPodRunning, events: []string{"Running"}, requeue: 59 * time.Minute}},
		{"a Running Workspace is not announced again",
			settled(newWorkspace(withPhase(ergonv1alpha1.WorkspaceRunning, ergonv1alpha1.ReasonPodRunning)), t0.Add(2*time.Minute), podOf(ws, running)),
			want{phase: ergonv1alpha1.WorkspaceRunning, reason: ergonv1alpha1.ReasonPodRunning, requeue: 58 * time.Minute}},
		{"idle past its timeout, the pod is deleted and the volume stays",
			settled(newWorkspace(withPhase(ergonv1alpha1.WorkspaceRunning, ergonv1alpha1.ReasonPodRunning)), t0.Add(time.Hour), podOf(ws, running)),
			want{phase: ergonv1alpha1.WorkspaceIdle, reason: ergonv1alpha1.ReasonIdle, deletePod: true, events: []string{"Stopping"}}},
		{"without an idle timeout it never stops",
			settled(newWorkspace(func(w *ergonv1alpha1.Workspace) { w.Spec.IdleTimeout = nil }), t0.Add(1000*time.Hour), podOf(ws, running)),
			want{phase: ergonv1alpha1.WorkspaceRunning, reason: ergonv1alpha1.ReasonPodRunning, events: []string{"Running"}}},
		{"a step working on the volume keeps it up and is noted now and then",
			func() Facts {
				f := settled(newWorkspace(withPhase(ergonv1alpha1.WorkspaceRunning, ergonv1alpha1.ReasonPodRunning)), t0.Add(2*time.Hour), podOf(ws, running))
				f.ActiveSteps = 1
				return f
			}(),
			want{phase: ergonv1alpha1.WorkspaceRunning, reason: ergonv1alpha1.ReasonPodRunning, requeue: 5 * time.Minute}},
		{"a step that finished recently counts as use",
			func() Facts {
				f := settled(newWorkspace(withPhase(ergonv1alpha1.WorkspaceRunning, ergonv1alpha1.ReasonPodRunning)), t0.Add(90*time.Minute), podOf(ws, running))
				f.LastStepFinish = t0.Add(80 * time.Minute)
				return f
			}(),
			want{phase: ergonv1alpha1.WorkspaceRunning, reason: ergonv1alpha1.ReasonPodRunning, requeue: 50 * time.Minute}},
		{"Idle and unused, it stays Idle with no pod",
			settled(newWorkspace(withPhase(ergonv1alpha1.WorkspaceIdle, ergonv1alpha1.ReasonIdle)), t0.Add(3*time.Hour), nil),
			want{phase: ergonv1alpha1.WorkspaceIdle, reason: ergonv1alpha1.ReasonIdle}},
		{"a step bound to an Idle Workspace wakes it",
			func() Facts {
				f := settled(newWorkspace(withPhase(ergonv1alpha1.WorkspaceIdle, ergonv1alpha1.ReasonIdle)), t0.Add(3*time.Hour), nil)
				f.ActiveSteps = 1
				return f
			}(),
			want{phase: ergonv1alpha1.WorkspacePending, reason: ergonv1alpha1.ReasonPodPending, createPod: true, events: []string{"Waking"}, requeue: 5 * time.Minute}},
		{"a touch wakes an Idle Workspace",
			settled(newWorkspace(withPhase(ergonv1alpha1.WorkspaceIdle, ergonv1alpha1.ReasonIdle), func(w *ergonv1alpha1.Workspace) {
				w.Annotations = map[string]string{ergonv1alpha1.AnnotationWorkspaceTouch: t0.Add(3 * time.Hour).Format(time.RFC3339)}
			}), t0.Add(3*time.Hour+time.Second), nil),
			want{phase: ergonv1alpha1.WorkspacePending, reason: ergonv1alpha1.ReasonPodPending, createPod: true, events: []string{"Waking"}, requeue: time.Hour - time.Second}},
		{"a touch from the future counts as now, not as a way to keep it up forever",
			settled(newWorkspace(withPhase(ergonv1alpha1.WorkspaceRunning, ergonv1alpha1.ReasonPodRunning), func(w *ergonv1alpha1.Workspace) {
				w.Annotations = map[string]string{ergonv1alpha1.AnnotationWorkspaceTouch: t0.Add(1000 * time.Hour).Format(time.RFC3339)}
			}), t0.Add(time.Minute), podOf(ws, running)),
			want{phase: ergonv1alpha1.WorkspaceRunning, reason: ergonv1alpha1.ReasonPodRunning, requeue: time.Hour}},
		{"a touch that does not parse is ignored",
			settled(newWorkspace(withPhase(ergonv1alpha1.WorkspaceIdle, ergonv1alpha1.ReasonIdle), func(w *ergonv1alpha1.Workspace) {
				w.Annotations = map[string]string{ergonv1alpha1.AnnotationWorkspaceTouch: "yesterday"}
			}), t0.Add(3*time.Hour), nil),
			want{phase: ergonv1alpha1.WorkspaceIdle, reason: ergonv1alpha1.ReasonIdle}},
		{"a new image replaces the pod; the volume stays",
			settled(upgraded, t0.Add(time.Minute), podOf(ws, running)),
			want{phase: ergonv1alpha1.WorkspacePending, reason: ergonv1alpha1.ReasonPodReplacing, deletePod: true, events: []string{"Replacing"}, requeue: 59 * time.Minute}},
		{"while the old pod stops, nothing starts on the volume",
			settled(upgraded, t0.Add(time.Minute), terminating),
			want{phase: ergonv1alpha1.WorkspacePending, reason: ergonv1alpha1.ReasonPodReplacing, requeue: 59 * time.Minute}},
		{"once it is gone, the pod of the new image starts on the same claim",
			settled(upgraded, t0.Add(2*time.Minute), nil),
			want{phase: ergonv1alpha1.WorkspacePending, reason: ergonv1alpha1.ReasonPodPending, createPod: true, requeue: 58 * time.Minute}},
		{"an image that cannot be pulled fails the Workspace until the spec changes",
			settled(ws, t0.Add(time.Minute), podOf(ws, pulling)),
			want{phase: ergonv1alpha1.WorkspaceFailed, reason: ergonv1alpha1.ReasonPodFailed, events: []string{ergonv1alpha1.ReasonPodFailed}, requeue: 59 * time.Minute}},
		{"a pod that stopped (evicted) is deleted to start again",
			settled(ws, t0.Add(time.Minute), crashed),
			want{phase: ergonv1alpha1.WorkspacePending, reason: ergonv1alpha1.ReasonPodPending, deletePod: true, events: []string{"PodStopped"}, requeue: 59 * time.Minute}},
		{"a pod of its name that another Workspace controls is not touched",
			settled(ws, t0.Add(time.Minute), foreign),
			want{phase: ergonv1alpha1.WorkspaceFailed, reason: ergonv1alpha1.ReasonNameConflict, events: []string{ergonv1alpha1.ReasonNameConflict}, requeue: time.Minute}},
		{"a pod of its name that a deleted Workspace left is waited for",
			func() Facts {
				f := settled(ws, t0.Add(time.Minute), foreign.DeepCopy())
				f.Pod.DeletionTimestamp = &metav1.Time{Time: t0}
				return f
			}(),
			want{phase: ergonv1alpha1.WorkspacePending, reason: ergonv1alpha1.ReasonPodPending, requeue: 6 * time.Second}},
		{"a claim of its name that Ergon did not make is not mounted",
			func() Facts { f := settled(ws, t0, nil); f.Claim = notOurs; return f }(),
			want{phase: ergonv1alpha1.WorkspaceFailed, reason: ergonv1alpha1.ReasonClaimConflict, events: []string{ergonv1alpha1.ReasonClaimConflict}, requeue: time.Minute}},
		{"a claim that lost its volume fails the Workspace",
			func() Facts { f := settled(ws, t0, podOf(ws, running)); f.Claim = lost; return f }(),
			want{phase: ergonv1alpha1.WorkspaceFailed, reason: ergonv1alpha1.ReasonVolumeLost, events: []string{ergonv1alpha1.ReasonVolumeLost}, requeue: time.Minute}},
		{"a NetworkPolicy changed by hand is put back",
			func() Facts { f := settled(ws, t0.Add(time.Minute), podOf(ws, running)); f.Policy = looser; return f }(),
			want{phase: ergonv1alpha1.WorkspaceRunning, reason: ergonv1alpha1.ReasonPodRunning, policy: true, events: []string{"Running"}, requeue: 59 * time.Minute}},
		{"deleted with Retain, the claim stays and the finalizer goes",
			settled(newWorkspace(deleting(ergonv1alpha1.ReclaimRetain)), t0.Add(time.Minute), podOf(ws, running)),
			want{removeFinalizer: true, deletePod: true, deletePolicy: true, events: []string{"VolumeRetained"}}},
		{"deleted with Delete, the pod and the claim go with it",
			settled(newWorkspace(deleting(ergonv1alpha1.ReclaimDelete)), t0.Add(time.Minute), podOf(ws, running)),
			want{removeFinalizer: true, deletePod: true, deletePolicy: true, deleteClaim: true, events: []string{"VolumeDeleted"}}},
		{"deleted with Delete, a claim Ergon did not make stays",
			func() Facts {
				f := settled(newWorkspace(deleting(ergonv1alpha1.ReclaimDelete)), t0.Add(time.Minute), nil)
				f.Claim = notOurs
				return f
			}(),
			want{removeFinalizer: true, deletePolicy: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Decide(tc.facts)
			got := want{phase: p.Status.Phase, createClaim: p.CreateClaim, createPod: p.CreatePod, deletePod: p.DeletePod,
				policy: p.Policy != nil, deleteClaim: p.DeleteClaim, addFinalizer: p.AddFinalizer, removeFinalizer: p.RemoveFinalizer, deletePolicy: p.DeletePolicy,
				requeue: p.RequeueAfter}
			if c := meta.FindStatusCondition(p.Status.Conditions, ergonv1alpha1.ConditionReady); c != nil {
				got.reason = c.Reason
			}
			for _, e := range p.Events {
				got.events = append(got.events, e.Reason)
			}
			if !equalWant(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v\nconditions %+v", got, tc.want, p.Status.Conditions)
			}
		})
	}
}

func equalWant[T any](a, b T) bool {
	return fmtValue(a) == fmtValue(b)
}

func fmtValue(v any) string { return fmt.Sprintf("%+v", v) }
