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

package planner

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

// The fan-out and loop benchmarks run with make bench (go test -bench ./internal/...), not with
// make test. They report the Run's size when it ends and the writes the plans ask for per unit:
// pods and ConfigMaps created, pods deleted, and status writes (one per plan).

func thousandItems() ergonv1alpha1.SceneSpec {
	items := make([]string, ergonv1alpha1.MaxForEachItems)
	for i := range items {
		items[i] = fmt.Sprintf("shard-%04d", i)
	}
	raw, _ := json.Marshal(items)
	fan := fanStep(&ergonv1alpha1.ForEach{Items: &apiextensionsv1.JSON{Raw: raw}})
	fan.Retry = &ergonv1alpha1.RetryPolicy{Limit: 2}
	join := step("join", "fan")
	join.Container.Command = []string{"echo", "{{ .steps.fan.output }}"}
	return ergonv1alpha1.SceneSpec{Parallelism: new(int32(1000)), Steps: []ergonv1alpha1.Step{fan, join}}
}

// BenchmarkFanOut1000Plan measures one planning pass that starts 1,000 instances.
func BenchmarkFanOut1000Plan(b *testing.B) {
	w := newFlowWorld(b, thousandItems(), echoItem)
	for b.Loop() {
		w.run.Status = ergonv1alpha1.RunStatus{SceneSnapshot: w.run.Status.SceneSnapshot}
		f := &Facts{Now: w.now, Run: w.run, Scene: w.scene, Pods: map[string][]PodState{}, Outputs: map[string]Output{},
			Children: map[string]ChildState{}, Gates: map[string]GateState{}, PodBudget: -1, MaxDepth: 5}
		if p := Decide(f); len(p.Pods) != 1000 {
			b.Fatalf("started %d pods", len(p.Pods))
		}
	}
}

// BenchmarkFanOut1000Run runs a 1,000-item fan-out and its fan-in to the end, at the
// manager's default limits (and, as NoLimits, without them: the cost of the accounting).
func BenchmarkFanOut1000Run(b *testing.B) {
	b.Run("DefaultLimits", func(b *testing.B) { benchmarkFanOut1000Run(b, DefaultLimits) })
	b.Run("NoLimits", func(b *testing.B) { benchmarkFanOut1000Run(b, Limits{}) })
}

func benchmarkFanOut1000Run(b *testing.B, limits Limits) {
	var size, writes int
	for b.Loop() {
		w := newFlowWorld(b, thousandItems(), echoItem)
		w.limits = limits
		w.runToEnd()
		if w.run.Status.Phase != ergonv1alpha1.RunSucceeded {
			b.Fatalf("Run %s: %+v", w.run.Status.Phase, w.run.Status.Conditions)
		}
		raw, _ := json.Marshal(w.run)
		size = len(raw)
		writes = w.writes()
	}
	b.ReportMetric(float64(size), "run-bytes")
	b.ReportMetric(float64(writes)/1000, "writes/instance")
}

// BenchmarkLoop100 runs a loop of 100 iterations; the time is the engine's per iteration, on
// top of the pod's own.
func BenchmarkLoop100(b *testing.B) {
	var size int
	start := time.Now()
	for b.Loop() {
		draft := loopStep("outputs.ok", 100, "")
		draft.Container.Command = []string{"echo", "{{ .loop.iteration }}"}
		w := newFlowWorld(b, ergonv1alpha1.SceneSpec{Steps: []ergonv1alpha1.Step{draft}}, verdict(100))
		w.runToEnd()
		if s := w.status("draft"); s.Phase != ergonv1alpha1.StepSucceeded || s.Loop.Iteration != 100 {
			b.Fatalf("draft %s %+v", s.Phase, s.Loop)
		}
		raw, _ := json.Marshal(w.run)
		size = len(raw)
	}
	b.ReportMetric(float64(size), "run-bytes")
	b.ReportMetric(float64(time.Since(start).Microseconds())/float64(b.N)/100, "µs/iteration")
}

// writes counts the writes a world's plans asked for: a status write per plan, each creation
// (an AlreadyExists one too), each ConfigMap, and the deletion of each pod once it ended.
func (w *flowWorld) writes() int {
	n := w.pass
	for _, c := range w.created {
		n += c + 1
	}
	return n + len(w.stored)
}
