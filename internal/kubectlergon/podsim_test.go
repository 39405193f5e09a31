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

package kubectlergon

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/outputs"
)

// outcome is what the simulated kubelet makes of a running step pod.
type outcome struct {
	Stay       bool
	ExitCode   int32
	Log        string
	Output     []byte
	Transcript []byte
}

// script decides the outcome of a step pod, by its step.
type script func(step string) outcome

// podsim moves step pods from Pending to Running to an end, writing their log and
// termination message as Ergon's entrypoint does (internal/outputs).
type podsim struct {
	mu      sync.Mutex
	scripts map[string]script
}

func (p *podsim) use(ns string, s script) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.scripts[ns] = s
}

func (p *podsim) run(ctx context.Context) {
	defer GinkgoRecover()
	for ctx.Err() == nil {
		pods := &corev1.PodList{}
		if err := k8sClient.List(ctx, pods, client.HasLabels{ergonv1alpha1.LabelAttempt}); err == nil {
			for i := range pods.Items {
				p.step(ctx, &pods.Items[i])
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (p *podsim) step(ctx context.Context, pod *corev1.Pod) {
	p.mu.Lock()
	s := p.scripts[pod.Namespace]
	p.mu.Unlock()
	if s == nil || !pod.DeletionTimestamp.IsZero() {
		return
	}
	switch pod.Status.Phase {
	case "", corev1.PodPending:
		pod.Status.Phase = corev1.PodRunning
		pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: stepContainer,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}}}
	case corev1.PodRunning:
		o := s(pod.Labels[ergonv1alpha1.LabelStep])
		if o.Stay {
			return
		}
		var log bytes.Buffer
		log.WriteString(o.Log)
		report, err := outputs.WriteResult(&log, outputs.Result{Output: o.Output, ExitCode: int(o.ExitCode), Transcript: o.Transcript})
		if err != nil {
			return
		}
		podLogs.write(pod.Namespace, pod.Name, log.Bytes())
		pod.Status.Phase = corev1.PodSucceeded
		if o.ExitCode != 0 {
			pod.Status.Phase = corev1.PodFailed
		}
		pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: stepContainer,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: o.ExitCode, Message: string(report), FinishedAt: metav1.Now()}}}}
	default:
		return
	}
	_ = k8sClient.Status().Update(ctx, pod)
}

// simLogs keeps the logs podsim wrote. It serves the Run controller (controllers.PodLogs)
// and the plugin (LogSource).
type simLogs struct {
	mu   sync.Mutex
	logs map[string][]byte
}

func (l *simLogs) write(ns, pod string, log []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.logs[ns+"/"+pod] = log
}

// Read serves the Run controller the end of a log, as the kubelet does for TailLines and LimitBytes.
func (l *simLogs) Read(_ context.Context, ns, pod, _ string, tail outputs.Tail) (io.ReadCloser, error) {
	log, err := l.whole(ns, pod)
	if err != nil {
		return nil, err
	}
	return io.NopCloser(bytes.NewReader(tail.Of(log))), nil
}

func (l *simLogs) whole(ns, pod string) ([]byte, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	log, ok := l.logs[ns+"/"+pod]
	if !ok {
		return nil, fmt.Errorf("pods %q not found", pod)
	}
	return log, nil
}

// Log serves the plugin as the kubelet would: only while the pod exists (Ergon deletes step
// pods once their step ended); following a running container's log ends with the container.
// The simulated container writes its whole log when it ends, so a running one has none yet.
func (l *simLogs) Log(ctx context.Context, ns, pod string, follow bool, _ *int64) (io.ReadCloser, error) {
	for {
		if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: pod}, &corev1.Pod{}); err != nil {
			return nil, err
		}
		if log, err := l.whole(ns, pod); err == nil {
			return io.NopCloser(bytes.NewReader(log)), nil
		}
		if !follow {
			return io.NopCloser(bytes.NewReader(nil)), nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}
