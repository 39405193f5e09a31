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

package testenv

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/outputs/wire"
)

// Outcome is what the simulated kubelet does with a running step pod.
type Outcome struct {
	// Stay keeps the pod running.
	Stay     bool
	ExitCode int32
	// Output is the step's output, reported as Ergon's entrypoint does.
	Output string
	// Log is what the command writes to its log before the report; a line of its own when empty.
	Log string
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
	// Lingering keeps the pod Running once its container ended, as the kubelet does until it
	// has stopped the pod's sandbox; here it never does.
	Lingering bool
	// Signaled reports, as the entrypoint does, that the command was asked to stop before it
	// ended.
	Signaled bool
	// Artifacts are the artifacts the entrypoint reports it wrote.
	Artifacts []wire.Artifact
}

// Script decides the outcome of a running step pod.
type Script func(pod *corev1.Pod) Outcome

// Holding keeps a pod from starting: it returns the status the kubelet and scheduler would
// report for it (an image that cannot be pulled, a missing Secret), or nil to let it start.
type Holding func(pod *corev1.Pod) *corev1.PodStatus

// Kubelet plays the kubelet, which envtest lacks, for the step pods of the namespaces it has
// a Script for: it moves them from Pending to Running to an end, and writes their log and
// termination message exactly as Ergon's entrypoint does (internal/outputs/wire).
type Kubelet struct {
	// Client moves the pods; set it before Run.
	Client client.Client
	// Container is the name of the step's container in a step pod.
	Container string
	// Logs keeps the logs the step pods wrote.
	Logs *Logs

	mu      sync.Mutex
	scripts map[string]Script
	holds   map[string]Holding
}

// NewKubelet returns a kubelet for step pods whose step container is named container.
func NewKubelet(container string) *Kubelet {
	return &Kubelet{Container: container, Logs: &Logs{logs: map[string][]byte{}},
		scripts: map[string]Script{}, holds: map[string]Holding{}}
}

// Use runs the pods of a namespace by s.
func (k *Kubelet) Use(namespace string, s Script) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.scripts[namespace] = s
}

// Hold keeps the pods of a namespace from starting as h says; nil lets them start.
func (k *Kubelet) Hold(namespace string, h Holding) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.holds[namespace] = h
}

func (k *Kubelet) lookup(namespace string) (Script, Holding) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.scripts[namespace], k.holds[namespace]
}

// Run moves pods until ctx ends.
func (k *Kubelet) Run(ctx context.Context) {
	for ctx.Err() == nil {
		pods := &corev1.PodList{}
		if err := k.Client.List(ctx, pods, client.HasLabels{ergonv1alpha1.LabelAttempt}); err == nil {
			for i := range pods.Items {
				k.step(ctx, &pods.Items[i])
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (k *Kubelet) step(ctx context.Context, pod *corev1.Pod) {
	s, h := k.lookup(pod.Namespace)
	if s == nil || !pod.DeletionTimestamp.IsZero() {
		return
	}
	now := metav1.Now()
	switch pod.Status.Phase {
	case "", corev1.PodPending:
		if h != nil {
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
			Name: k.Container, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
		}}
	case corev1.PodRunning:
		if cs := pod.Status.ContainerStatuses; len(cs) > 0 && cs[0].State.Terminated != nil {
			return // a Lingering pod: it has ended already
		}
		if !k.end(pod, s(pod), now) {
			return
		}
	default:
		return
	}
	_ = k.Client.Status().Update(ctx, pod)
}

// end ends a running pod as the outcome says, and reports whether it changed it.
func (k *Kubelet) end(pod *corev1.Pod, o Outcome, now metav1.Time) bool {
	if o.Stay {
		return false
	}
	if o.Reason != "" {
		pod.Status.Phase, pod.Status.Reason = corev1.PodFailed, o.Reason
		pod.Status.Message = o.Message
		if o.Message == "" {
			pod.Status.Message = "Pod was active on the node longer than the specified deadline"
		}
		return true
	}
	var started metav1.Time
	if cs := pod.Status.ContainerStatuses; len(cs) > 0 && cs[0].State.Running != nil {
		started = cs[0].State.Running.StartedAt
	}
	if o.OOM {
		// No report: the kernel killed the whole container, the entrypoint with it.
		pod.Status.Phase = corev1.PodFailed
		pod.Status.ContainerStatuses = []corev1.ContainerStatus{{
			Name: k.Container, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: 137, Reason: "OOMKilled", StartedAt: started, FinishedAt: now,
			}},
		}}
		return true
	}
	var log bytes.Buffer
	if o.Log == "" {
		o.Log = "the command's own output\n"
	}
	log.WriteString(o.Log)
	res := wire.Result{Output: []byte(o.Output), ExitCode: int(o.ExitCode), Reason: o.FailReason, Message: o.FailMessage,
		Signaled: o.Signaled, Artifacts: o.Artifacts}
	if o.Transcript != "" {
		res.Transcript = []byte(o.Transcript)
	}
	report, err := wire.WriteResult(&log, res)
	if err != nil {
		return false
	}
	if o.LoseLog {
		log.Reset()
	}
	k.Logs.Write(pod.Namespace, pod.Name, log.Bytes())
	switch {
	case o.Lingering:
	case o.ExitCode != 0:
		pod.Status.Phase = corev1.PodFailed
	default:
		pod.Status.Phase = corev1.PodSucceeded
	}
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{
		Name: k.Container, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: o.ExitCode, Message: string(report), StartedAt: started, FinishedAt: now,
		}},
	}}
	return true
}

// Logs keeps the container logs the simulated kubelet wrote, and serves them as the kubelet
// does: the Run controller reads their end (PodLogs, controllers/internal/shared).
type Logs struct {
	mu   sync.Mutex
	logs map[string][]byte
	// fail counts the reads of a pod's log still to fail, by namespace/pod.
	fail map[string]int
}

// FailReads makes the next n reads of a pod's log fail, as reads through a kubelet that does
// not answer do.
func (l *Logs) FailReads(namespace, pod string, n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fail == nil {
		l.fail = map[string]int{}
	}
	l.fail[namespace+"/"+pod] = n
}

// Write stores the whole log of a pod.
func (l *Logs) Write(namespace, pod string, log []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.logs[namespace+"/"+pod] = log
}

// Whole returns the whole log of a pod.
func (l *Logs) Whole(namespace, pod string) ([]byte, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	log, ok := l.logs[namespace+"/"+pod]
	if !ok {
		return nil, fmt.Errorf("pods %q not found: no log for pod %s/%s", pod, namespace, pod)
	}
	return log, nil
}

// Read serves the end of a log as the kubelet does for PodLogOptions TailLines and LimitBytes.
func (l *Logs) Read(_ context.Context, namespace, pod, _ string, tail wire.Tail) (io.ReadCloser, error) {
	l.mu.Lock()
	failing := l.fail[namespace+"/"+pod] > 0
	if failing {
		l.fail[namespace+"/"+pod]--
	}
	l.mu.Unlock()
	if failing {
		return nil, fmt.Errorf("reading the log of pod %s/%s: the kubelet did not answer", namespace, pod)
	}
	log, err := l.Whole(namespace, pod)
	if err != nil {
		return nil, err
	}
	return io.NopCloser(bytes.NewReader(tail.Of(log))), nil
}
