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
	"github.com/ergon-dev/ergon/internal/naming"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

const entrypointImage = "ergon/manager:test"

// newWorkspace is a Workspace created at t0 with a one-hour idle timeout, as stored after its
// first reconcile (finalizer set, its claim's UID recorded).
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
		Status: ergonv1alpha1.WorkspaceStatus{ClaimName: naming.WorkspaceObjectName("ws-uid"), ClaimUID: claimUID},
	}
	for _, o := range opts {
		o(ws)
	}
	return ws
}

// claimUID is the UID of the claim the controller made for newWorkspace.
const claimUID = "claim-uid"

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
	pod := Pod(ws, entrypointImage, ClaimName(ws))
	pod.Status = status
	return pod
}

var (
	running = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	pulling = corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{Name: Container,
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "Back-off pulling image"}}}}}
)

// ourClaim is the claim the controller made for ws, once settled: controlled by the Workspace
// with reclaimPolicy Delete, released (no owner) with Retain.
func ourClaim(ws *ergonv1alpha1.Workspace) *corev1.PersistentVolumeClaim {
	c := Claim(ws)
	c.UID = claimUID
	c.Status.Phase = corev1.ClaimBound
	if ws.Spec.ReclaimPolicy != ergonv1alpha1.ReclaimDelete {
		c.OwnerReferences = nil
	}
	return c
}

// settled are the facts of a Workspace whose claim and policy exist.
func settled(ws *ergonv1alpha1.Workspace, now time.Time, pod *corev1.Pod) Facts {
	return Facts{Workspace: ws, Now: now, EntrypointImage: entrypointImage, Pod: pod, Claim: ourClaim(ws), Policy: NetworkPolicy(ws, nil)}
}

