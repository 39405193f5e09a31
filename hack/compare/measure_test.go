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

package main

import (
	"maps"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func TestEndedCleanly(t *testing.T) {
	ended := func(code int32) corev1.ContainerStatus {
		return corev1.ContainerStatus{State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}}}
	}
	running := corev1.ContainerStatus{State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
	pod := func(phase corev1.PodPhase, restart corev1.RestartPolicy, statuses ...corev1.ContainerStatus) *corev1.Pod {
		p := &corev1.Pod{Spec: corev1.PodSpec{RestartPolicy: restart}, Status: corev1.PodStatus{Phase: phase, ContainerStatuses: statuses}}
		for range statuses {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{})
		}
		return p
	}
	never := corev1.RestartPolicyNever
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{"Running, its one container ended with 0", pod(corev1.PodRunning, never, ended(0)), true},
		{"Running, both containers ended with 0", pod(corev1.PodRunning, never, ended(0), ended(0)), true},
		{"Running, one container still runs", pod(corev1.PodRunning, never, ended(0), running), false},
		{"Running, a container failed", pod(corev1.PodRunning, never, ended(1)), false},
		{"a pod that restarts containers", pod(corev1.PodRunning, corev1.RestartPolicyOnFailure, ended(0)), false},
		{"a container without a status yet", func() *corev1.Pod {
			p := pod(corev1.PodRunning, never, ended(0))
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{})
			return p
		}(), false},
		{"Pending", pod(corev1.PodPending, never), false},
	} {
		if got := endedCleanly(tc.pod); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestWriteKinds(t *testing.T) {
	for _, tc := range []struct {
		series string
		kind   string
		write  bool
	}{
		{`apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="",verb="POST",version="v1"}`, "POST pods", true},
		{`apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="status",verb="PATCH",version="v1"}`, "PATCH pods/status", true},
		{`apiserver_request_total{code="200",component="apiserver",dry_run="",group="ergon.dev",resource="runs",scope="resource",subresource="status",verb="APPLY",version="v1alpha1"}`, "APPLY runs/status", true},
		{`apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="namespace",subresource="",verb="LIST",version="v1"}`, "", false},
		{`apiserver_request_total{code="0",component="apiserver",dry_run="",group="",resource="pods",scope="namespace",subresource="",verb="WATCH",version="v1"}`, "", false},
	} {
		kind, write := writeKind(tc.series)
		if kind != tc.kind || write != tc.write {
			t.Errorf("%s: %q %v, want %q %v", tc.series, kind, write, tc.kind, tc.write)
		}
	}

	before := writeCounts{"POST pods": 10, "PATCH pods/status": 100, "PUT leases": 50}
	after := writeCounts{"POST pods": 30, "PATCH pods/status": 190, "PUT leases": 60, "POST events": 80}
	rate := writeCounts{"PUT leases": 1, "PATCH pods/status": 1}
	got := after.perStep(before, rate, 10*time.Second, 20)
	want := writeCounts{"POST pods": 1, "PATCH pods/status": 4, "POST events": 4}
	if !maps.Equal(got, want) {
		t.Errorf("perStep: %v, want %v", got, want)
	}
	if s := got.String(); s != "PATCH pods/status 4.0, POST events 4.0, POST pods 1.0" {
		t.Errorf("String: %q", s)
	}
	if tot := after.total(); tot != 360 {
		t.Errorf("total: %v, want 360", tot)
	}
}
