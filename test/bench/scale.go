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
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/naming"
)

// scaleOptions size the scale suite (-scale).
type scaleOptions struct {
	curve                    string // Run counts of the curve, comma-separated
	active, activeSteps      int
	gates                    int
	triggers, triggerMinutes int
	workers                  string
}

// scaleSuite measures one manager process at scale: the curve of time and memory against the
// number of Runs, Runs held active, pending Gates and Triggers firing every minute.
func scaleSuite(ctx context.Context, env *envtest.Environment, c client.WithWatch, o scaleOptions) {
	dir, err := os.MkdirTemp("", "ergon-bench-")
	must(err)
	defer func() { _ = os.RemoveAll(dir) }()
	m := startManagerProcess(ctx, env, dir, "--run-workers="+o.workers)
	defer m.stop()
	k := &kubelet{c: c, created: map[string]time.Time{}, done: map[string]time.Time{}}
	go k.run(ctx)
	idle, err := m.read()
	must(err)
	fmt.Printf("Manager process (--run-workers=%s), idle: heap in use %s, RSS %s\n", o.workers, mib(idle.heap), mib(idle.rss))

	if o.curve != "" {
		curve(ctx, c, k, m, o.curve)
	}
	if o.active > 0 {
		activeHeld(ctx, c, k, m, o.active, o.activeSteps)
	}
	if o.gates > 0 {
		pendingGates(ctx, c, m, o.gates)
	}
	if o.triggers > 0 {
		everyMinute(ctx, c, m, o.triggers, o.triggerMinutes)
	}
}

// curve prints the time and memory curve for the Run counts listed in counts.
func curve(ctx context.Context, c client.Client, k *kubelet, m *managerProcess, counts string) {
	fmt.Printf("\nCurve: N Runs of 10 steps (1 -> 8 -> 1) created at once, pods finish at once\n")
	fmt.Printf("  %6s %7s %10s %9s %12s %12s %10s %9s %9s\n", "Runs", "steps", "wall", "steps/s",
		"peak heap", "peak RSS", "CPU s", "p50", "p99")
	for i, s := range strings.Split(counts, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		must(err)
		curvePoint(ctx, c, k, m, fmt.Sprintf("scale-curve-%d", i), n)
	}
}

// curvePoint runs n Runs of the 10-step Scene at once and prints one row of the curve.
func curvePoint(ctx context.Context, c client.Client, k *kubelet, m *managerProcess, ns string, n int) {
	namespace(ctx, c, ns)
	scene := &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: "ten", Namespace: ns}}
	scene.Spec.Steps = tenSteps()
	must(c.Create(ctx, scene))
	end := m.phase()
	start := time.Now()
	createAll(ctx, c, n, func(i int) client.Object {
		return &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("r%04d", i), Namespace: ns},
			Spec: ergonv1alpha1.RunSpec{SceneRef: corev1.LocalObjectReference{Name: "ten"}}}
	})
	waitRuns(ctx, c, ns, n, 15*time.Minute)
	wall := time.Since(start)
	peak := end()
	var delays []time.Duration
	k.mu.Lock()
	for i := range n {
		pod := func(step string) string { return ns + "/" + naming.StepPodName(fmt.Sprintf("r%04d", i), step, 1) }
		for j := range 8 {
			delays = append(delays, k.created[pod(fmt.Sprintf("mid-%d", j))].Sub(k.done[pod("root")]))
		}
		last := time.Time{}
		for j := range 8 {
			last = later(last, k.done[pod(fmt.Sprintf("mid-%d", j))])
		}
		delays = append(delays, k.created[pod("join")].Sub(last))
	}
	k.mu.Unlock()
	slices.Sort(delays)
	fmt.Printf("  %6d %7d %10s %9.0f %12s %12s %10.1f %9s %9s\n", n, 10*n, wall.Round(100*time.Millisecond),
		float64(10*n)/wall.Seconds(), mib(peak.heap), mib(peak.rss), peak.cpu, pct(delays, 50), pct(delays, 99))
	must(c.DeleteAllOf(ctx, &ergonv1alpha1.Run{}, client.InNamespace(ns)))
}

