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
	"fmt"
	"io"
	"os"
	"strings"
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

// TestArgoTuning checks that the installed controller carries the scaling advice, and that
// -tuned=false installs Argo as it comes.
func TestArgoTuning(t *testing.T) {
	in := `apiVersion: apps/v1
kind: Deployment
metadata:
  name: workflow-controller
spec:
  template:
    spec:
      containers:
      - name: workflow-controller
        image: quay.io/argoproj/workflow-controller:latest
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: workflow-controller-configmap
`
	for _, tuned := range []bool{true, false} {
		out := renderArgo(t, in, fmt.Sprintf("-tuned=%t", tuned))
		for _, want := range []string{"DEFAULT_REQUEUE_TIME", "--qps", "resourceRateLimit"} {
			if strings.Contains(out, want) != tuned {
				t.Errorf("tuned=%t: %q in the manifests is %t:\n%s", tuned, want, !tuned, out)
			}
		}
	}
}

// renderArgo runs argo-manifests on in, with its stdin and stdout swapped for pipes.
func renderArgo(t *testing.T, in string, extra ...string) string {
	t.Helper()
	stdin, stdout := os.Stdin, os.Stdout
	defer func() { os.Stdin, os.Stdout = stdin, stdout }()
	inR, inW, _ := os.Pipe()
	outR, outW, _ := os.Pipe()
	go func() { _, _ = inW.WriteString(in); _ = inW.Close() }()
	os.Stdin, os.Stdout = inR, outW
	done := make(chan string)
	go func() { b, _ := io.ReadAll(outR); done <- string(b) }()
	err := argoManifests(append([]string{"-controller-image", "c:1", "-executor-image", "e:1"}, extra...))
	_ = outW.Close()
	if err != nil {
		t.Fatal(err)
	}
	return <-done
}
