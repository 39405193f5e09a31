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
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

// newPool is a pool of newWorkspace's shape asking for two warm pods.
func newPool() *ergonv1alpha1.WorkspacePool {
	ws := newWorkspace()
	return &ergonv1alpha1.WorkspacePool{
		ObjectMeta: metav1.ObjectMeta{Name: "warm", Namespace: "team", UID: "pool-uid", Generation: 1},
		Spec: ergonv1alpha1.WorkspacePoolSpec{Replicas: 2, Template: ergonv1alpha1.WorkspacePoolTemplate{
			Image: ws.Spec.Image, Resources: ws.Spec.Resources, Storage: ws.Spec.Storage}},
	}
}

// warm is entry n of the pool: its record, and its pod and claim as the pool made them, the pod
// running and the claim bound, made an hour before t0.
func warm(pool *ergonv1alpha1.WorkspacePool, n int) (ergonv1alpha1.WorkspacePoolEntry, *corev1.Pod, *corev1.PersistentVolumeClaim) {
	name := fmt.Sprintf("%s%d", PoolPrefix, n)
	made := metav1.NewTime(t0.Add(-time.Hour))
	pod := PoolPod(pool, entrypointImage, name)
	pod.UID, pod.CreationTimestamp = types.UID("pod-"+name), made
	pod.Status.Phase = corev1.PodRunning
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	claim := PoolClaim(pool)
	claim.Name, claim.UID, claim.CreationTimestamp = name, types.UID("claim-"+name), made
	claim.Status.Phase = corev1.ClaimBound
	return ergonv1alpha1.WorkspacePoolEntry{Name: name, PodUID: pod.UID, ClaimUID: claim.UID}, pod, claim
}

// poolFacts records and holds entries 0..n-1 of the pool, each changed by change(i, ...).
func poolFacts(pool *ergonv1alpha1.WorkspacePool, n int, change func(int, *corev1.Pod, *corev1.PersistentVolumeClaim)) PoolFacts {
	f := PoolFacts{Pool: pool, Now: t0, EntrypointImage: entrypointImage,
		Pods: map[string]*corev1.Pod{}, Claims: map[string]*corev1.PersistentVolumeClaim{}}
	pool.Status.Entries = nil
	for i := range n {
		e, pod, claim := warm(pool, i)
		pool.Status.Entries = append(pool.Status.Entries, e)
		if change != nil {
			change(i, pod, claim)
		}
		if pod != nil && pod.Name != "" {
			f.Pods[e.Name] = pod
		}
		if claim != nil && claim.Name != "" {
			f.Claims[e.Name] = claim
		}
	}
	return f
}

