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
	dir, err := os.MkdirTemp("", "ergon-bench-shards-")
	must(err)
	defer func() { _ = os.RemoveAll(dir) }()
	// Namespaces in equal numbers per shard: the names are tried in turn, their hashes decide.
	perShard := map[int]int{}
	var namespaces []string
	for i := 0; len(namespaces) < shardNamespaces; i++ {
		name := fmt.Sprintf("shards-%d-%d", row, i)
		if s := shard.Of(name, count); perShard[s] < shardNamespaces/count {
			perShard[s]++
			namespaces = append(namespaces, namespace(ctx, c, name))
			scene := &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: "ten", Namespace: name}}
			scene.Spec.Steps = tenSteps()
			must(c.Create(ctx, scene))
		}
	}
	var managers []*managerProcess
	var ends []func() usage
	for i := range count {
		sub := fmt.Sprintf("%s/%d", dir, i)
		must(os.Mkdir(sub, 0o700))
		m := startManagerProcess(ctx, env, sub, "--run-workers="+workers,
			"--shard="+strconv.Itoa(i), "--shards="+strconv.Itoa(count))
		managers = append(managers, m)
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
	for j, ns := range namespaces {
		waitRuns(ctx, c, ns, (n-j+len(namespaces)-1)/len(namespaces), 15*time.Minute)
	}
	wall := time.Since(start)
	var heap, cpu float64
	for _, end := range ends {
		u := end()
		heap, cpu = max(heap, u.heap), cpu+u.cpu
	}
	fmt.Printf("  %6d %7d %10s %9.0f %14s %10.1f\n", count, 10*n, wall.Round(100*time.Millisecond),
		float64(10*n)/wall.Seconds(), mib(heap), cpu)
	for _, ns := range namespaces {
		must(c.DeleteAllOf(ctx, &ergonv1alpha1.Run{}, client.InNamespace(ns)))
	}
}
