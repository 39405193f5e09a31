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
	"math/rand/v2"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/naming"
)

// runCreations records every Run created in a namespace, by name, with the UIDs it had.
type runCreations struct {
	mu   sync.Mutex
	uids map[string]map[types.UID]bool
}

func watchRunCreations(ctx context.Context, ns string) *runCreations {
	wc, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
	w, err := wc.Watch(ctx, &ergonv1alpha1.RunList{}, client.InNamespace(ns))
	Expect(err).NotTo(HaveOccurred())
	rc := &runCreations{uids: map[string]map[types.UID]bool{}}
	go func() {
		defer GinkgoRecover()
		for e := range w.ResultChan() {
			run, ok := e.Object.(*ergonv1alpha1.Run)
			if !ok || e.Type != watch.Added {
				continue
			}
			rc.mu.Lock()
			if rc.uids[run.Name] == nil {
				rc.uids[run.Name] = map[types.UID]bool{}
			}
			rc.uids[run.Name][run.UID] = true
			rc.mu.Unlock()
		}
	}()
	DeferCleanup(w.Stop)
	return rc
}

// duplicates counts the Runs created more than once under one name.
func (rc *runCreations) duplicates() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	n := 0
	for _, uids := range rc.uids {
		n += len(uids) - 1
	}
	return n
}

func (rc *runCreations) names() []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var names []string
	for name := range rc.uids {
		names = append(names, name)
	}
	return names
}

var _ = Describe("Schedule Triggers across restarts", Serial, func() {
	It("start each due time once when the manager stops in the middle of a fire", func(ctx SpecContext) {
		const fires = 12
		seed := uint64(time.Now().UnixNano())
		GinkgoWriter.Printf("trigger restart test seed: %d\n", seed)
		rng := rand.New(rand.NewPCG(seed, 2))

		ns := newNamespace(ctx, nil)
		created := watchRunCreations(ctx, ns)
		// This test runs its own managers; the suite's comes back afterwards.
		stopMgr()
		DeferCleanup(func() { stopMgr = startManager(suiteConfig()) })

		minute := nextMinute()
		scheduleTrigger(ctx, ns, "restarts")
		var last time.Time
		var scheduled []string // the names of the Runs of every time fired
		for i := range fires {
			stop := startManager(suiteConfig())
			last = minute.Add(time.Duration(i) * time.Minute)
			scheduled = append(scheduled, naming.ScheduledRunName("restarts", last))
			// The manager may be stopped before, while or after it creates the Run and records it.
			setTriggerClock(last.Add(time.Second))
			time.Sleep(time.Duration(rng.IntN(400)) * time.Millisecond)
			stop()
		}
		// A last manager catches up with the most recent time, if it was not started yet.
		stop := startManager(suiteConfig())
		defer stop()
		lastName := naming.ScheduledRunName("restarts", last)
		Eventually(func(g Gomega) {
			t := getTrigger(ctx, ns, "restarts")
			g.Expect(t.Status.LastScheduleTime).NotTo(BeNil())
			g.Expect(t.Status.LastScheduleTime.Time).To(BeTemporally("==", last))
			g.Expect(t.Status.LastRun).To(Equal(lastName))
		}).WithTimeout(20 * time.Second).Should(Succeed())
		Consistently(created.duplicates, "1s").Should(BeZero())

		names := triggerRuns(ctx, ns, "restarts")
		GinkgoWriter.Printf("fires: %d, Runs started: %d, duplicates: %d\n", fires, len(names), created.duplicates())
		Expect(names).To(ContainElement(lastName))
		Expect(len(names)).To(BeNumerically("<=", fires), "at most one Run per scheduled time")
		Expect(created.names()).To(ConsistOf(names), "every Run created is one of the schedule's")
		for _, name := range names {
			Expect(scheduled).To(ContainElement(name), "a Run is named by the time it was started for")
			Expect(getRun(ctx, ns, name).Labels).To(HaveKeyWithValue(ergonv1alpha1.LabelTrigger, "restarts"))
		}
	})
})
