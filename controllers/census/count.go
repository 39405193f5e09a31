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

package census

import (
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/shard"
)

// sample is one value of a gauge.
type sample struct {
	desc   *prometheus.Desc
	labels []string
	value  float64
}

// key is a gauge's labels, joined.
type key struct{ namespace, phase string }

// countRuns counts the unfinished Runs of the shard by namespace and phase, the age of the
// oldest of each, and, per namespace, the longest a Running Run has gone without progress.
func countRuns(runs []ergonv1alpha1.Run, s shard.Shard, now time.Time) []sample {
	count := map[key]int{}
	oldest := map[key]time.Time{}
	idle := map[string]time.Duration{}
	for i := range runs {
		run := &runs[i]
		phase := run.Status.Phase
		if phase == "" {
			phase = ergonv1alpha1.RunPending
		}
		if phase.Finished() || !s.Owns(run.Namespace) {
			continue
		}
		k := key{run.Namespace, string(phase)}
		count[k]++
		if at, ok := oldest[k]; !ok || run.CreationTimestamp.Time.Before(at) {
			oldest[k] = run.CreationTimestamp.Time
		}
		if phase == ergonv1alpha1.RunRunning {
			idle[run.Namespace] = max(idle[run.Namespace], now.Sub(lastProgress(run)))
		}
	}
	var out []sample
	for _, k := range sortedKeys(count) {
		out = append(out, sample{runsDesc, []string{k.namespace, k.phase}, float64(count[k])},
			sample{runsOldestDesc, []string{k.namespace, k.phase}, seconds(now.Sub(oldest[k]))})
	}
	for _, ns := range slices.Sorted(maps.Keys(idle)) {
		out = append(out, sample{runsIdleDesc, []string{ns}, seconds(idle[ns])})
	}
	return out
}

// lastProgress is the latest time the Run or one of its steps or attempts started or ended, or
// a retry is due: its creation when none has.
func lastProgress(run *ergonv1alpha1.Run) time.Time {
	last := run.CreationTimestamp.Time
	later := func(t *metav1.Time) {
		if t != nil && t.After(last) {
			last = t.Time
		}
	}
	later(run.Status.StartedAt)
	for i := range run.Status.Steps {
		st := &run.Status.Steps[i]
		later(st.StartedAt)
		later(st.FinishedAt)
		later(st.NextAttemptAt)
		for j := range st.History {
			later(st.History[j].StartedAt)
			later(st.History[j].FinishedAt)
		}
	}
	return last
}

// countGates counts the shard's Gates that wait for a decision, and the age of the oldest,
// per namespace.
func countGates(gates []ergonv1alpha1.Gate, s shard.Shard, now time.Time) []sample {
	count := map[string]int{}
	oldest := map[string]time.Time{}
	for i := range gates {
		g := &gates[i]
		if !g.Status.Phase.Open() || !g.DeletionTimestamp.IsZero() || !s.Owns(g.Namespace) {
			continue
		}
		count[g.Namespace]++
		if at, ok := oldest[g.Namespace]; !ok || g.CreationTimestamp.Time.Before(at) {
			oldest[g.Namespace] = g.CreationTimestamp.Time
		}
	}
	var out []sample
	for _, ns := range slices.Sorted(maps.Keys(count)) {
		out = append(out, sample{gatesPendingDesc, []string{ns}, float64(count[ns])},
			sample{gatesOldestDesc, []string{ns}, seconds(now.Sub(oldest[ns]))})
	}
	return out
}

// countTriggers counts the shard's Triggers whose budget is spent, per namespace.
func countTriggers(triggers []ergonv1alpha1.Trigger, s shard.Shard) []sample {
	count := map[string]int{}
	for i := range triggers {
		t := &triggers[i]
		if s.Owns(t.Namespace) && meta.IsStatusConditionTrue(t.Status.Conditions, ergonv1alpha1.ConditionBudgetExceeded) {
			count[t.Namespace]++
		}
	}
	var out []sample
	for _, ns := range slices.Sorted(maps.Keys(count)) {
		out = append(out, sample{triggersOverBudgetDesc, []string{ns}, float64(count[ns])})
	}
	return out
}

func seconds(d time.Duration) float64 { return max(d, 0).Seconds() }

func sortedKeys(m map[key]int) []key {
	return slices.SortedFunc(maps.Keys(m), func(a, b key) int {
		if c := strings.Compare(a.namespace, b.namespace); c != 0 {
			return c
		}
		return strings.Compare(a.phase, b.phase)
	})
}
