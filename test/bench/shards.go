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
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/shard"
)

// shardNamespaces is how many namespaces the Runs of one throughput row are spread over.
const shardNamespaces = 8

// shardThroughput runs n Runs of the 10-step Scene, spread evenly over the shards, once with
// each shard count of counts (manager processes, one per shard), and prints the wall time,
// the steps a second and the managers' CPU and peak heap.
func shardThroughput(ctx context.Context, env *envtest.Environment, c client.WithWatch, counts string, n int, workers string) {
	k := &kubelet{c: c, created: map[string]time.Time{}, done: map[string]time.Time{}}
	go k.run(ctx)
	fmt.Printf("Shards: %d Runs of 10 steps (1 -> 8 -> 1) over %d namespaces, created at once, pods finish at once; "+
		"--run-workers=%s per shard\n",
		n, shardNamespaces, workers)
	fmt.Printf("  %6s %7s %10s %9s %14s %10s\n", "shards", "steps", "wall", "steps/s", "peak heap max", "CPU s sum")
	for row, s := range strings.Split(counts, ",") {
		count, err := strconv.Atoi(strings.TrimSpace(s))
		must(err)
		shardRow(ctx, env, c, row, count, n, workers)
	}
}

func shardRow(ctx context.Context, env *envtest.Environment, c client.Client, row, count, n int, workers string) {
	f := shardRun(ctx, env, c, nil, row, count, n, workers, tenStepShape)
	fmt.Printf("  %6d %7d %10s %9.0f %14s %10.1f\n", count, 10*n, f.wall.Round(100*time.Millisecond),
		f.stepsPerSec, mib(f.heap), f.cpu)
}

// runShape is how the Runs of a row look: over how many namespaces, and how many middle steps
// their Scene has between its root and its join (root -> mids -> join).
type runShape struct {
	namespaces, mids int
}

// tenStepShape is the 10-step Scene (1 -> 8 -> 1) over shardNamespaces namespaces.
var tenStepShape = runShape{namespaces: shardNamespaces, mids: 8}

func (r runShape) steps() int { return r.mids + 2 }

// scene is the Scene of the shape.
func (r runShape) scene() []ergonv1alpha1.Step {
	steps := tenSteps()
	return append(steps[:1+r.mids:1+r.mids], ergonv1alpha1.Step{Name: "join", DependsOn: midNames(r.mids),
		Container: steps[len(steps)-1].Container})
}

func midNames(n int) []string {
	names := make([]string, n)
	for i := range n {
		names[i] = fmt.Sprintf("mid-%d", i)
	}
	return names
}

// shardFigures are what one row measured.
type shardFigures struct {
	wall        time.Duration
	stepsPerSec float64
	heap, cpu   float64
	// writes are the managers' API writes (POST, PUT, PATCH, DELETE), all shards together.
	writes float64
	// deps->pod of the middle steps: from the end of their Run's root step to their pod,
	// when a kubelet was given to read the times from.
	p50, p99 time.Duration
}