// activeHeld holds n Runs active with steps pods each running at once, then lets them finish.
func activeHeld(ctx context.Context, c client.Client, k *kubelet, m *managerProcess, n, steps int) {
	ns := namespace(ctx, c, "scale-active")
	scene := &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: "wide", Namespace: ns}}
	for i := range steps {
		scene.Spec.Steps = append(scene.Spec.Steps, ergonv1alpha1.Step{Name: fmt.Sprintf("s%d", i),
			Container: &ergonv1alpha1.ContainerStep{Image: "busybox:bench", Command: []string{"true"}}})
	}
	must(c.Create(ctx, scene))
	fmt.Printf("\n%d Runs of %d parallel steps held active (%d step pods running at once)\n", n, steps, n*steps)
	k.hold.Store(true)
	end := m.phase()
	start := time.Now()
	createAll(ctx, c, n, func(i int) client.Object {
		return &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("a%04d", i), Namespace: ns},
			Spec: ergonv1alpha1.RunSpec{SceneRef: corev1.LocalObjectReference{Name: "wide"}}}
	})
	waitPods(k, ns, n*steps)
	fmt.Printf("  all %d step pods created and running %s after the first Run\n", n*steps,
		time.Since(start).Round(100*time.Millisecond))
	time.Sleep(10 * time.Second) // the manager settles with everything active
	held, err := m.read()
	must(err)
	fmt.Printf("  manager holding them: heap in use %s, RSS %s\n", mib(held.heap), mib(held.rss))
	k.hold.Store(false)
	released := time.Now()
	pods := &corev1.PodList{}
	must(c.List(ctx, pods, client.InNamespace(ns), client.HasLabels{ergonv1alpha1.LabelAttempt}))
	work := make(chan *corev1.Pod)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for pod := range work {
				k.succeed(ctx, pod)
			}
		})
	}
	for i := range pods.Items {
		if pods.Items[i].Status.Phase == corev1.PodRunning {
			work <- &pods.Items[i]
		}
	}
	close(work)
	wg.Wait()
	waitRuns(ctx, c, ns, n, 15*time.Minute)
	peak := end()
	fmt.Printf("  all %d Runs finished %s after their pods were let go\n", n, time.Since(released).Round(100*time.Millisecond))
	fmt.Printf("  whole phase: peak heap in use %s, peak RSS %s, CPU %.1f s\n", mib(peak.heap), mib(peak.rss), peak.cpu)
	must(c.DeleteAllOf(ctx, &ergonv1alpha1.Run{}, client.InNamespace(ns)))
}

// pendingGates creates n Gates and waits until the manager has reported each Pending.
func pendingGates(ctx context.Context, c client.Client, m *managerProcess, n int) {
	ns := namespace(ctx, c, "scale-gates")
	fmt.Printf("\n%d Gates pending\n", n)
	end := m.phase()
	start := time.Now()
	createAll(ctx, c, n, func(i int) client.Object {
		return &ergonv1alpha1.Gate{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("g%05d", i), Namespace: ns},
			Spec: ergonv1alpha1.GateSpec{RunRef: corev1.LocalObjectReference{Name: "r"}, Step: "approve"}}
	})
	created := time.Since(start)
	for {
		list := &ergonv1alpha1.GateList{}
		must(c.List(ctx, list, client.InNamespace(ns)))
		pending := 0
		for _, g := range list.Items {
			if g.Status.Phase == ergonv1alpha1.GatePending {
				pending++
			}
		}
		if pending == n {
			break
		}
		if time.Since(start) > 15*time.Minute {
			must(fmt.Errorf("%d of %d Gates Pending after 15 minutes", pending, n))
		}
		time.Sleep(time.Second)
	}
	all := time.Since(start)
	time.Sleep(5 * time.Second)
	held, err := m.read()
	must(err)
	peak := end()
	fmt.Printf("  created in %s; all Pending %s after the first; manager then: heap in use %s, RSS %s\n",
		created.Round(100*time.Millisecond), all.Round(100*time.Millisecond), mib(held.heap), mib(held.rss))
	fmt.Printf("  peak heap in use %s, peak RSS %s, CPU %.1f s\n", mib(peak.heap), mib(peak.rss), peak.cpu)
}

