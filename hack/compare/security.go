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
	corev1 "k8s.io/api/core/v1"
)

// Every pod of every engine runs under the restricted Pod Security Standard.
func restrictedPod() *corev1.PodSecurityContext {
	return &corev1.PodSecurityContext{RunAsNonRoot: new(true), RunAsUser: new(int64(65532)),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}
}

func restrictedContainer() *corev1.SecurityContext {
	return &corev1.SecurityContext{AllowPrivilegeEscalation: new(false),
		Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}
}

// toMap turns a typed object into the map an unstructured object holds.
func toMap(v any) map[string]any {
	m, err := runtimeToUnstructured(v)
	if err != nil {
		panic(err)
	}
	return m
}
