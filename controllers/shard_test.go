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
	"maps"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	runcontroller "github.com/ergon-dev/ergon/controllers/run"
	"github.com/ergon-dev/ergon/internal/shard"
)

// Each manager of these specs copies the entrypoint from an image of its own, so the step pods
// say which manager made them.
func shardImage(name string) string { return "ergon/manager:" + name }

func asShard(s shard.Shard) func(*ctrl.Options) {
	return func(o *ctrl.Options) { o.NewCache = ShardedCache(s) }
}

// leading makes a manager elect a leader by the Lease id in "default", with the manager's
// timings; release false makes it stop as a killed process would, without giving the Lease up.
func leading(id string, release bool) func(*ctrl.Options) {
	return func(o *ctrl.Options) {
		o.LeaderElection, o.LeaderElectionNamespace, o.LeaderElectionID = true, "default", id
		o.LeaderElectionReleaseOnCancel = release
		lease, renew, retry := shard.LeaseDuration, shard.RenewDeadline, shard.RetryPeriod
		o.LeaseDuration, o.RenewDeadline, o.RetryPeriod = &lease, &renew, &retry
	}
}

// stepPods lists the step pods of a namespace.
func stepPods(ctx context.Context, ns string) []corev1.Pod {
	pods := &corev1.PodList{}
	Expect(k8sClient.List(ctx, pods, client.InNamespace(ns), client.HasLabels{ergonv1alpha1.LabelAttempt})).To(Succeed())
	return pods.Items
}

// podMakers counts the step pods created in each of the given namespaces by the manager image
// that made them (finished Runs delete their pods, so this watches rather than lists). Other
// namespaces are ignored: the shards also reconcile what earlier specs left behind.
type podMakers struct {
	mu sync.Mutex
	by map[string]map[string]int
}

func watchPodMakers(ctx context.Context, namespaces []string) *podMakers {
	wc, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
	w, err := wc.Watch(ctx, &corev1.PodList{}, client.HasLabels{ergonv1alpha1.LabelAttempt})
	Expect(err).NotTo(HaveOccurred())
	pm := &podMakers{by: map[string]map[string]int{}}
	for _, ns := range namespaces {
		pm.by[ns] = map[string]int{}
	}
	go func() {
		defer GinkgoRecover()
		for e := range w.ResultChan() {
			pod, ok := e.Object.(*corev1.Pod)
			if !ok || e.Type != watch.Added {
				continue
			}
			pm.add(pod)
		}
	}()
	DeferCleanup(w.Stop)
	return pm
}

func (pm *podMakers) add(pod *corev1.Pod) {
	pm.mu.Lock()
	defer pm.mu.Unlock()
	if by, ok := pm.by[pod.Namespace]; ok {
		by[madeBy(pod)]++
	}
}

func (pm *podMakers) of(ns string) map[string]int {
	pm.mu.Lock()
	defer pm.mu.Unlock()
	return maps.Clone(pm.by[ns])
}

// madeBy is the manager image of a step pod: the image of its entrypoint init container.
func madeBy(pod *corev1.Pod) string {
	if len(pod.Spec.InitContainers) == 0 {
		return "(no init container)"
	}
	return pod.Spec.InitContainers[0].Image
}

