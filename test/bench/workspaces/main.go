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

// Command workspaces measures the Workspace controller against a real API server (envtest):
// how long N Workspaces take to get their claim, pod, NetworkPolicy and first status, and the
// manager's heap while it holds them (and their pods, claims and policies) in its cache.
// There is no kubelet: the pods stay Pending, as on a cluster whose nodes are full. Run it
// with `make bench`.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/controllers"
	workspacecontroller "github.com/ergon-dev/ergon/controllers/workspace"
)

var scheme = k8sruntime.NewScheme()

func main() {
	n := flag.Int("workspaces", 1000, "Workspaces to create")
	flag.Parse()
	ctrl.SetLogger(logr.Discard())
	must(clientgoscheme.AddToScheme(scheme))
	must(ergonv1alpha1.AddToScheme(scheme))
	env := &envtest.Environment{CRDDirectoryPaths: []string{filepath.Join("config", "crd", "bases")}, ErrorIfCRDPathMissing: true}
	cfg, err := env.Start()
	must(err)
	defer func() { _ = env.Stop() }()
	cfg.QPS, cfg.Burst = 1000, 2000

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mgr, err := ctrl.NewManager(rest.CopyConfig(cfg), ctrl.Options{Scheme: scheme,
		Metrics: metricsserver.Options{BindAddress: "0"}, Cache: controllers.CacheOptions()})
	must(err)
	must((&workspacecontroller.WorkspaceReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(),
		Recorder: mgr.GetEventRecorder("ergon-workspace"), Clock: clock.RealClock{}, EntrypointImage: "ergon/manager:bench"}).
		SetupWithManager(mgr))
	go func() { must(mgr.Start(ctx)) }()
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	must(err)
	must(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bench"}}))
	time.Sleep(2 * time.Second) // the manager's caches sync
	before := heap()

	start := time.Now()
	created := make([]time.Time, *n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 20)
	for i := range *n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			created[i] = time.Now()
			must(c.Create(ctx, workspace(i)))
		}()
	}
	wg.Wait()
	fmt.Printf("%d Workspaces created in %s\n", *n, time.Since(start).Round(time.Millisecond))

	// Each Workspace's delay from its creation to the first status the controller writes.
	delays := make([]time.Duration, 0, *n)
	seen := map[string]bool{}
	for deadline := time.Now().Add(10 * time.Minute); len(seen) < *n && time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		list := &ergonv1alpha1.WorkspaceList{}
		must(c.List(ctx, list, client.InNamespace("bench")))
		now := time.Now()
		for _, ws := range list.Items {
			if ws.Status.Phase == ergonv1alpha1.WorkspacePending && ws.Status.PodName != "" && !seen[ws.Name] {
				seen[ws.Name] = true
				var i int
				_, _ = fmt.Sscanf(ws.Name, "ws-%d", &i)
				delays = append(delays, now.Sub(created[i]))
			}
		}
	}
	fmt.Printf("%d of them have a pod, a claim, a NetworkPolicy and status Pending after %s\n",
		len(seen), time.Since(start).Round(time.Millisecond))
	slices.Sort(delays)
	if len(delays) > 0 {
		fmt.Printf("create -> first status: p50 %s, p99 %s (polled every 200ms)\n",
			delays[len(delays)/2].Round(time.Millisecond), delays[len(delays)*99/100].Round(time.Millisecond))
	}
	time.Sleep(2 * time.Second)
	after := heap()
	fmt.Printf("manager heap (in use, after GC): %.1f MiB before, %.1f MiB with %d Workspaces: %.1f KiB each\n",
		mib(before), mib(after), *n, float64(after-before)/1024/float64(*n))
}

func workspace(i int) *ergonv1alpha1.Workspace {
	return &ergonv1alpha1.Workspace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("ws-%d", i), Namespace: "bench"},
		Spec: ergonv1alpha1.WorkspaceSpec{User: fmt.Sprintf("user-%d@example.com", i), Image: "python:3.13",
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}},
			Storage:     ergonv1alpha1.WorkspaceStorage{Size: resource.MustParse("1Gi")},
			IdleTimeout: &metav1.Duration{Duration: time.Hour}}}
}

func heap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}
