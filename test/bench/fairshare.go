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
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/naming"
	"github.com/ergon-dev/ergon/internal/slots"
)

// defaultSlots are the manager's default slot limits (cmd/manager), which the fair-share
// bench runs at.
var defaultSlots = slots.Limits{Total: 100, PerNamespace: 40, PerRun: 20}

// fairShare measures what a busy tenant costs a small Run in another namespace. A small
// namespace runs a chain of 3 steps on the idle manager; then busy tenants start fan-outs of
// units items each whose pods outlast the bench (held: never end) or end after unit (each
// ended one is replaced by the tenant's next), and hold every slot they can get; the same chain
// runs again. It reports the time until the chain's first step's pod is created and the
// chain's whole time, idle and loaded.
func fairShare(ctx context.Context, c client.Client, k *kubelet, tenants, units int, unit time.Duration, verbose bool) {
	chain := func(ns, name string) (first, all time.Duration) {
		start := time.Now()
		run := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: ergonv1alpha1.RunSpec{SceneRef: corev1.LocalObjectReference{Name: "chain"}}}
		must(c.Create(ctx, run))
		waitFinished(ctx, c, ns, countRuns(ctx, c, ns))
		all = time.Since(start) // observed within the 50 ms waitFinished polls at
		k.mu.Lock()
		pod := func(step string) string { return ns + "/" + naming.StepPodName(name, step, 1) }
		created := k.created[pod("a")]
		if verbose {
			fmt.Printf("    %s: a's pod after %s, b's %s after a ended, c's %s after b ended\n", name,
				created.Sub(start).Round(time.Millisecond), k.created[pod("b")].Sub(k.done[pod("a")]).Round(time.Millisecond),
				k.created[pod("c")].Sub(k.done[pod("b")]).Round(time.Millisecond))
		}
		k.mu.Unlock()
		must(c.Get(ctx, client.ObjectKeyFromObject(run), run))
		if run.Status.Phase != ergonv1alpha1.RunSucceeded {
			must(fmt.Errorf("the chain ended %s: %s", run.Status.Phase, run.Status.Progress))
		}
		return created.Sub(start), all
	}
	small := namespace(ctx, c, "bench-small")
	scene := &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: "chain", Namespace: small}}
	step := func(name string, deps ...string) ergonv1alpha1.Step {
		return ergonv1alpha1.Step{Name: name, DependsOn: deps,
			Container: &ergonv1alpha1.ContainerStep{Image: "busybox:bench", Command: []string{"true"}}}
	}
	scene.Spec.Steps = []ergonv1alpha1.Step{step("a"), step("b", "a"), step("c", "b")}
	must(c.Create(ctx, scene))
	const rounds = 5
	var idleFirst, idleAll time.Duration
	for i := range rounds {
		f, a := chain(small, fmt.Sprintf("idle-%d", i))
		idleFirst, idleAll = idleFirst+f, idleAll+a
	}
	fmt.Printf("  idle manager: first step's pod after %s, chain of 3 in %s (mean of %d)\n",
		(idleFirst / rounds).Round(time.Millisecond), (idleAll / rounds).Round(time.Millisecond), rounds)

	items, err := json.Marshal(make([]int, units))
	must(err)
	for t := range tenants {
		ns := namespace(ctx, c, fmt.Sprintf("bench-busy-%d", t))
		k.linger(ns, unit)
		busy := &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: "many", Namespace: ns}}
		busy.Spec.Steps = []ergonv1alpha1.Step{{Name: "each", ForEach: &ergonv1alpha1.ForEach{Items: &apiextensionsv1.JSON{Raw: items}},
			Container: &ergonv1alpha1.ContainerStep{Image: "busybox:bench", Command: []string{"true"}}}}
		must(c.Create(ctx, busy))
		// More Runs than the per-namespace limit needs, so the tenant wants every slot it can get.
		for r := range 3 {
			must(c.Create(ctx, &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("big-%d", r), Namespace: ns},
				Spec: ergonv1alpha1.RunSpec{SceneRef: corev1.LocalObjectReference{Name: "many"}}}))
		}
	}
	// Until the busy tenants hold every slot they can get.
	want := min(tenants*defaultSlots.PerNamespace, defaultSlots.Total)
	deadline := time.Now().Add(time.Minute)
	for k.running("bench-busy-") < want && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	fmt.Printf("  %d busy tenants (units of %s) hold %d step pods\n", tenants, unitName(unit), k.running("bench-busy-"))
	var firsts, alls []time.Duration
	for i := range rounds {
		f, a := chain(small, fmt.Sprintf("loaded-%d", i))
		firsts, alls = append(firsts, f), append(alls, a)
	}
	var loadedFirst, loadedAll, worstFirst time.Duration
	for i := range rounds {
		loadedFirst, loadedAll = loadedFirst+firsts[i], loadedAll+alls[i]
		worstFirst = max(worstFirst, firsts[i])
	}
	fmt.Printf("  loaded: first step's pod after %s (worst %s), chain of 3 in %s: %.2fx idle (mean of %d)\n",
		(loadedFirst / rounds).Round(time.Millisecond), worstFirst.Round(time.Millisecond),
		(loadedAll / rounds).Round(time.Millisecond), float64(loadedAll)/float64(idleAll), rounds)
	fmt.Printf("  the busy tenants still hold %d step pods\n", k.running("bench-busy-"))
}

// unitName says how long a busy tenant's units run.
func unitName(unit time.Duration) string {
	if unit < 0 {
		return "no end"
	}
	return unit.String()
}

// countRuns counts the Runs of a namespace.
func countRuns(ctx context.Context, c client.Client, ns string) int {
	list := &ergonv1alpha1.RunList{}
	must(c.List(ctx, list, client.InNamespace(ns)))
	return len(list.Items)
}
