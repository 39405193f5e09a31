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
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

// gauge is the value of the manager's gauge name for the labels given, as /metrics exposes
// it, and whether it has such a series.
func gauge(g Gomega, name string, labels map[string]string) (float64, bool) {
	families, err := ctrlmetrics.Registry.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if matches(m.GetLabel(), labels) {
				return m.GetGauge().GetValue(), true
			}
		}
	}
	return 0, false
}

var _ = Describe("The census the manager reports when scraped", func() {
	It("counts a namespace's unfinished Runs by phase and its open Gates, and drops them once they end", func(ctx SpecContext) {
		ns := newNamespace(ctx, func(pod *corev1.Pod) outcome { return outcome{Stay: true} })
		createScene(ctx, ns, "gated", ergonv1alpha1.Step{Name: "review", Gate: &ergonv1alpha1.GateStep{Message: "Go?"}})
		createScene(ctx, ns, "slow", container("a", "stay"))
		createRun(ctx, ns, "gated-1", "gated", nil)
		createRun(ctx, ns, "gated-2", "gated", nil)
		createRun(ctx, ns, "slow-1", "slow", nil)
		value := func(g Gomega, name string, labels map[string]string) float64 {
			v, ok := gauge(g, name, labels)
			g.Expect(ok).To(BeTrue(), "no series %s%v", name, labels)
			return v
		}
		of := map[string]string{"namespace": ns}
		Eventually(func(g Gomega) {
			g.Expect(value(g, "ergon_runs", map[string]string{"namespace": ns, "phase": "Waiting"})).To(Equal(2.0))
			g.Expect(value(g, "ergon_runs", map[string]string{"namespace": ns, "phase": "Running"})).To(Equal(1.0))
			g.Expect(value(g, "ergon_runs_oldest_seconds", map[string]string{"namespace": ns, "phase": "Waiting"})).
				To(And(BeNumerically(">=", 0), BeNumerically("<", 60)))
			g.Expect(value(g, "ergon_runs_idle_seconds", of)).To(And(BeNumerically(">=", 0), BeNumerically("<", 60)))
			g.Expect(value(g, "ergon_gates_pending", of)).To(Equal(2.0))
			g.Expect(value(g, "ergon_gates_oldest_pending_seconds", of)).To(And(BeNumerically(">=", 0), BeNumerically("<", 60)))
		}).Should(Succeed())

		for _, name := range []string{"gated-1", "gated-2", "slow-1"} {
			cancelRun(ctx, ns, name)
		}
		Eventually(func(g Gomega) {
			for _, name := range []string{"ergon_runs", "ergon_runs_oldest_seconds"} {
				for _, phase := range []string{"Pending", "Running", "Waiting"} {
					_, ok := gauge(g, name, map[string]string{"namespace": ns, "phase": phase})
					g.Expect(ok).To(BeFalse(), "%s{phase=%s} is still reported once the Runs ended", name, phase)
				}
			}
			for _, name := range []string{"ergon_runs_idle_seconds", "ergon_gates_pending", "ergon_gates_oldest_pending_seconds"} {
				_, ok := gauge(g, name, of)
				g.Expect(ok).To(BeFalse(), "%s is still reported once the Runs ended", name)
			}
		}).Should(Succeed())
	})
})
