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

// Package podsecurity is the one home of the security contexts Ergon's pods run with: step,
// agent and tool call pods, and Workspaces' pods. Each meets the Pod Security "restricted"
// profile, which the pod builders' tests check.
package podsecurity

import (
	corev1 "k8s.io/api/core/v1"
)

// Pod is the pod security context: uid and gid, and fsGroup, so the pod's volumes are that
// user's, never root, and the runtime's default seccomp profile.
func Pod(uid int64) *corev1.PodSecurityContext {
	return &corev1.PodSecurityContext{
		RunAsNonRoot:   new(true),
		RunAsUser:      new(uid),
		RunAsGroup:     new(uid),
		FSGroup:        new(uid),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// Container is the container security context: a read-only root, no privilege escalation,
// every capability dropped, never root, the runtime's default seccomp profile.
func Container() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: new(false),
		ReadOnlyRootFilesystem:   new(true),
		RunAsNonRoot:             new(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}
