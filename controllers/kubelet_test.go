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
	"bytes"
	"context"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/outputs"
)

// outcome is what the test kubelet does with a running step pod.
type outcome struct {
	// Stay keeps the pod running.
	Stay     bool
	ExitCode int32
	Output   string
	// Reason fails the pod the way the kubelet does, e.g. DeadlineExceeded, with Message
	// (the kubelet's deadline message when empty).
	Reason, Message string
	// OOM kills the step's container for memory, as the kernel and the kubelet do.
	OOM bool
	// Transcript, FailReason and FailMessage are what the agent runtime leaves.
	Transcript              string
	FailReason, FailMessage string
	// LoseLog drops the container log, as log rotation may.
	LoseLog bool
}

// script decides the outcome of a pod from its rendered command.
type script func(pod *corev1.Pod) outcome

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

// holding keeps a pod from starting: it returns the status the kubelet and scheduler would
// report for it (an image that cannot be pulled, a missing Secret), or nil to let it start.
type holding func(pod *corev1.Pod) *corev1.PodStatus

// kubelet plays the kubelet for the step pods of the namespaces it has a script for.
type kubelet struct {
	mu      sync.Mutex
	scripts map[string]script
	holds   map[string]holding
}

var testKubelet = &kubelet{scripts: map[string]script{}, holds: map[string]holding{}}

// hold keeps the pods of a namespace from starting as h says; nil lets them start.
func (k *kubelet) hold(namespace string, h holding) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.holds[namespace] = h
}

func (k *kubelet) holding(namespace string) holding {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.holds[namespace]
}

func (k *kubelet) use(namespace string, s script) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.scripts[namespace] = s
}

func (k *kubelet) script(namespace string) script {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.scripts[namespace]
}

// run moves pods until ctx ends.
func (k *kubelet) run(ctx context.Context) {
	defer GinkgoRecover()
	for ctx.Err() == nil {
		pods := &corev1.PodList{}
		if err := k8sClient.List(ctx, pods, client.HasLabels{ergonv1alpha1.LabelAttempt}); err == nil {
			for i := range pods.Items {
				k.step(ctx, &pods.Items[i])
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (k *kubelet) step(ctx context.Context, pod *corev1.Pod) {
	s := k.script(pod.Namespace)
	if s == nil || !pod.DeletionTimestamp.IsZero() {
		return
	}
	now := metav1.Now()
	switch pod.Status.Phase {
	case "", corev1.PodPending:
		if h := k.holding(pod.Namespace); h != nil {
			if held := h(pod); held != nil {
				held.QOSClass = pod.Status.QOSClass // the API server's, not the kubelet's
				if equality.Semantic.DeepEqual(&pod.Status, held) {
					return
				}
				pod.Status = *held
				break
			}
		}
		pod.Status.Phase = corev1.PodRunning
		pod.Status.ContainerStatuses = []corev1.ContainerStatus{{
			Name: stepContainer, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
		}}
	case corev1.PodRunning:
		o := s(pod)
		if o.Stay {
			return
		}
		if o.Reason != "" {
			pod.Status.Phase, pod.Status.Reason = corev1.PodFailed, o.Reason
			pod.Status.Message = o.Message
			if o.Message == "" {
				pod.Status.Message = "Pod was active on the node longer than the specified deadline"
			}
			break
		}
		if o.OOM {
			// No report: the kernel killed the whole container, the entrypoint with it.
			started := pod.Status.ContainerStatuses[0].State.Running.StartedAt
			pod.Status.Phase = corev1.PodFailed
			pod.Status.ContainerStatuses = []corev1.ContainerStatus{{
				Name: stepContainer, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
					ExitCode: 137, Reason: "OOMKilled", StartedAt: started, FinishedAt: now,
				}},
			}}
			break
		}
		var log bytes.Buffer
		log.WriteString("the command's own output\n")
		res := outputs.Result{Output: []byte(o.Output), ExitCode: int(o.ExitCode), Reason: o.FailReason, Message: o.FailMessage}
		if o.Transcript != "" {
			res.Transcript = []byte(o.Transcript)
		}
		report, err := outputs.WriteResult(&log, res)
		if err != nil {
			return
		}
		if o.LoseLog {
			log.Reset()
		}
		logs.write(pod.Namespace, pod.Name, log.Bytes())
		pod.Status.Phase = corev1.PodSucceeded
		if o.ExitCode != 0 {
			pod.Status.Phase = corev1.PodFailed
		}
		started := pod.Status.ContainerStatuses[0].State.Running.StartedAt
		pod.Status.ContainerStatuses = []corev1.ContainerStatus{{
			Name: stepContainer, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: o.ExitCode, Message: string(report), StartedAt: started, FinishedAt: now,
			}},
		}}
	default:
		return
	}
	_ = k8sClient.Status().Update(ctx, pod)
}