// shardRun runs n Runs of the 10-step Scene on count manager processes, started with extra
// arguments (each given its own directory as {dir}), and returns the figures.
func shardRun(ctx context.Context, env *envtest.Environment, c client.Client, k *kubelet, row, count, n int, workers string,
	shape runShape, extra ...string) shardFigures {
	dir, err := os.MkdirTemp("", "ergon-bench-shards-")
	must(err)
	defer func() { _ = os.RemoveAll(dir) }()
	// Namespaces in equal numbers per shard: the names are tried in turn, their hashes decide.
	perShard := map[int]int{}
	var namespaces []string
	for i := 0; len(namespaces) < shape.namespaces; i++ {
		name := fmt.Sprintf("shards-%d-%d", row, i)
		if s := shard.Of(name, count); perShard[s] < shape.namespaces/count {
			perShard[s]++
			namespaces = append(namespaces, namespace(ctx, c, name))
			scene := &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: "ten", Namespace: name}}
			scene.Spec.Steps = shape.scene()
			must(c.Create(ctx, scene))
		}
	}
	var managers []*managerProcess
	var ends []func() usage
	for i := range count {
		sub := fmt.Sprintf("%s/%d", dir, i)
		must(os.Mkdir(sub, 0o700))
		args := []string{"--run-workers=" + workers, "--shard=" + strconv.Itoa(i), "--shards=" + strconv.Itoa(count)}
		for _, e := range extra {
			args = append(args, strings.ReplaceAll(e, "{dir}", sub))
		}
		managers = append(managers, startManagerProcess(ctx, env, sub, args...))
	}
	defer func() {
		for _, m := range managers {
			m.stop()
		}
	}()
	for _, m := range managers {
		ends = append(ends, m.phase())
	}
	start := time.Now()
	createAll(ctx, c, n, func(i int) client.Object {
		return &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("r%04d", i), Namespace: namespaces[i%len(namespaces)]},
			Spec: ergonv1alpha1.RunSpec{SceneRef: corev1.LocalObjectReference{Name: "ten"}}}
	})
	limit := max(15*time.Minute, time.Duration(n*shape.steps())*100*time.Millisecond) // 10 steps/s at the least
	for j, ns := range namespaces {
		waitRuns(ctx, c, ns, (n-j+len(namespaces)-1)/len(namespaces), limit)
	}
	f := shardFigures{wall: time.Since(start)}
	f.stepsPerSec = float64(shape.steps()*n) / f.wall.Seconds()
	for _, end := range ends {
		u := end()
		f.heap, f.cpu, f.writes = max(f.heap, u.heap), f.cpu+u.cpu, f.writes+u.writes
	}
	if k != nil {
		f.p50, f.p99 = middleDepsToPod(k, namespaces)
	}
	for _, ns := range namespaces {
		must(c.DeleteAllOf(ctx, &ergonv1alpha1.Run{}, client.InNamespace(ns)))
	}
	return f
}

// middleDepsToPod is deps->pod of the middle steps of the 10-step Runs in namespaces: from
// the end of their Run's root step's pod to the creation of theirs.
func middleDepsToPod(k *kubelet, namespaces []string) (p50, p99 time.Duration) {
	k.mu.Lock()
	defer k.mu.Unlock()
	rootDone := map[string]time.Time{} // namespace/run -> its root's end
	for name, at := range k.done {
		if run, ok := runOfPod(name, "-root-", namespaces); ok {
			rootDone[run] = at
		}
	}
	var lat []time.Duration
	for name, at := range k.created {
		if run, ok := runOfPod(name, "-mid-", namespaces); ok && !rootDone[run].IsZero() {
			lat = append(lat, at.Sub(rootDone[run]))
		}
	}
	if len(lat) == 0 {
		return 0, 0
	}
	slices.Sort(lat)
	return pct(lat, 50), pct(lat, 99)
}

// runOfPod is namespace/run of a pod (namespace/name) of the step marked by infix, when the pod
// is in one of namespaces.
func runOfPod(pod, infix string, namespaces []string) (string, bool) {
	ns, name, _ := strings.Cut(pod, "/")
	if !slices.Contains(namespaces, ns) {
		return "", false
	}
	run, _, ok := strings.Cut(name, infix)
	return ns + "/" + run, ok
}

