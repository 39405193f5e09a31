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

package controllers

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

// podCreations records every pod created in a namespace, by name, with the UIDs it had.
type podCreations struct {
	mu   sync.Mutex
	uids map[string]map[types.UID]bool
}

func watchPodCreations(ctx context.Context, ns string) *podCreations {
	wc, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
	w, err := wc.Watch(ctx, &corev1.PodList{}, client.InNamespace(ns))
	Expect(err).NotTo(HaveOccurred())
	pc := &podCreations{uids: map[string]map[types.UID]bool{}}
	go func() {
		defer GinkgoRecover()
		for e := range w.ResultChan() {
			pod, ok := e.Object.(*corev1.Pod)
			if !ok || e.Type != watch.Added {
				continue
			}
			pc.mu.Lock()
			if pc.uids[pod.Name] == nil {
				pc.uids[pod.Name] = map[types.UID]bool{}
			}
			pc.uids[pod.Name][pod.UID] = true
			pc.mu.Unlock()
		}
	}()
	DeferCleanup(w.Stop)
	return pc
}

// duplicates lists the pods that were created more than once.
func (pc *podCreations) duplicates() []string {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	var dups []string
	for name, uids := range pc.uids {
		if len(uids) > 1 {
			dups = append(dups, name)
		}
	}
	return dups
}

func (pc *podCreations) count() int {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	return len(pc.uids)
}

var _ = Describe("The Run controller across restarts", Serial, func() {
	It("creates no step pod twice and finishes every Run when the manager stops at random points", func(ctx SpecContext) {
		const runs = 30
		seed := uint64(time.Now().UnixNano())
		GinkgoWriter.Printf("restart test seed: %d\n", seed)
		rng := rand.New(rand.NewPCG(seed, 1))

		kctx, stopKubelet := context.WithCancel(context.Background())
		defer stopKubelet()
		go testKubelet.run(kctx)
		ns := newNamespace(ctx, func(pod *corev1.Pod) outcome {
			// Every first attempt of "flaky" fails, so retries cross restarts too.
			if pod.Labels[ergonv1alpha1.LabelStep] == "flaky" && pod.Labels[ergonv1alpha1.LabelAttempt] == "1" {
				return outcome{ExitCode: 1}
			}
			return echoLastArg(pod)
		})
		created := watchPodCreations(ctx, ns)

		// This test runs its own managers; the suite's comes back afterwards.
		stopMgr()
		DeferCleanup(func() { stopMgr = startManager(suiteConfig()) })

		createScene(ctx, ns, "diamond",
			container("a", "a"),
			withRetry(container("flaky", "{{ .steps.a.output }}-flaky", "a"), 2),
			container("c", "{{ .steps.a.output }}-c", "a"),
			container("d", "{{ .steps.flaky.output }}+{{ .steps.c.output }}", "flaky", "c"),
			container("e", "done", "d"),
		)
		for i := range runs {
			createRun(ctx, ns, fmt.Sprintf("r%d", i), "diamond", nil)
		}

		allFinished := func() bool { return allRunsFinished(ctx, ns, runs) }
		// Stop the manager at random points for a minute, then let one manager finish what is
		// left: on a loaded machine a manager that lives under a second may sync its caches and
		// do little else, so the Runs need not all end while the restarts go on.
		restarts := restartRandomly(rng, time.Now().Add(60*time.Second), allFinished)
		if !allFinished() {
			stop := startManager(suiteConfig())
			deadline := time.Now().Add(90 * time.Second)
			for !allFinished() && time.Now().Before(deadline) {
				time.Sleep(200 * time.Millisecond)
			}
			stop()
		}
		GinkgoWriter.Printf("restarts: %d, pods created: %d\n", restarts, created.count())
		if !allFinished() {
			list := &ergonv1alpha1.RunList{}
			Expect(k8sClient.List(ctx, list, client.InNamespace(ns))).To(Succeed())
			for _, r := range list.Items {
				GinkgoWriter.Printf("run %s %s %s\n", r.Name, r.Status.Phase, r.Status.Progress)
				for _, s := range r.Status.Steps {
					GinkgoWriter.Printf("  %s %s %d %s %s\n", s.Name, s.Phase, s.Attempts, s.PodName, s.Message)
				}
			}
			pods := &corev1.PodList{}
			Expect(k8sClient.List(ctx, pods, client.InNamespace(ns))).To(Succeed())
			for _, p := range pods.Items {
				GinkgoWriter.Printf("pod %s %s\n", p.Name, p.Status.Phase)
			}
		}
		Expect(allFinished()).To(BeTrue(), "every Run finishes across %d restarts", restarts)
		Expect(restarts).To(BeNumerically(">", 3), "the manager was stopped mid-run several times")

		list := &ergonv1alpha1.RunList{}
		Expect(k8sClient.List(ctx, list, client.InNamespace(ns))).To(Succeed())
		for _, r := range list.Items {
			Expect(r.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded), r.Name)
			Expect(stepStatus(&r, "flaky").Attempts).To(BeEquivalentTo(2), r.Name)
			Expect(stepStatus(&r, "d").Output.Preview).To(Equal("a-flaky+a-c"), r.Name)
		}
		Eventually(created.count).Should(Equal(runs * 6))
		Expect(created.duplicates()).To(BeEmpty(), "pods created more than once")
	})
})

// allRunsFinished reports whether a namespace holds n Runs and every one of them has finished.
func allRunsFinished(ctx context.Context, ns string, n int) bool {
	list := &ergonv1alpha1.RunList{}
	Expect(k8sClient.List(ctx, list, client.InNamespace(ns))).To(Succeed())
	for _, r := range list.Items {
		if !r.Status.Phase.Finished() {
			return false
		}
	}
	return len(list.Items) == n
}

// restartRandomly starts the manager and stops it again after 100-800 ms, over and over, until
// done reports true or until passes, and says how many times it stopped it.
func restartRandomly(rng *rand.Rand, until time.Time, done func() bool) int {
	restarts := 0
	for !done() && time.Now().Before(until) {
		stop := startManager(suiteConfig())
		time.Sleep(time.Duration(100+rng.IntN(700)) * time.Millisecond)
		stop()
		restarts++
	}
	return restarts
}