// everyMinute creates n Triggers firing every minute (real time: the manager is another
// process) and checks, for each of the next minutes, that each Trigger started exactly its Run.
func everyMinute(ctx context.Context, c client.Client, m *managerProcess, n, minutes int) {
	ns := namespace(ctx, c, "scale-triggers")
	scene := &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: "tick", Namespace: ns}}
	scene.Spec.Steps = []ergonv1alpha1.Step{{Name: "tick",
		Container: &ergonv1alpha1.ContainerStep{Image: "busybox:bench", Command: []string{"true"}}}}
	must(c.Create(ctx, scene))
	fmt.Printf("\n%d Triggers on \"* * * * *\", watched for %d minutes\n", n, minutes)
	end := m.phase()
	createAll(ctx, c, n, func(i int) client.Object {
		return &ergonv1alpha1.Trigger{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("t%04d", i), Namespace: ns},
			Spec: ergonv1alpha1.TriggerSpec{SceneRef: corev1.LocalObjectReference{Name: "tick"},
				Schedule: &ergonv1alpha1.ScheduleSource{Cron: "* * * * *", TimeZone: new("UTC")}}}
	})
	first := time.Now().Truncate(time.Minute).Add(time.Minute)
	if time.Until(first) < 5*time.Second { // a minute too close to the creations is ambiguous
		first = first.Add(time.Minute)
	}
	var times []time.Time
	for i := range minutes {
		times = append(times, first.Add(time.Duration(i)*time.Minute))
	}
	time.Sleep(time.Until(times[len(times)-1].Add(30 * time.Second)))
	runs := &ergonv1alpha1.RunList{}
	must(c.List(ctx, runs, client.InNamespace(ns)))
	byName := map[string]*ergonv1alpha1.Run{}
	for i := range runs.Items {
		byName[runs.Items[i].Name] = &runs.Items[i]
	}
	missed, expected := 0, 0
	var late []time.Duration
	for i := range n {
		for _, t := range times {
			expected++
			run, ok := byName[naming.ScheduledRunName(fmt.Sprintf("t%04d", i), t)]
			if !ok {
				missed++
				continue
			}
			late = append(late, run.CreationTimestamp.Sub(t))
		}
	}
	peak := end()
	// Any Run besides the expected ones started for a time before the first watched minute
	// (Triggers created just before it) or is a duplicate; names are per Trigger and time, so a
	// duplicate would have to be a Run of another name for the same time.
	early := 0
	for _, r := range runs.Items {
		if r.CreationTimestamp.Time.Before(times[0]) {
			early++
		}
	}
	extra := len(runs.Items) - early - (expected - missed)
	slices.Sort(late)
	fmt.Printf("  %d Runs expected at %d minute marks: %d missed, %d extra (besides %d from before the first mark)\n",
		expected, minutes, missed, extra, early)
	if len(late) > 0 {
		fmt.Printf("  Run created after its minute: p50 %s, p99 %s, max %s (creationTimestamp, 1 s resolution)\n",
			pct(late, 50), pct(late, 99), late[len(late)-1])
	}
	fmt.Printf("  peak heap in use %s, peak RSS %s, CPU %.1f s\n", mib(peak.heap), mib(peak.rss), peak.cpu)
	must(c.DeleteAllOf(ctx, &ergonv1alpha1.Trigger{}, client.InNamespace(ns)))
}

// createAll creates n objects, 16 at a time.
func createAll(ctx context.Context, c client.Client, n int, obj func(int) client.Object) {
	work := make(chan int)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for i := range work {
				must(c.Create(ctx, obj(i)))
			}
		})
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
}

// waitRuns waits until n Runs of a namespace have finished, listing once a second.
func waitRuns(ctx context.Context, c client.Client, ns string, n int, limit time.Duration) {
	deadline := time.Now().Add(limit)
	for {
		list := &ergonv1alpha1.RunList{}
		must(c.List(ctx, list, client.InNamespace(ns)))
		done := 0
		for _, r := range list.Items {
			if r.Status.Phase.Finished() {
				done++
			}
		}
		if done >= n {
			return
		}
		if time.Now().After(deadline) {
			must(fmt.Errorf("%d of %d Runs of %s finished in %s", done, n, ns, limit))
		}
		time.Sleep(time.Second)
	}
}
