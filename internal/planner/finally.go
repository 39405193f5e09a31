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
	"fmt"
	"time"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/template"
)

// DefaultFinallyTimeout bounds a Scene's finally steps together when it sets no finallyTimeout.
const DefaultFinallyTimeout = 10 * time.Minute

// outcomeState is what one pass knows of finally steps and failure branches.
type outcomeState struct {
	// finalizing is true while the planner decides finally steps: the graph has ended.
	finalizing bool
	// graphStop is why the graph stopped (cancelled, timed out) while finally steps are
	// decided: it lifts a suspension as it does for the graph.
	graphStop string
	// branches are, by step name, the after entries that name it; built on first use.
	branches map[string][]branch
}

// decideFinally starts and follows the finally steps once the graph has ended, whatever its
// outcome. They see the outcome as .run.phase and the failed steps as .run.failedSteps. The
// Run's cancellation or timeout does not stop them; spec.finallyTimeout, counted from when
// the graph ended, does.
func (p *planner) decideFinally() {
	fin := p.f.Scene.Finally
	if fin == nil {
		return
	}
	o := p.graphOutcome()
	if !o.done {
		return
	}
	run := p.templateData()[template.KindRun].(map[string]any)
	run["phase"] = string(o.phase)
	run["failedSteps"] = toAny(p.failedSteps())

	graphStop := p.stopReason
	defer func() { p.stopReason, p.outcomes.finalizing, p.outcomes.graphStop = graphStop, false, "" }()
	p.stopReason, p.outcomes.finalizing, p.outcomes.graphStop = "", true, graphStop
	if deadline := p.graphEndedAt().Add(p.finallyTimeout()); !p.f.Now.Before(deadline) {
		p.stopReason = ergonv1alpha1.ReasonFinallyTimedOut
	} else {
		p.wakeAt(deadline)
	}
	for _, name := range fin.TopologicalOrder() {
		p.decide(p.f.Scene.Steps[name])
	}
}

// finalizingPhase is the Run's phase once its graph has ended: Running while finally steps
// have not ended, then the graph's outcome. Progress counts the finally steps too.
func (p *planner) finalizingPhase(o outcome) (phase ergonv1alpha1.RunPhase, reason, message string, finished, total int) {
	phase, reason, message, finished, total = o.phase, o.reason, o.message, o.finished, o.total
	fin := p.f.Scene.Finally
	if fin == nil {
		return
	}
	done, failed := 0, ""
	for _, name := range fin.Names() {
		s := p.state(name)
		if s == nil || !s.Phase.Finished() {
			continue
		}
		done++
		if s.Phase == ergonv1alpha1.StepFailed && failed == "" {
			failed = name
		}
	}
	finished, total = finished+done, total+fin.Len()
	if done < fin.Len() {
		return ergonv1alpha1.RunRunning, ergonv1alpha1.ReasonFinalizing,
			fmt.Sprintf("the graph ended %s (%s); %d of %d finally steps finished", o.phase, o.message, done, fin.Len()), finished, total
	}
	switch {
	case failed != "":
		message += fmt.Sprintf("; finally step %s failed: %s", failed, p.state(failed).Message)
	case phase == ergonv1alpha1.RunSucceeded:
		message = fmt.Sprintf("all %d steps finished", total)
	}
	return
}

// graphEndedAt is when the last step of the graph ended: the start of spec.finallyTimeout. It
// is read from the recorded steps, so every pass finds the same time.
func (p *planner) graphEndedAt() time.Time {
	var ended time.Time
	if at := p.f.Run.Status.StartedAt; at != nil {
		ended = at.Time
	}
	for _, name := range p.f.Scene.Graph.Names() {
		if s := p.state(name); s != nil && s.FinishedAt != nil && s.FinishedAt.After(ended) {
			ended = s.FinishedAt.Time
		}
	}
	if ended.IsZero() {
		ended = p.f.Now
	}
	return ended
}

func (p *planner) finallyTimeout() time.Duration {
	if t := p.f.Scene.Spec.FinallyTimeout; t != nil {
		return t.Duration
	}
	return DefaultFinallyTimeout
}

// failedSteps are the steps of the Run that failed, in status order.
func (p *planner) failedSteps() []string {
	var failed []string
	for _, name := range p.order {
		if p.steps[name].Phase == ergonv1alpha1.StepFailed {
			failed = append(failed, name)
		}
	}
	return failed
}

func toAny(names []string) []any {
	out := make([]any, len(names))
	for i, n := range names {
		out[i] = n
	}
	return out
}
