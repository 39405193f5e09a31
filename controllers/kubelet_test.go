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

package controllers

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	"github.com/ergon-dev/ergon/controllers/internal/shared"
	"github.com/ergon-dev/ergon/test/testenv"
)

// The test kubelet (internal/testenv) plays the kubelet for the step pods of the namespaces it
// has a script for; the names below keep the specs short.
type (
	outcome = testenv.Outcome
	script  = testenv.Script
	holding = testenv.Holding
)

var (
	testKubelet = kubelet{testenv.NewKubelet(shared.StepContainer)}
	// logs are the container logs the test kubelet wrote, which the Run controller reads.
	logs = testKubelet.Logs
)

// kubelet is the test kubelet, with the verbs the specs use.
type kubelet struct{ *testenv.Kubelet }

// use runs the pods of a namespace by s.
func (k kubelet) use(namespace string, s script) { k.Use(namespace, s) }

// hold keeps the pods of a namespace from starting as h says; nil lets them start.
func (k kubelet) hold(namespace string, h holding) { k.Hold(namespace, h) }

// run moves pods until ctx ends.
func (k kubelet) run(ctx context.Context) { k.Run(ctx) }

// echoLastArg succeeds with the step's last argument as its output: templates in it show up
// rendered in the output.
func echoLastArg(pod *corev1.Pod) outcome {
	args := stepArgs(pod)
	return outcome{Output: args[len(args)-1]}
}

// stepArgs is the user's command as rendered, without Ergon's entrypoint.
func stepArgs(pod *corev1.Pod) []string {
	return pod.Spec.Containers[0].Args[2:]
}