// archiveCost runs the 10-step Runs on one manager without and with an archive in SQLite
// (--archive-url), alternately, rounds times each, and prints what archiving every Run that
// ends costs the engine: steps a second, deps->pod, the manager's CPU and heap.
func archiveCost(ctx context.Context, env *envtest.Environment, c client.WithWatch, rounds, n int, workers string) {
	k := &kubelet{c: c, created: map[string]time.Time{}, done: map[string]time.Time{}}
	go k.run(ctx)
	fmt.Printf("Archive cost: %d Runs of 10 steps (1 -> 8 -> 1) over %d namespaces, created at once, pods finish at once; "+
		"one manager, --run-workers=%s; without and with --archive-url sqlite, alternately\n", n, shardNamespaces, workers)
	fmt.Printf("  %-8s %10s %9s %12s %12s %14s %8s\n", "archive", "wall", "steps/s", "deps->pod p50", "p99", "peak heap", "CPU s")
	var without, with []shardFigures
	for i := range 2 * rounds {
		// A B B A A B ...: a drift of the machine over the rounds weighs on both alike.
		archived := i%4 == 1 || i%4 == 2
		var extra []string
		label := "none"
		if archived {
			extra, label = []string{"--archive-url=sqlite://{dir}/archive.db"}, "sqlite"
		}
		f := shardRun(ctx, env, c, k, 100+i, 1, n, workers, tenStepShape, extra...)
		fmt.Printf("  %-8s %10s %9.0f %12s %12s %14s %8.1f\n", label, f.wall.Round(100*time.Millisecond), f.stepsPerSec,
			f.p50.Round(time.Millisecond), f.p99.Round(time.Millisecond), mib(f.heap), f.cpu)
		if archived {
			with = append(with, f)
		} else {
			without = append(without, f)
		}
	}
	median := func(fs []shardFigures, v func(shardFigures) float64) float64 {
		vals := make([]float64, 0, len(fs))
		for _, f := range fs {
			vals = append(vals, v(f))
		}
		slices.Sort(vals)
		return vals[len(vals)/2]
	}
	rate := func(f shardFigures) float64 { return f.stepsPerSec }
	p50 := func(f shardFigures) float64 { return float64(f.p50) }
	cpu := func(f shardFigures) float64 { return f.cpu }
	fmt.Printf("Medians: steps/s %.0f without, %.0f with the archive; deps->pod p50 %s without, %s with; CPU %.1f s without, %.1f s with\n",
		median(without, rate), median(with, rate), time.Duration(median(without, p50)).Round(time.Millisecond),
		time.Duration(median(with, p50)).Round(time.Millisecond), median(without, cpu), median(with, cpu))
}

// fleet runs n Runs of a 3-step chain (root -> mid-0 -> join) spread over namespaces, created
// at once, once on each shard count of counts, and prints what issue-scale figures a cluster
// operator asks for: the managers' peak heap and CPU, deps->pod p50/p99 of the middle steps,
// and the managers' API writes per step.
func fleet(ctx context.Context, env *envtest.Environment, c client.WithWatch, counts string, n, namespaces int, workers string) {
	k := &kubelet{c: c, created: map[string]time.Time{}, done: map[string]time.Time{}}
	go k.run(ctx)
	shape := runShape{namespaces: namespaces, mids: 1}
	fmt.Printf("Fleet: %d Runs of %d steps (a chain) over %d namespaces, created at once, pods finish at once; "+
		"--run-workers=%s per shard\n", n, shape.steps(), namespaces, workers)
	fmt.Printf("  %6s %7s %10s %9s %14s %10s %12s %10s %12s\n", "shards", "steps", "wall", "steps/s", "peak heap max",
		"CPU s sum", "deps->pod p50", "p99", "writes/step")
	for row, s := range strings.Split(counts, ",") {
		count, err := strconv.Atoi(strings.TrimSpace(s))
		must(err)
		f := shardRun(ctx, env, c, k, 200+row, count, n, workers, shape)
		fmt.Printf("  %6d %7d %10s %9.0f %14s %10.1f %12s %10s %12.2f\n", count, shape.steps()*n, f.wall.Round(100*time.Millisecond),
			f.stepsPerSec, mib(f.heap), f.cpu, f.p50.Round(time.Millisecond), f.p99.Round(time.Millisecond),
			f.writes/float64(shape.steps()*n))
	}
}
