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
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/naming"
)

// measureWake binds a Scene to each of the n Workspaces (ws-0 …) and measures, at most
// parallel at once, Run created -> the step's container running: with the Workspaces Running,
// then after they have all gone Idle.
func measureWake(ctx context.Context, c client.Client, pw *podWatch, ns string, n, parallel int, image string,
	timeout time.Duration) error {
	for i := range n {
		scene := &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("scene-%d", i), Namespace: ns},
			Spec: ergonv1alpha1.SceneSpec{
				Workspace: &corev1.LocalObjectReference{Name: fmt.Sprintf("ws-%d", i)},
				Steps: []ergonv1alpha1.Step{{Name: "work", Container: &ergonv1alpha1.ContainerStep{
					Image: image, Command: []string{"sleep", "2"}}}},
			}}
		if err := c.Create(ctx, scene); err != nil {
			return err
		}
	}
	warm, parts, err := runAll(ctx, c, pw, ns, "warm", n, parallel, timeout)
	if err != nil {
		return err
	}
	fmt.Printf("Run created -> bound step running, Workspace Running: %s\n%s\n", percentiles(warm), breakdowns(parts))

	start := time.Now()
	for i := range n {
		ws := &ergonv1alpha1.Workspace{}
		key := client.ObjectKey{Namespace: ns, Name: fmt.Sprintf("ws-%d", i)}
		for {
			if err := c.Get(ctx, key, ws); err != nil {
				return err
			}
			if ws.Status.Phase == ergonv1alpha1.WorkspaceIdle {
				break
			}
			if time.Since(start) > time.Minute+timeout {
				return fmt.Errorf("workspace %s not Idle after %s: %q", key.Name, time.Since(start), ws.Status.Phase)
			}
			time.Sleep(time.Second)
		}
	}
	fmt.Printf("all %d Workspaces Idle %s after the last step\n", n, time.Since(start).Round(time.Second))
	cold, parts, err := runAll(ctx, c, pw, ns, "wake", n, parallel, timeout)
	if err != nil {
		return err
	}
	fmt.Printf("Run created -> bound step running, Workspace Idle (wake): %s\n%s\n", percentiles(cold), breakdowns(parts))
	return nil
}

// runAll starts a Run of scene-i for each i, at most parallel at once, and returns each one's
// time from creation to its step's container running, and where it went; it waits for each
// Run to end.
func runAll(ctx context.Context, c client.Client, pw *podWatch, ns, prefix string, n, parallel int,
	timeout time.Duration) ([]time.Duration, []breakdown, error) {
	delays := make([]time.Duration, n)
	parts := make([]breakdown, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, max(parallel, 1))
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			delays[i], parts[i], errs[i] = runAndWait(ctx, c, pw, ns, fmt.Sprintf("%s-%d", prefix, i), fmt.Sprintf("scene-%d", i), timeout)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return nil, nil, fmt.Errorf("%s-%d: %w", prefix, i, err)
		}
	}
	return delays, parts, nil
}

// runAndWait creates a Run and returns the time until its step's container is seen running
// (polled every 100 ms; the step sleeps 2 s, so it cannot be missed), then waits for the end.
func runAndWait(ctx context.Context, c client.Client, pw *podWatch, ns, name, scene string,
	timeout time.Duration) (time.Duration, breakdown, error) {
	run := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: ergonv1alpha1.RunSpec{SceneRef: corev1.LocalObjectReference{Name: scene}}}
	created := time.Now()
	if err := c.Create(ctx, run); err != nil {
		return 0, breakdown{}, err
	}
	podKey := client.ObjectKey{Namespace: ns, Name: naming.StepPodName(name, "work", 1)}
	var delay time.Duration
	for deadline := created.Add(timeout); ; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			return 0, breakdown{}, fmt.Errorf("no step running after %s (Run %q, %v)", timeout, run.Status.Phase, run.Status.Conditions)
		}
		pod := &corev1.Pod{}
		if delay == 0 && c.Get(ctx, podKey, pod) == nil {
			for _, cs := range pod.Status.ContainerStatuses {
				if cs.State.Running != nil || cs.State.Terminated != nil {
					delay = time.Since(created)
				}
			}
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(run), run); err != nil {
			return 0, breakdown{}, err
		}
		if run.Status.Phase.Finished() {
			if run.Status.Phase != ergonv1alpha1.RunSucceeded {
				return 0, breakdown{}, fmt.Errorf("ended %s: %v", run.Status.Phase, run.Status.Conditions)
			}
			if delay == 0 {
				return 0, breakdown{}, fmt.Errorf("succeeded before its step was seen running")
			}
			s, ok := pw.get(podKey.Name)
			if !ok || s.running.IsZero() {
				return 0, breakdown{}, fmt.Errorf("the pod watch never saw %s running", podKey.Name)
			}
			return delay, breakdownOf(created, s), nil
		}
	}
}
