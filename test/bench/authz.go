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
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/authz"
)

// fanOut is what one fan-out measured.
type fanOut struct {
	all      time.Duration // from the Run's creation to its last pod
	p50, p99 time.Duration // deps->pod: from the root's end to each leaf's pod
	authz    authz.Stats   // the authorizer's work meanwhile
}

// fanOutRun runs a Scene of one root and n-1 leaves in namespace ns and prints its figures.
// With secret, every leaf reads a Secret, as real steps do, so each of its pods is authorized
// at the effect (one SubjectAccessReview, the rest from the cache); without, a leaf's pod
// references nothing a person must be allowed, and the authorizer asks nothing.
func fanOutRun(ctx context.Context, c client.Client, k *kubelet, n int, ns string, secret bool) fanOut {
	ns = namespace(ctx, c, ns)
	scene := &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: "fan", Namespace: ns}}
	root := &ergonv1alpha1.ContainerStep{Image: "busybox:bench", Command: []string{"true"}}
	scene.Spec.Steps = []ergonv1alpha1.Step{{Name: "root", Container: root}}
	for i := 1; i < n; i++ {
		leaf := ergonv1alpha1.Step{Name: fmt.Sprintf("leaf-%04d", i), DependsOn: []string{"root"},
			Container: &ergonv1alpha1.ContainerStep{Image: "busybox:bench", Command: []string{"echo", fmt.Sprintf("leaf %d", i)}}}
		if secret {
			leaf.Container.Env = []corev1.EnvVar{{Name: "TOKEN", ValueFrom: &corev1.EnvVarSource{
				SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "bench-token"}, Key: "t"}}}}
		}
		scene.Spec.Steps = append(scene.Spec.Steps, leaf)
	}
	must(c.Create(ctx, scene))
	before := authorizer.Stats()
	// Leaves stay running until every pod exists, so the kubelet's own writes do not slow the
	// scheduling being measured; then they all finish.
	k.parkNS, k.parked = ns, make(chan *corev1.Pod, n)
	start := time.Now()
	run := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: "fan", Namespace: ns},
		Spec: ergonv1alpha1.RunSpec{SceneRef: corev1.LocalObjectReference{Name: "fan"}}}
	must(c.Create(ctx, run))
	var got fanOut
	for {
		k.mu.Lock()
		var rootDone time.Time
		var leaves []time.Time
		for name, at := range k.created {
			if strings.HasPrefix(name, ns+"/") {
				if strings.Contains(name, "-root-") {
					rootDone = k.done[name]
				} else {
					leaves = append(leaves, at)
				}
			}
		}
		k.mu.Unlock()
		if len(leaves) < n-1 || rootDone.IsZero() {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		after := authorizer.Stats()
		got.authz = authz.Stats{Reviews: after.Reviews - before.Reviews, Hits: after.Hits - before.Hits,
			Checks: after.Checks - before.Checks, Spent: after.Spent - before.Spent}
		var lat []time.Duration
		for _, at := range leaves {
			lat = append(lat, at.Sub(rootDone))
			got.all = max(got.all, at.Sub(start))
		}
		slices.Sort(lat)
		got.p50, got.p99 = pct(lat, 50), pct(lat, 99)
		fmt.Printf("  all %d step pods created %s after the Run; deps->pod of the leaves p50 %s, p99 %s\n",
			n, got.all.Round(time.Millisecond), got.p50, got.p99)
		a := got.authz
		fmt.Printf("  authorization at the effect: %d pods checked, %d SubjectAccessReviews, %d answers from the cache, "+
			"%s in all (%s a pod)\n", a.Checks, a.Reviews, a.Hits, a.Spent.Round(time.Microsecond),
			(a.Spent / time.Duration(max(a.Checks, 1))).Round(time.Microsecond))
		for len(k.parked) < n-1 {
			time.Sleep(20 * time.Millisecond)
		}
		close(k.parked)
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				for pod := range k.parked {
					k.succeed(ctx, pod)
				}
			})
		}
		wg.Wait()
		break
	}
	waitFinished(ctx, c, ns, 1)
	fmt.Printf("  finished after %s\n", time.Since(start).Round(time.Millisecond))
	must(c.Get(ctx, client.ObjectKeyFromObject(run), run))
	raw, err := json.Marshal(run)
	must(err)
	snapshot, err := json.Marshal(run.Status.SceneSnapshot)
	must(err)
	steps, err := json.Marshal(run.Status.Steps)
	must(err)
	managed, err := json.Marshal(run.ManagedFields)
	must(err)
	fmt.Printf("  Run object: %d KiB: Scene snapshot %d KiB, step statuses %d KiB, managedFields %d KiB; phase %s\n",
		len(raw)>>10, len(snapshot)>>10, len(steps)>>10, len(managed)>>10, run.Status.Phase)
	return got
}

// authorizationCost runs the fan-out in rounds, each twice: its leaves reading a Secret (so
// every pod is authorized: a SubjectAccessReview, then the cache) and reading nothing (the
// authorizer asks nothing). It prints what authorization at the effect adds to deps->pod.
func authorizationCost(ctx context.Context, c client.Client, k *kubelet, n, rounds int) {
	var with, without []fanOut
	for i := range 2 * rounds {
		// A B B A A B ...: a drift of the machine over the rounds weighs on both alike. Each
		// Run's pods are deleted after it, so every round starts with as many objects.
		secret := i%4 == 1 || i%4 == 2
		what := "leaves reading nothing"
		if secret {
			what = "every leaf reading a Secret"
		}
		fmt.Printf("\nRound %d: one Run of %d steps (1 -> %d), %s\n", i/2+1, n, n-1, what)
		ns := fmt.Sprintf("bench-authz-%d", i)
		got := fanOutRun(ctx, c, k, n, ns, secret)
		if secret {
			with = append(with, got)
		} else {
			without = append(without, got)
		}
		must(c.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(ns), client.GracePeriodSeconds(0)))
		must(c.DeleteAllOf(ctx, &ergonv1alpha1.Run{}, client.InNamespace(ns)))
	}
	sorted := func(runs []fanOut, f func(fanOut) time.Duration) []time.Duration {
		v := make([]time.Duration, 0, len(runs))
		for _, r := range runs {
			v = append(v, f(r))
		}
		slices.Sort(v)
		return v
	}
	p50 := func(r fanOut) time.Duration { return r.p50 }
	perPod := func(r fanOut) time.Duration { return r.authz.Spent / time.Duration(max(r.authz.Checks, 1)) }
	reviews := func(r fanOut) time.Duration { return time.Duration(r.authz.Reviews) }
	a, b, spent, asked := sorted(without, p50), sorted(with, p50), sorted(with, perPod), sorted(with, reviews)
	fmt.Printf("\nAuthorization at the effect on a %d-step fan-out, %d rounds each:\n", n, rounds)
	fmt.Printf("  deps->pod p50 reading nothing: median %s (%s to %s)\n", a[len(a)/2], a[0], a[len(a)-1])
	fmt.Printf("  deps->pod p50 reading a Secret: median %s (%s to %s)\n", b[len(b)/2], b[0], b[len(b)-1])
	fmt.Printf("  SubjectAccessReviews a fan-out: at most %d; time in the authorizer: median %s a pod, "+
		"%.2f%% of the median deps->pod p50 reading a Secret\n", int64(asked[len(asked)-1]), spent[len(spent)/2].Round(time.Microsecond),
		100*float64(spent[len(spent)/2])/float64(b[len(b)/2]))
}
