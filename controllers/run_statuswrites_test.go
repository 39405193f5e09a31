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
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

var _ = Describe("Run status writes", func() {
	BeforeEach(func() {
		ctx, cancel := context.WithCancel(context.Background())
		go testKubelet.run(ctx)
		DeferCleanup(cancel)
	})

	It("coalesces a burst of step pods ending into a few writes, and loses none of them", func(ctx SpecContext) {
		const steps = 20
		// The pods run until release; then step i's pod ends i×60 ms later, so the test
		// kubelet (a pass every 50 ms) ends them over about 1.2 s, one or two a pass.
		var release atomic.Int64
		ns := newNamespace(ctx, func(pod *corev1.Pod) outcome {
			at := release.Load()
			i, _ := strconv.Atoi(strings.TrimPrefix(pod.Labels[ergonv1alpha1.LabelStep], "s"))
			if at == 0 || time.Now().UnixNano() < at+int64(i)*int64(60*time.Millisecond) {
				return outcome{Stay: true}
			}
			return outcome{Output: "done"}
		})
		var all []ergonv1alpha1.Step
		for i := range steps {
			all = append(all, container(fmt.Sprintf("s%02d", i), "true"))
		}
		createScene(ctx, ns, "burst", all...)
		createRun(ctx, ns, "r", "burst", nil)
		Eventually(func(g Gomega) {
			run := &ergonv1alpha1.Run{}
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "r"}, run)).To(Succeed())
			g.Expect(run.Status.Steps).To(HaveLen(steps))
			for _, s := range run.Status.Steps {
				g.Expect(s.Phase).To(Equal(ergonv1alpha1.StepRunning), s.Name)
			}
		}).WithContext(ctx).Should(Succeed())

		wc, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
		Expect(err).NotTo(HaveOccurred())
		w, err := wc.Watch(ctx, &ergonv1alpha1.RunList{}, client.InNamespace(ns))
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(w.Stop)
		release.Store(time.Now().UnixNano())
		writes := 0
		var last *ergonv1alpha1.Run
		for last == nil || !last.Status.Phase.Finished() {
			select {
			case e := <-w.ResultChan():
				if run, ok := e.Object.(*ergonv1alpha1.Run); ok && e.Type == watch.Modified {
					writes++
					last = run
				}
			case <-time.After(30 * time.Second):
				Fail("the Run did not finish within 30 s of its pods' release")
			}
		}
		GinkgoWriter.Printf("%d status writes while %d pods ended\n", writes, steps)
		Expect(last.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded))
		for _, s := range last.Status.Steps {
			Expect(s.Phase).To(Equal(ergonv1alpha1.StepSucceeded), s.Name)
		}
		// One write per pass would be one per kubelet pass that ended a pod, about 20; with
		// the manager's 1 s status interval it is the first ending, one write a second
		// after it, and the Run's success.
		Expect(writes).To(BeNumerically("<=", 5), "status writes while %d pods ended over about 1.2 s", steps)
	})

	It("tells a chain's progress in a few Events, and every step in its status", func(ctx SpecContext) {
		ns := newNamespace(ctx, echoLastArg)
		const steps = 8
		var chain []ergonv1alpha1.Step
		for i := range steps {
			var deps []string
			if i > 0 {
				deps = []string{fmt.Sprintf("s%d", i-1)}
			}
			chain = append(chain, container(fmt.Sprintf("s%d", i), "true", deps...))
		}
		createScene(ctx, ns, "chain", chain...)
		createRun(ctx, ns, "r", "chain", nil)
		run := finished(ctx, ns, "r")
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded))
		Expect(run.Status.Steps).To(HaveLen(steps))
		for _, s := range run.Status.Steps {
			Expect(s.Phase).To(Equal(ergonv1alpha1.StepSucceeded), s.Name)
		}
		var told []string
		Eventually(func(g Gomega) {
			told = nil
			list := &eventsv1.EventList{}
			g.Expect(k8sClient.List(ctx, list, client.InNamespace(ns))).To(Succeed())
			slices.SortFunc(list.Items, func(a, b eventsv1.Event) int { return a.EventTime.Compare(b.EventTime.Time) })
			for _, e := range list.Items {
				if e.Regarding.Name == "r" && e.Type == corev1.EventTypeNormal {
					told = append(told, e.Reason+": "+e.Note)
				}
			}
			g.Expect(told).NotTo(BeEmpty())
			g.Expect(told[len(told)-1]).To(HavePrefix("RunSucceeded: "))
		}).WithContext(ctx).Should(Succeed())
		GinkgoWriter.Printf("Events of a chain of %d steps:\n%s\n", steps, strings.Join(told, "\n"))
		// One Event a pass would be one a step and the Run's end; the 10 s interval tells the
		// first step's start, then the rest with the Run's end (or once more, on a slow machine).
		Expect(len(told)).To(BeNumerically("<=", 3))
		all := strings.Join(told, "\n")
		for i := range steps {
			Expect(all).To(ContainSubstring(fmt.Sprintf("s%d", i)), "every step is told")
		}
		Expect(all).To(ContainSubstring("8 steps succeeded"))
	})
})