func TestDecidePool(t *testing.T) {
	taker := newWorkspace()
	first := func(change func(*corev1.Pod, *corev1.PersistentVolumeClaim)) func(int, *corev1.Pod, *corev1.PersistentVolumeClaim) {
		return func(i int, pod *corev1.Pod, claim *corev1.PersistentVolumeClaim) {
			if i == 0 {
				change(pod, claim)
			}
		}
	}
	cases := []struct {
		name     string
		replicas int32
		entries  int
		change   func(int, *corev1.Pod, *corev1.PersistentVolumeClaim)
		orphan   *time.Duration // an unrecorded pod the pool controls, this old
		// want
		create, ready, taken, kept int
		deletePods, deleteClaims   []string
		requeue                    time.Duration
	}{
		{name: "empty: makes replicas", replicas: 2, create: 2},
		{name: "full and ready", replicas: 2, entries: 2, ready: 2, kept: 2},
		{name: "many wanted: at most MaxStarting start at once", replicas: 5, create: MaxStarting},
		{name: "many wanted, one starting", replicas: 5, entries: 2, ready: 1, kept: 2, create: MaxStarting - 1,
			change: first(func(pod *corev1.Pod, _ *corev1.PersistentVolumeClaim) { pod.Status.Phase = corev1.PodPending })},
		{name: "one starting", replicas: 2, entries: 2, ready: 1, kept: 2,
			change: first(func(pod *corev1.Pod, _ *corev1.PersistentVolumeClaim) { pod.Status.Phase = corev1.PodPending })},
		{name: "claim not bound yet", replicas: 2, entries: 2, ready: 1, kept: 2,
			change: first(func(_ *corev1.Pod, claim *corev1.PersistentVolumeClaim) { claim.Status.Phase = corev1.ClaimPending })},
		{name: "taken, pod too: counted, replaced", replicas: 2, entries: 2, ready: 1, kept: 1, taken: 1, create: 1,
			change: first(func(pod *corev1.Pod, claim *corev1.PersistentVolumeClaim) { Take(taker, pod); Take(taker, claim) })},
		{name: "claim taken, pod not yet: the pod is left to the Workspace a moment", replicas: 2, entries: 2, ready: 1,
			kept: 1, taken: 1, create: 1, requeue: takeGrace,
			change: first(func(_ *corev1.Pod, claim *corev1.PersistentVolumeClaim) { Take(taker, claim) })},
		{name: "pod failed: both deleted, replaced", replicas: 2, entries: 2, ready: 1, kept: 1, create: 1,
			deletePods: []string{PoolPrefix + "0"}, deleteClaims: []string{PoolPrefix + "0"},
			change: first(func(pod *corev1.Pod, _ *corev1.PersistentVolumeClaim) { pod.Status.Phase = corev1.PodFailed })},
		{name: "pod gone: claim deleted", replicas: 2, entries: 2, ready: 1, kept: 1, create: 1,
			deleteClaims: []string{PoolPrefix + "0"},
			change:       first(func(pod *corev1.Pod, _ *corev1.PersistentVolumeClaim) { pod.Name = "" })},
		{name: "pod of another UID than recorded: not the pool's entry", replicas: 2, entries: 2, ready: 1, kept: 1, create: 1,
			deletePods: []string{PoolPrefix + "0"}, deleteClaims: []string{PoolPrefix + "0"},
			change: first(func(pod *corev1.Pod, _ *corev1.PersistentVolumeClaim) { pod.UID = "planted" })},
		{name: "an older template: both deleted", replicas: 2, entries: 2, ready: 1, kept: 1, create: 1,
			deletePods: []string{PoolPrefix + "0"}, deleteClaims: []string{PoolPrefix + "0"},
			change: first(func(pod *corev1.Pod, _ *corev1.PersistentVolumeClaim) {
				pod.Annotations[AnnotationPodSpecHash] = "older"
			})},
		{name: "claim lost", replicas: 2, entries: 2, ready: 1, kept: 1, create: 1,
			deletePods: []string{PoolPrefix + "0"}, deleteClaims: []string{PoolPrefix + "0"},
			change: first(func(_ *corev1.Pod, claim *corev1.PersistentVolumeClaim) { claim.Status.Phase = corev1.ClaimLost })},
		{name: "fewer replicas: the starting ones go first", replicas: 1, entries: 2, ready: 1, kept: 1,
			deletePods: []string{PoolPrefix + "0"}, deleteClaims: []string{PoolPrefix + "0"},
			change: first(func(pod *corev1.Pod, _ *corev1.PersistentVolumeClaim) { pod.Status.Phase = corev1.PodPending })},
		{name: "none wanted", replicas: 0, entries: 1, deletePods: []string{PoolPrefix + "0"}, deleteClaims: []string{PoolPrefix + "0"}},
		{name: "a young orphan counts as on its way", replicas: 2, entries: 1, ready: 1, kept: 1, orphan: new(10 * time.Second),
			requeue: OrphanGrace - 10*time.Second},
		{name: "an old orphan is deleted", replicas: 2, entries: 1, ready: 1, kept: 1, create: 1, orphan: new(2 * time.Minute),
			deletePods: []string{"orphan"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pool := newPool()
			pool.Spec.Replicas = tc.replicas
			f := poolFacts(pool, tc.entries, tc.change)
			if tc.orphan != nil {
				pod := PoolPod(pool, entrypointImage, "orphan")
				pod.CreationTimestamp = metav1.NewTime(t0.Add(-*tc.orphan))
				f.Pods["orphan"] = pod
			}
			p := DecidePool(f)
			if p.Create != tc.create || int(p.Status.Ready) != tc.ready || int(p.Status.Taken) != tc.taken || len(p.Status.Entries) != tc.kept {
				t.Fatalf("create %d ready %d taken %d kept %d; want %d %d %d %d",
					p.Create, p.Status.Ready, p.Status.Taken, len(p.Status.Entries), tc.create, tc.ready, tc.taken, tc.kept)
			}
			if !slices.Equal(p.DeletePods, tc.deletePods) || !slices.Equal(p.DeleteClaims, tc.deleteClaims) {
				t.Fatalf("deletes pods %v claims %v; want %v %v", p.DeletePods, p.DeleteClaims, tc.deletePods, tc.deleteClaims)
			}
			if p.RequeueAfter != tc.requeue {
				t.Fatalf("requeue after %s, want %s", p.RequeueAfter, tc.requeue)
			}
			wantReady := tc.ready >= int(tc.replicas)
			if got := p.Status.Conditions[0].Status == metav1.ConditionTrue; got != wantReady {
				t.Fatalf("Ready %v, want %v", p.Status.Conditions, wantReady)
			}
		})
	}
}

