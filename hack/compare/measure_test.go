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
	"testing"

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