var _ = Describe("Sharding", Serial, func() {
	const runsPerRound = 3

	// runAll creates Runs name0..name<n-1> of the "chain" Scene in each namespace.
	runAll := func(ctx context.Context, namespaces []string, round int) []types.NamespacedName {
		var runs []types.NamespacedName
		for _, ns := range namespaces {
			for i := range runsPerRound {
				name := fmt.Sprintf("r%d-%d", round, i)
				createRun(ctx, ns, name, "chain", nil)
				runs = append(runs, types.NamespacedName{Namespace: ns, Name: name})
			}
		}
		return runs
	}
	succeeded := func(ctx context.Context, runs []types.NamespacedName) {
		for _, r := range runs {
			Expect(finished(ctx, r.Namespace, r.Name).Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded), r.String())
		}
	}

	It("reconciles every Run by exactly the shard of its namespace, and drops none while a shard restarts", func(ctx SpecContext) {
		kctx, stopKubelet := context.WithCancel(context.Background())
		defer stopKubelet()
		go testKubelet.run(kctx)

		// Two namespaces of each shard (names are random; their hashes decide).
		byShard := map[int][]string{}
		for len(byShard[0]) < 2 || len(byShard[1]) < 2 {
			Expect(len(byShard[0])+len(byShard[1])).To(BeNumerically("<", 40), "namespaces of both shards")
			ns := newNamespace(ctx, echoLastArg)
			byShard[shard.Of(ns, 2)] = append(byShard[shard.Of(ns, 2)], ns)
		}
		namespaces := append(append([]string{}, byShard[0]...), byShard[1]...)
		created := map[string]*podCreations{}
		makers := watchPodMakers(ctx, namespaces)
		for _, ns := range namespaces {
			created[ns] = watchPodCreations(ctx, ns)
			createScene(ctx, ns, "chain", container("a", "a"), container("b", "b", "a"), container("c", "c", "b"))
		}

		stopMgr()
		DeferCleanup(func() { stopMgr = startManager(suiteConfig()) })
		start := func(i int) context.CancelFunc {
			return startManager(runcontroller.RunConfig{EntrypointImage: shardImage(fmt.Sprintf("shard-%d", i)), MaxDepth: 3},
				asShard(shard.Shard{Index: i, Count: 2}))
		}
		stops := []context.CancelFunc{start(0), start(1)}
		DeferCleanup(func() {
			for _, stop := range stops {
				stop()
			}
		})

		By("running Runs in all four namespaces with both shards up")
		succeeded(ctx, runAll(ctx, namespaces, 0))

		By("stopping shard 1: its namespaces' new Runs wait, shard 0's go on")
		stops[1]()
		waiting := runAll(ctx, byShard[1], 1)
		succeeded(ctx, runAll(ctx, byShard[0], 1))
		Consistently(func(g Gomega) {
			for _, r := range waiting {
				run := &ergonv1alpha1.Run{}
				g.Expect(k8sClient.Get(ctx, r, run)).To(Succeed())
				g.Expect(run.Status.Phase).To(BeEmpty(), "no other shard touches %s", r)
			}
		}).WithTimeout(2 * time.Second).Should(Succeed())

		By("starting shard 1 again: it takes up its waiting Runs")
		stops[1] = start(1)
		succeeded(ctx, waiting)

		for _, ns := range namespaces {
			want := shardImage(fmt.Sprintf("shard-%d", shard.Of(ns, 2)))
			Eventually(created[ns].count).Should(Equal(2 * runsPerRound * 3))
			Expect(makers.of(ns)).To(Equal(map[string]int{want: 2 * runsPerRound * 3}), "the pods of %s by maker", ns)
			Expect(created[ns].duplicates()).To(BeEmpty(), "pods created more than once in %s", ns)
		}
	})

	It("hands a shard to its standby replica within 15 s of the leader dying", func(ctx SpecContext) {
		kctx, stopKubelet := context.WithCancel(context.Background())
		defer stopKubelet()
		go testKubelet.run(kctx)
		ns := newNamespace(ctx, echoLastArg)
		createScene(ctx, ns, "chain", container("a", "a"), container("b", "b", "a"), container("c", "c", "b"))

		stopMgr()
		DeferCleanup(func() { stopMgr = startManager(suiteConfig()) })
		id := "failover-" + ns + ".ergon.dev"
		stopLeader := startManager(runcontroller.RunConfig{EntrypointImage: shardImage("leader"), MaxDepth: 3}, leading(id, false))
		stopped := false
		DeferCleanup(func() {
			if !stopped {
				stopLeader()
			}
		})
		lease := &coordinationv1.Lease{}
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: "default", Name: id}, lease)).To(Succeed())
			g.Expect(lease.Spec.HolderIdentity).NotTo(BeNil())
		}).Should(Succeed())
		createRun(ctx, ns, "before", "chain", nil)
		Expect(finished(ctx, ns, "before").Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded))

		DeferCleanup(startManager(runcontroller.RunConfig{EntrypointImage: shardImage("standby"), MaxDepth: 3}, leading(id, true)))
		time.Sleep(3 * time.Second) // the standby's caches sync; it keeps trying the Lease

		By("killing the leader: it stops renewing and never releases its Lease")
		killed := time.Now()
		stopLeader()
		stopped = true
		createRun(ctx, ns, "after", "chain", nil)
		var first *corev1.Pod
		Eventually(func(g Gomega) {
			for _, pod := range stepPods(ctx, ns) {
				if pod.Labels[ergonv1alpha1.LabelRun] == "after" {
					first = &pod
				}
			}
			g.Expect(first).NotTo(BeNil())
		}).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
		failover := time.Since(killed)
		AddReportEntry("leader failover (kill to the next step pod)", failover.Round(100*time.Millisecond).String())
		GinkgoWriter.Printf("failover: %s\n", failover)
		Expect(madeBy(first)).To(Equal(shardImage("standby")))
		Expect(failover).To(BeNumerically("<", 15*time.Second))
		Expect(finished(ctx, ns, "after").Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded))
	})
})