func TestTakable(t *testing.T) {
	cases := []struct {
		name   string
		change func(*ergonv1alpha1.Workspace, *ergonv1alpha1.WorkspacePool, *corev1.Pod, *corev1.PersistentVolumeClaim)
		why    string
	}{
		{"of the Workspace's shape and ready", nil, ""},
		{"another image", func(ws *ergonv1alpha1.Workspace, _ *ergonv1alpha1.WorkspacePool, _ *corev1.Pod, _ *corev1.PersistentVolumeClaim) {
			ws.Spec.Image = "python:3.14"
		}, "its pod is not the one the Workspace would make"},
		{"another env", func(ws *ergonv1alpha1.Workspace, _ *ergonv1alpha1.WorkspacePool, _ *corev1.Pod, _ *corev1.PersistentVolumeClaim) {
			ws.Spec.Env = []corev1.EnvVar{{Name: "A", Value: "b"}}
		}, "its pod is not the one the Workspace would make"},
		{"more storage", func(ws *ergonv1alpha1.Workspace, _ *ergonv1alpha1.WorkspacePool, _ *corev1.Pod, _ *corev1.PersistentVolumeClaim) {
			ws.Spec.Storage.Size.Add(ws.Spec.Storage.Size)
		}, "its storage differs"},
		{"another storage class", func(ws *ergonv1alpha1.Workspace, _ *ergonv1alpha1.WorkspacePool, _ *corev1.Pod, _ *corev1.PersistentVolumeClaim) {
			ws.Spec.Storage.StorageClassName = new("fast")
		}, "its storage differs"},
		{"a planted pod under the name", func(_ *ergonv1alpha1.Workspace, _ *ergonv1alpha1.WorkspacePool, pod *corev1.Pod, _ *corev1.PersistentVolumeClaim) {
			pod.UID = "planted"
		}, "its pod is not the one the pool made"},
		{"a claim the pool no longer controls", func(_ *ergonv1alpha1.Workspace, _ *ergonv1alpha1.WorkspacePool, _ *corev1.Pod, claim *corev1.PersistentVolumeClaim) {
			Take(newWorkspace(func(o *ergonv1alpha1.Workspace) { o.UID = "other" }), claim)
		}, "its claim is not the one the pool made"},
		{"a pod being deleted", func(_ *ergonv1alpha1.Workspace, _ *ergonv1alpha1.WorkspacePool, pod *corev1.Pod, _ *corev1.PersistentVolumeClaim) {
			pod.DeletionTimestamp = new(metav1.NewTime(t0))
		}, "its pod is not the one the pool made"},
		{"a pod not ready", func(_ *ergonv1alpha1.Workspace, _ *ergonv1alpha1.WorkspacePool, pod *corev1.Pod, _ *corev1.PersistentVolumeClaim) {
			pod.Status.Conditions = nil
		}, "its pod is not ready yet"},
		{"a claim not bound", func(_ *ergonv1alpha1.Workspace, _ *ergonv1alpha1.WorkspacePool, _ *corev1.Pod, claim *corev1.PersistentVolumeClaim) {
			claim.Status.Phase = corev1.ClaimPending
		}, "its claim is not bound yet"},
		{"a pool being deleted", func(_ *ergonv1alpha1.Workspace, pool *ergonv1alpha1.WorkspacePool, _ *corev1.Pod, _ *corev1.PersistentVolumeClaim) {
			pool.DeletionTimestamp = new(metav1.NewTime(t0))
		}, "the pool is being deleted"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ws, pool := newWorkspace(), newPool()
			e, pod, claim := warm(pool, 0)
			if tc.change != nil {
				tc.change(ws, pool, pod, claim)
			}
			ok, why := Takable(ws, pool, e, pod, claim, entrypointImage)
			if ok != (tc.why == "") || why != tc.why {
				t.Fatalf("takable %v (%q), want %q", ok, why, tc.why)
			}
		})
	}
}

