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
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// stages is when the bench first saw a pod at each stage of its start.
type stages struct {
	created, scheduled, initialized, running time.Time
}

// podWatch records, from one watch of a namespace's pods, when each pod was first seen
// created, scheduled, initialized and with a container running: a breakdown on the bench's
// millisecond clock, which the pods' own second-precision timestamps cannot give.
type podWatch struct {
	mu   sync.Mutex
	pods map[string]*stages
}

func watchPods(ctx context.Context, cfg *rest.Config, ns string) (*podWatch, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	pw := &podWatch{pods: map[string]*stages{}}
	w, err := cs.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	go func() {
		for {
			for ev := range w.ResultChan() {
				if pod, ok := ev.Object.(*corev1.Pod); ok {
					pw.see(pod, time.Now())
				}
			}
			if ctx.Err() != nil {
				return
			}
			// The API server ends watches after a while: watch again (what is missed meanwhile
			// is seen at the pod's next change).
			if w, err = cs.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{}); err != nil {
				return
			}
		}
	}()
	return pw, nil
}

func (pw *podWatch) see(pod *corev1.Pod, now time.Time) {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	s := pw.pods[pod.Name]
	if s == nil {
		s = &stages{created: now}
		pw.pods[pod.Name] = s
	}
	if s.scheduled.IsZero() && pod.Spec.NodeName != "" {
		s.scheduled = now
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodInitialized && c.Status == corev1.ConditionTrue && s.initialized.IsZero() {
			s.initialized = now
		}
	}
	for _, c := range pod.Status.ContainerStatuses {
		if (c.State.Running != nil || c.State.Terminated != nil) && s.running.IsZero() {
			s.running = now
		}
	}
}

func (pw *podWatch) get(name string) (stages, bool) {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	s, ok := pw.pods[name]
	if !ok {
		return stages{}, false
	}
	return *s, true
}

// breakdown is where the time from a Run's creation to its step's container running went.
type breakdown struct {
	// ergon: Run created -> step pod created (admission, the Run controller, the Workspace check).
	// schedule: pod created -> bound to a node.
	// initialize: bound -> initialized (the sandbox, volumes, init containers).
	// start: initialized -> a container running.
	ergon, schedule, initialize, start time.Duration
}

func breakdownOf(created time.Time, s stages) breakdown {
	initialized := s.initialized
	if initialized.IsZero() || initialized.After(s.running) {
		initialized = s.running // seen in the same event
	}
	scheduled := s.scheduled
	if scheduled.IsZero() || scheduled.After(initialized) {
		scheduled = initialized
	}
	return breakdown{ergon: s.created.Sub(created), schedule: scheduled.Sub(s.created),
		initialize: initialized.Sub(scheduled), start: s.running.Sub(initialized)}
}

// breakdowns prints the p50 and p99 of each part.
func breakdowns(b []breakdown) string {
	part := func(f func(breakdown) time.Duration) string {
		d := make([]time.Duration, len(b))
		for i := range b {
			d[i] = f(b[i])
		}
		return percentiles(d)
	}
	return strings.Join([]string{
		fmt.Sprintf("    Run created -> step pod created (Ergon): %s", part(func(x breakdown) time.Duration { return x.ergon })),
		fmt.Sprintf("    pod created -> scheduled: %s", part(func(x breakdown) time.Duration { return x.schedule })),
		fmt.Sprintf("    scheduled -> initialized (sandbox, volumes, init containers): %s",
			part(func(x breakdown) time.Duration { return x.initialize })),
		fmt.Sprintf("    initialized -> container running: %s", part(func(x breakdown) time.Duration { return x.start })),
	}, "\n")
}