func TestDecide(t *testing.T) {
	type want struct {
		phase                                      ergonv1alpha1.WorkspacePhase
		reason                                     string
		createClaim, createPod, deletePod, policy  bool
		deleteClaim, addFinalizer, removeFinalizer bool
		deletePolicy                               bool
		ownClaim, releaseClaim                     bool
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
	notOurs.UID = "someone-elses"
	lost := ourClaim(ws)
	lost.Status.Phase = corev1.ClaimLost
	foreignClaim := Claim(ws)
	foreignClaim.UID = claimUID
	foreignClaim.OwnerReferences[0].UID = "another-workspace"
	crashed := podOf(ws, corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted"})
	looser := NetworkPolicy(ws, nil)
	looser.Spec.Egress = []networkingv1.NetworkPolicyEgressRule{{}}

	for _, tc := range []struct {
		name  string
		facts Facts
		want  want
	}{
		{"a new Workspace gets its finalizer, claim, policy and pod, and is Pending",
			Facts{Workspace: newWorkspace(func(w *ergonv1alpha1.Workspace) {
				w.Finalizers, w.Status = nil, ergonv1alpha1.WorkspaceStatus{}
			}), Now: t0, EntrypointImage: entrypointImage},
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
		{"a pod of its name that someone else made, being deleted, is waited for",
			func() Facts {
				f := settled(ws, t0.Add(time.Minute), foreign.DeepCopy())
				f.Pod.DeletionTimestamp = &metav1.Time{Time: t0}
				return f
			}(),
			want{phase: ergonv1alpha1.WorkspacePending, reason: ergonv1alpha1.ReasonPodPending, requeue: 6 * time.Second}},
		{"a claim of its name whose UID it did not record, and which it does not control, is not mounted",
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
		{"deleted with Delete, a claim of its name that is not its own stays",
			func() Facts {
				f := settled(newWorkspace(deleting(ergonv1alpha1.ReclaimDelete)), t0.Add(time.Minute), nil)
				f.Claim = notOurs
				return f
			}(),
			want{removeFinalizer: true, deletePolicy: true, events: []string{"VolumeRetained"}}},
		{"deleted with Delete, a claim of its name that another Workspace controls stays",
			func() Facts {
				f := settled(newWorkspace(deleting(ergonv1alpha1.ReclaimDelete)), t0.Add(time.Minute), nil)
				f.Claim = foreignClaim
				return f
			}(),
			want{removeFinalizer: true, deletePolicy: true, events: []string{"VolumeRetained"}}},
		{"deleted with Retain before its claim was released, the claim is released",
			func() Facts {
				ws := newWorkspace(deleting(ergonv1alpha1.ReclaimRetain))
				f := settled(ws, t0.Add(time.Minute), nil)
				f.Claim = Claim(ws)
				return f
			}(),
			want{removeFinalizer: true, deletePolicy: true, releaseClaim: true, events: []string{"VolumeRetained"}}},
		{"with Retain, the claim it made is released once its UID is recorded",
			func() Facts {
				f := settled(ws, t0.Add(time.Minute), podOf(ws, running))
				f.Claim = Claim(ws)
				f.Claim.UID = claimUID
				return f
			}(),
			want{phase: ergonv1alpha1.WorkspaceRunning, reason: ergonv1alpha1.ReasonPodRunning, releaseClaim: true,
				events: []string{"Running"}, requeue: 59 * time.Minute}},
		{"with Retain, a claim it made in a pass whose status write was lost is known by its owner, and kept so",
			func() Facts {
				w := newWorkspace(func(w *ergonv1alpha1.Workspace) { w.Status.ClaimUID = "" })
				f := settled(w, t0.Add(time.Minute), podOf(w, running))
				f.Claim = Claim(w)
				f.Claim.UID = "made-last-pass"
				return f
			}(),
			want{phase: ergonv1alpha1.WorkspaceRunning, reason: ergonv1alpha1.ReasonPodRunning,
				events: []string{"Running"}, requeue: 59 * time.Minute}},
		{"with Delete, the Workspace becomes its claim's controller",
			func() Facts {
				w := newWorkspace(func(w *ergonv1alpha1.Workspace) { w.Spec.ReclaimPolicy = ergonv1alpha1.ReclaimDelete })
				f := settled(w, t0.Add(time.Minute), podOf(w, running))
				f.Claim.OwnerReferences = nil
				return f
			}(),
			want{phase: ergonv1alpha1.WorkspaceRunning, reason: ergonv1alpha1.ReasonPodRunning, ownClaim: true,
				events: []string{"Running"}, requeue: 59 * time.Minute}},
		{"a claim of its name that another Workspace controls is not mounted, even with the UID it recorded",
			func() Facts { f := settled(ws, t0, nil); f.Claim = foreignClaim; return f }(),
			want{phase: ergonv1alpha1.WorkspaceFailed, reason: ergonv1alpha1.ReasonClaimConflict, events: []string{ergonv1alpha1.ReasonClaimConflict}, requeue: time.Minute}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Decide(tc.facts)
			got := want{phase: p.Status.Phase, createClaim: p.CreateClaim, createPod: p.CreatePod, deletePod: p.DeletePod,
				policy: p.Policy != nil, deleteClaim: p.DeleteClaim, addFinalizer: p.AddFinalizer, removeFinalizer: p.RemoveFinalizer, deletePolicy: p.DeletePolicy,
				ownClaim: p.OwnClaim, releaseClaim: p.ReleaseClaim, requeue: p.RequeueAfter}
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

// legacy is a Workspace an earlier version made and ran: its status names the claim that
// version named after the user, with no UID, and its pod and NetworkPolicy carry that name.
func legacy(reason string) Facts {
	ws := newWorkspace(withPhase(ergonv1alpha1.WorkspaceRunning, reason), func(w *ergonv1alpha1.Workspace) {
		w.Status.ClaimName, w.Status.ClaimUID = naming.LegacyWorkspaceName("alice"), ""
	})
	old := naming.LegacyWorkspaceName("alice")
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: old, Namespace: "team", UID: "legacy-claim",
		Labels: map[string]string{ergonv1alpha1.LabelManagedBy: ergonv1alpha1.ManagedByErgon}},
		Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound}}
	pod := podOf(ws, running)
	pod.Name = old
	pod.Labels = map[string]string{ergonv1alpha1.LabelWorkspace: "desk"}
	policy := NetworkPolicy(ws, nil)
	policy.Name = old
	policy.Spec.PodSelector = metav1.LabelSelector{MatchLabels: map[string]string{ergonv1alpha1.LabelWorkspace: "desk"}}
	return Facts{Workspace: ws, Now: t0.Add(time.Minute), EntrypointImage: entrypointImage,
		Claim: claim, LegacyPod: pod, LegacyPolicy: policy, LegacySteps: 1, ActiveSteps: 1}
}

func TestAWorkspaceOfAnEarlierVersionMovesOntoItsOwnNames(t *testing.T) {
	t.Run("it takes over the claim its status names, once, and replaces the pod named after the user", func(t *testing.T) {
		f := legacy(ergonv1alpha1.ReasonPodRunning)
		if ClaimName(f.Workspace) != f.Claim.Name {
			t.Fatalf("reads claim %s, want the one its status names, %s", ClaimName(f.Workspace), f.Claim.Name)
		}
		p := Decide(f)
		if p.Status.ClaimName != f.Claim.Name || p.Status.ClaimUID != "legacy-claim" || p.CreateClaim {
			t.Errorf("claim %s (UID %s), create %v: want the earlier claim taken over, files and all", p.Status.ClaimName,
				p.Status.ClaimUID, p.CreateClaim)
		}
		if !p.DeleteLegacyPod || p.CreatePod || p.Status.Phase != ergonv1alpha1.WorkspacePending {
			t.Errorf("delete the old pod %v, create %v, phase %s: want the old pod deleted first", p.DeleteLegacyPod, p.CreatePod, p.Status.Phase)
		}
		if p.Policy == nil || p.DeleteLegacyPolicy || p.LegacyPolicySpec == nil {
			t.Errorf("policy %v, delete the old one %v, old one changed %v: want a policy of its own, and the old one kept "+
				"for the old step pods, over them alone", p.Policy != nil, p.DeleteLegacyPolicy, p.LegacyPolicySpec != nil)
		}
	})
	t.Run("once the old pod is gone, a pod of its own name starts on the claim it took over", func(t *testing.T) {
		f := legacy(ergonv1alpha1.ReasonPodReplacing)
		f.Workspace.Status.ClaimUID = "legacy-claim"
		f.LegacyPod = nil
		p := Decide(f)
		if !p.CreatePod || p.Status.PodName != naming.WorkspaceObjectName("ws-uid") {
			t.Fatalf("create %v pod %s, want the pod of the Workspace's own name", p.CreatePod, p.Status.PodName)
		}
		if pod := Pod(f.Workspace, entrypointImage, p.Status.ClaimName); pod.Spec.Volumes[1].PersistentVolumeClaim.ClaimName != f.Claim.Name {
			t.Errorf("the new pod mounts %v", pod.Spec.Volumes[1])
		}
	})
	t.Run("the old policy goes once the old step pods ended", func(t *testing.T) {
		f := legacy(ergonv1alpha1.ReasonPodRunning)
		f.LegacyPod, f.LegacySteps, f.ActiveSteps = nil, 0, 0
		if p := Decide(f); !p.DeleteLegacyPolicy {
			t.Error("the old policy is kept with no pod left for it")
		}
	})
	t.Run("a second Workspace of the user, which that version failed, does not take the claim over", func(t *testing.T) {
		f := legacy(ergonv1alpha1.ReasonNameConflict)
		if ClaimName(f.Workspace) != naming.WorkspaceObjectName("ws-uid") {
			t.Errorf("reads claim %s, want a claim of its own name", ClaimName(f.Workspace))
		}
		if p := Decide(f); p.Status.ClaimUID == "legacy-claim" {
			t.Error("it took over the claim of another Workspace of the user")
		}
	})
	t.Run("a claim of the old name that Ergon did not make is not taken over", func(t *testing.T) {
		f := legacy(ergonv1alpha1.ReasonPodRunning)
		f.Claim.Labels = nil
		if p := Decide(f); p.Status.ClaimUID == "legacy-claim" || p.Status.Phase != ergonv1alpha1.WorkspaceFailed {
			t.Errorf("claim UID %s, phase %s: want ClaimConflict", p.Status.ClaimUID, p.Status.Phase)
		}
	})
	t.Run("a Workspace whose status records a UID never takes over a claim by name", func(t *testing.T) {
		f := legacy(ergonv1alpha1.ReasonPodRunning)
		f.Workspace.Status.ClaimUID = "its-own"
		if p := Decide(f); p.Status.ClaimUID == "legacy-claim" {
			t.Error("a claim of the recorded name with another UID was taken over")
		}
	})
}