func TestPodNameFollowsATakenWarmPodOnly(t *testing.T) {
	ws := newWorkspace()
	if got := PodName(ws); got != ObjectName(ws) {
		t.Fatalf("own pod: %s", got)
	}
	ws.Status.PodName, ws.Status.ClaimName = PoolPrefix+"abc", PoolPrefix+"abc"
	if got := PodName(ws); got != PoolPrefix+"abc" {
		t.Fatalf("warm pod taken: %s", got)
	}
	ws.Status.ClaimUID = ""
	if got := PodName(ws); got != ObjectName(ws) {
		t.Fatalf("claim not recorded: %s", got)
	}
	ws.Status.ClaimUID, ws.Status.PodName = "c", ObjectName(ws)
	if got := PodName(ws); got != ObjectName(ws) {
		t.Fatalf("replaced by its own pod: %s", got)
	}
}

func TestOnlyAFreshWorkspaceWithItsNamesFreeTakesAWarmPod(t *testing.T) {
	fresh := func() *ergonv1alpha1.Workspace {
		return newWorkspace(func(ws *ergonv1alpha1.Workspace) { ws.Status = ergonv1alpha1.WorkspaceStatus{} })
	}
	squatted := NetworkPolicy(fresh(), nil)
	squatted.OwnerReferences = nil
	cases := []struct {
		name string
		f    Facts
		want bool
	}{
		{"new, nothing under its names", Facts{Workspace: fresh()}, true},
		{"new, its own NetworkPolicy made", Facts{Workspace: fresh(), Policy: NetworkPolicy(fresh(), nil)}, true},
		{"new, someone's NetworkPolicy under its name", Facts{Workspace: fresh(), Policy: squatted}, false},
		{"new, a pod under its name", Facts{Workspace: fresh(), Pod: Pod(fresh(), entrypointImage, "x")}, false},
		{"it made its claim before", Facts{Workspace: newWorkspace()}, false},
		{"being deleted", Facts{Workspace: func() *ergonv1alpha1.Workspace {
			ws := fresh()
			ws.DeletionTimestamp = new(metav1.NewTime(t0))
			return ws
		}()}, false},
	}
	for _, tc := range cases {
		if got := Fresh(tc.f); got != tc.want {
			t.Errorf("%s: Fresh %v, want %v", tc.name, got, tc.want)
		}
	}
}
