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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestArgoTasksFitArgosLimit(t *testing.T) {
	for _, tc := range []struct {
		w     workload
		tasks int
		loop  bool
	}{
		{fanOut(100), 100, false},
		{fanOut(argoMaxTasks), argoMaxTasks, false},
		{fanOut(500), 1, true},
		{chain(20, false), 20, false},
		{diamonds(50), 4, false},
	} {
		tasks := argoTasks(tc.w)
		_, loop := tasks[0].(map[string]any)["withSequence"]
		if len(tasks) != tc.tasks || loop != tc.loop {
			t.Errorf("%s: %d tasks (looped %v), want %d (looped %v)", tc.w.name, len(tasks), loop, tc.tasks, tc.loop)
		}
	}
}

func TestArgoKeyNamesTheStep(t *testing.T) {
	for node, want := range map[string]string{
		"g000.s042":      "s042",
		"g000.s(3:s003)": "s003",
		"g007.d":         "d",
	} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
			Labels:      map[string]string{"workflows.argoproj.io/workflow": node[:4]},
			Annotations: map[string]string{"workflows.argoproj.io/node-name": node}}}
		g, step, ok := argo{}.key(pod)
		if !ok || g != node[:4] || step != want {
			t.Errorf("%s: got %s/%s (%v), want %s/%s", node, g, step, ok, node[:4], want)
		}
	}
}
