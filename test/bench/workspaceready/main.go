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

// Command workspaceready measures, on a real cluster with Ergon installed, how long a
// Workspace takes from its creation to phase Running (its claim provisioned and bound, its
// pod scheduled, its init container and container started), with a warm image: N Workspaces,
// at most P at once, in a namespace of their own that it deletes afterwards. It reads the
// usual kubeconfig ($KUBECONFIG). Run it with `make bench-workspace-ready`; it is not part
// of make test or make bench, which need no cluster.
//
// With -pool R it first makes a WorkspacePool of the Workspaces' shape with R warm pods and
// waits for them to be ready, so that each Workspace takes a warm pod (it counts those that
// did): create -> Running from a warm pool.
//
// With -wake it then measures a step bound to each Workspace: from the Run's creation to the
// step's container running, first with the Workspace Running (warm), then again once the
// Workspace has stopped for idleness (phase Idle), so the step's pod is what wakes it.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

func main() {
	n := flag.Int("workspaces", 20, "Workspaces to create")
	parallel := flag.Int("parallel", 2, "Workspaces starting at once")
	image := flag.String("image", "ergon/busybox:dev", "image of the Workspaces; pull it onto the node first so it is warm")
	class := flag.String("storage-class", "local-path", "storageClassName of their volumes")
	timeout := flag.Duration("timeout", 3*time.Minute, "how long one Workspace may take")
	wake := flag.Bool("wake", false, "also measure Run created -> bound step running, warm and from Idle (idleTimeout 1m)")
	pool := flag.Int("pool", 0, "warm pods of a WorkspacePool of the Workspaces' shape, made ready first (at most 20)")
	settle := flag.Duration("settle", 30*time.Second,
		"with -pool, how long to wait once the warm pods are ready, for the node to finish starting them")
	flag.Parse()

	scheme := k8sruntime.NewScheme()
	must(clientgoscheme.AddToScheme(scheme))
	must(ergonv1alpha1.AddToScheme(scheme))
	cfg, err := ctrl.GetConfig()
	must(err)
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	must(err)
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "bench-ws-ready-"}}
	must(c.Create(ctx, ns))
	defer func() {
		// Delete the Workspaces first, so their finalizer deletes their volumes.
		_ = c.DeleteAllOf(ctx, &ergonv1alpha1.Workspace{}, client.InNamespace(ns.Name))
		_ = c.Delete(ctx, ns)
	}()

	if *pool > 0 {
		must(warmPool(ctx, c, workspace(ns.Name, 0, *image, *class), int32(*pool), *timeout))
		time.Sleep(*settle)
		if load, err := os.ReadFile("/proc/loadavg"); err == nil {
			fmt.Printf("load average before the Workspaces: %s", load)
		}
	}
	delays, admitted := make([]time.Duration, *n), make([]time.Duration, *n)
	errs := make([]error, *n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, max(*parallel, 1))
	start := time.Now()
	for i := range *n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			ws := workspace(ns.Name, i, *image, *class)
			if *wake {
				ws.Spec.IdleTimeout = &metav1.Duration{Duration: time.Minute} // the shortest admission allows
			}
			delays[i], admitted[i], errs[i] = createAndWait(ctx, c, ws, *timeout)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			fmt.Fprintf(os.Stderr, "bench: Workspace %d: %v\n", i, err)
			os.Exit(1)
		}
	}
	fmt.Printf("%d Workspaces (%s, %s volumes, %d at once) Running in %s\n",
		*n, *image, *class, *parallel, time.Since(start).Round(time.Millisecond))
	if *pool > 0 {
		fmt.Printf("%d of them took a warm pod from a pool of %d\n", tookWarm(ctx, c, ns.Name), *pool)
	}
	inOrder := make([]string, len(delays))
	for i, d := range delays {
		inOrder[i] = d.Round(time.Millisecond).String()
	}
	fmt.Printf("create -> Running, in the order created: %s\n", strings.Join(inOrder, " "))
	fmt.Printf("create -> Running: %s (polled every %s)\n", percentiles(delays), poll)
	fmt.Printf("of which the create request (admission): %s\n", percentiles(admitted))
	if *wake {
		pw, err := watchPods(ctx, cfg, ns.Name)
		must(err)
		must(measureWake(ctx, c, pw, ns.Name, *n, *parallel, *image, *timeout))
	}
}

// poll is how often a Workspace's phase is read while waiting for it.
const poll = 25 * time.Millisecond

// createAndWait creates a Workspace and waits for its phase Running; it also says how long
// the create request took (admission).
func createAndWait(ctx context.Context, c client.Client, ws *ergonv1alpha1.Workspace,
	timeout time.Duration) (running, admitted time.Duration, err error) {
	created := time.Now()
	if err := c.Create(ctx, ws); err != nil {
		return 0, 0, err
	}
	admitted = time.Since(created)
	for deadline := created.Add(timeout); time.Now().Before(deadline); time.Sleep(poll) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(ws), ws); err != nil {
			return 0, 0, err
		}
		if ws.Status.Phase == ergonv1alpha1.WorkspaceRunning {
			return time.Since(created), admitted, nil
		}
		if ws.Status.Phase == ergonv1alpha1.WorkspaceFailed {
			return 0, 0, fmt.Errorf("failed: %v", ws.Status.Conditions)
		}
	}
	return 0, 0, fmt.Errorf("not Running after %s: phase %q, %v", timeout, ws.Status.Phase, ws.Status.Conditions)
}

func workspace(ns string, i int, image, class string) *ergonv1alpha1.Workspace {
	return &ergonv1alpha1.Workspace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("ws-%d", i), Namespace: ns},
		Spec: ergonv1alpha1.WorkspaceSpec{User: fmt.Sprintf("bench-%d@example.com", i), Image: image,
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("20m"), corev1.ResourceMemory: resource.MustParse("64Mi")}},
			Storage:       ergonv1alpha1.WorkspaceStorage{Size: resource.MustParse("16Mi"), StorageClassName: &class},
			ReclaimPolicy: ergonv1alpha1.ReclaimDelete}}
}

// percentiles prints p50, p99 and max of delays.
func percentiles(delays []time.Duration) string {
	slices.Sort(delays)
	return fmt.Sprintf("p50 %s, p99 %s, max %s", delays[len(delays)/2].Round(time.Millisecond),
		delays[len(delays)*99/100].Round(time.Millisecond), delays[len(delays)-1].Round(time.Millisecond))
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}
