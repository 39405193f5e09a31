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
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/outputs/wire"
)

// kubelet moves step pods along and records when each was created and finished.
type kubelet struct {
	c       client.WithWatch
	mu      sync.Mutex
	created map[string]time.Time // pod name -> seen created
	done    map[string]time.Time // pod name -> marked Succeeded
	hold    atomic.Bool          // keep pods running instead of finishing them
	// paced, when set, receives the pods of a namespace instead of finishing them: a pacer
	// finishes them at a steady rate, and pods of the step "hold" stay running.
	pacedNS string
	paced   chan *corev1.Pod
	// parkNS, when set, parks the pods of a namespace but its root's in parked, running.
	parkNS string
	parked chan *corev1.Pod
	// lingering holds, by namespace, how long its pods run before they succeed; a negative
	// time keeps them running (the fair-share bench's busy tenants).
	lingering sync.Map // namespace -> time.Duration
	// runningNow counts, by namespace, the pods made Running and not ended.
	runningNow sync.Map // namespace -> *atomic.Int64
}

// linger makes the pods of a namespace run for d before they succeed; negative d, forever.
func (k *kubelet) linger(ns string, d time.Duration) {
	k.runningNow.LoadOrStore(ns, &atomic.Int64{})
	k.lingering.Store(ns, d)
}

// running counts the lingering pods running now in the namespaces whose name starts with prefix.
func (k *kubelet) running(prefix string) int {
	n := 0
	k.runningNow.Range(func(ns, count any) bool {
		if strings.HasPrefix(ns.(string), prefix) {
			n += int(count.(*atomic.Int64).Load())
		}
		return true
	})
	return n
}

func (k *kubelet) run(ctx context.Context) {
	work := make(chan *corev1.Pod, 100000)
	for range 8 {
		go func() {
			for pod := range work {
				k.finish(ctx, pod)
			}
		}()
	}
	// A watch ends now and then; watching again lists the pods that exist as ADDED first.
	for ctx.Err() == nil {
		w, err := k.c.Watch(ctx, &corev1.PodList{}, client.HasLabels{ergonv1alpha1.LabelAttempt})
		if err != nil {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		for e := range w.ResultChan() {
			pod, ok := e.Object.(*corev1.Pod)
			if !ok || e.Type != watch.Added || (pod.Status.Phase != "" && pod.Status.Phase != corev1.PodPending) {
				continue
			}
			k.mu.Lock()
			_, seen := k.created[key(pod)]
			if !seen {
				k.created[key(pod)] = time.Now()
			}
			k.mu.Unlock()
			work <- pod
		}
	}
}

func key(pod *corev1.Pod) string { return pod.Namespace + "/" + pod.Name }

func (k *kubelet) finish(ctx context.Context, pod *corev1.Pod) {
	now := metav1.Now()
	pod.Status.Phase = corev1.PodRunning
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "step",
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}}}
	if k.c.Status().Update(ctx, pod) != nil || (k.hold.Load() && pod.Labels[ergonv1alpha1.LabelStep] != "root") {
		return
	}
	if pod.Namespace == k.parkNS && pod.Labels[ergonv1alpha1.LabelStep] != "root" {
		k.parked <- pod
		return
	}
	if d, ok := k.lingering.Load(pod.Namespace); ok {
		count, _ := k.runningNow.Load(pod.Namespace)
		count.(*atomic.Int64).Add(1)
		if d.(time.Duration) >= 0 {
			time.AfterFunc(d.(time.Duration), func() {
				k.succeed(ctx, pod)
				count.(*atomic.Int64).Add(-1)
			})
		}
		return
	}
	if pod.Namespace == k.pacedNS {
		if pod.Labels[ergonv1alpha1.LabelStep] != "hold" {
			k.paced <- pod
		}
		return
	}
	k.succeed(ctx, pod)
}

// succeed ends a running pod as Ergon's entrypoint would, with a small output.
func (k *kubelet) succeed(ctx context.Context, pod *corev1.Pod) {
	now := pod.Status.ContainerStatuses[0].State.Running.StartedAt
	report, _ := wire.Write(nil, []byte("ok "+pod.Name), 0)
	pod.Status.Phase = corev1.PodSucceeded
	pod.Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
		Message: string(report), StartedAt: now, FinishedAt: metav1.Now()}}
	if k.c.Status().Update(ctx, pod) == nil {
		k.mu.Lock()
		k.done[key(pod)] = time.Now()
		k.mu.Unlock()
	}
}
