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

package run

import (
	"time"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/compile"
	"github.com/ergon-dev/ergon/internal/planner"
	"github.com/ergon-dev/ergon/internal/tracing"
)

// trace builds the spans of what a status write ended, records the metrics read from them
// (observeSpans), and emits them when the manager exports traces. The spans' times are the
// status's (and the pods' and transcripts' the pass read), their ids the Run's, so a pass
// after a restart emits nothing twice and the trace stays one tree.
func (r *RunReconciler) trace(run *ergonv1alpha1.Run, before, after *ergonv1alpha1.RunStatus, scene *compile.Scene,
	facts *planner.Facts) {
	if !tracing.Ends(before, after) {
		return
	}
	t := r.Config.Traces
	spans := tracing.Spans(traceChange(run, before, after, scene, facts, r.Clock.Now(), t != nil && t.Content))
	observeSpans(run.Namespace, spans)
	if t != nil {
		t.Emit(spans)
	}
}

// traceChange is a status write as internal/tracing reads it: the steps' kinds and models
// from the Scene, the pods' times, the Gates' deciders and the agents' transcripts from what
// the pass gathered (nil facts: a Run that ended before it started).
func traceChange(run *ergonv1alpha1.Run, before, after *ergonv1alpha1.RunStatus, scene *compile.Scene,
	facts *planner.Facts, now time.Time, content bool) tracing.Change {
	c := tracing.Change{Run: run, Before: before, After: after, Now: now, Content: content,
		Steps: map[string]tracing.StepInfo{}, Pods: map[string]tracing.PodTimes{}, Gates: map[string]tracing.GateInfo{},
		Transcripts: map[string]string{}}
	if scene != nil {
		for name, step := range scene.Steps {
			info := tracing.StepInfo{Kind: stepKind(step)}
			if step.Spec.Agent != nil {
				info.Model = agentModel(scene, step)
			}
			c.Steps[name] = info
		}
	}
	if facts == nil {
		return c
	}
	for _, pods := range facts.Pods {
		for _, p := range pods {
			c.Pods[p.Name] = tracing.PodTimes{Created: p.CreatedAt, Scheduled: p.ScheduledAt, Started: p.StartedAt, Finished: p.FinishedAt}
		}
	}
	c.Units = endedUnits(before, after, facts.UnitPods)
	for name, g := range facts.Gates {
		if g.Decided {
			c.Gates[name] = tracing.GateInfo{Option: g.Option, DecidedBy: g.DecidedBy}
		}
	}
	for pod, out := range facts.Outputs {
		if out.Transcript != "" {
			c.Transcripts[pod] = out.Transcript
		}
	}
	return c
}

// endedUnits are the pods of fan-out instances and loop iterations that after records as
// done and before did not, by step: each is traced once, by the write that records its end.
func endedUnits(before, after *ergonv1alpha1.RunStatus, pods map[string]map[planner.Unit][]planner.PodState) map[string][]tracing.UnitPod {
	if len(pods) == 0 {
		return nil
	}
	was := make(map[string]*ergonv1alpha1.StepStatus, len(before.Steps))
	for i := range before.Steps {
		was[before.Steps[i].Name] = &before.Steps[i]
	}
	units := map[string][]tracing.UnitPod{}
	for i := range after.Steps {
		s := &after.Steps[i]
		if s.Instances == nil && s.Loop == nil {
			continue
		}
		old := was[s.Name]
		if old == nil {
			old = &ergonv1alpha1.StepStatus{}
		}
		for un, ps := range pods[s.Name] {
			for _, p := range ps {
				if !planner.UnitPodEnded(s, un, p) || planner.UnitPodEnded(old, un, p) {
					continue
				}
				units[s.Name] = append(units[s.Name], tracing.UnitPod{Index: un.Index, Iteration: un.Iteration, Attempt: p.Attempt,
					Name: p.Name, Phase: string(p.Phase),
					PodTimes: tracing.PodTimes{Created: p.CreatedAt, Scheduled: p.ScheduledAt, Started: p.StartedAt, Finished: p.FinishedAt}})
			}
		}
	}
	return units
}
