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
	"slices"
	"strings"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/compile"
)

// branch is one after entry: the step that has it, and what it needs.
type branch struct {
	step    string
	on      []ergonv1alpha1.StepOutcome
	handles bool
}

// branchesOf returns the after entries that name a step of the graph.
func (p *planner) branchesOf(name string) []branch {
	if p.outcomes.branches == nil {
		p.outcomes.branches = map[string][]branch{}
		for _, n := range p.f.Scene.Graph.Names() {
			for _, a := range p.f.Scene.Steps[n].Spec.After {
				p.outcomes.branches[a.Step] = append(p.outcomes.branches[a.Step], branch{step: n, on: a.Outcomes, handles: a.Handles})
			}
		}
	}
	return p.outcomes.branches[name]
}

// routed reports whether a failure branch (an after entry with Failed) waits for the step.
func (p *planner) routed(name string) bool {
	return slices.ContainsFunc(p.branchesOf(name), func(b branch) bool {
		return slices.Contains(b.on, ergonv1alpha1.StepOutcome(ergonv1alpha1.StepFailed))
	})
}

// tolerated reports whether a step's failure lets the graph go on: it may fail
// (continueOnFailure), a failure branch waits for it, or it is a finally step, whose outcome
// never changes the Run's.
func (p *planner) tolerated(step *compile.Step) bool {
	return step.Spec.ContinueOnFailure || p.f.Scene.IsFinally(step.Name) || p.routed(step.Name)
}

// handled reports whether a branch that handles the step's failure succeeded.
func (p *planner) handled(name string) bool {
	return slices.ContainsFunc(p.branchesOf(name), func(b branch) bool {
		s := p.state(b.step)
		return b.handles && s != nil && s.Phase == ergonv1alpha1.StepSucceeded
	})
}

// unhandledFailure is the first step whose failure went to failure branches and that none of
// them handled: it fails the Run once the graph has ended. "" when there is none.
func (p *planner) unhandledFailure() string {
	for _, name := range p.order {
		s := p.steps[name]
		step := p.f.Scene.Steps[name]
		if s.Phase != ergonv1alpha1.StepFailed || step == nil || step.Spec.ContinueOnFailure ||
			p.f.Scene.IsFinally(name) || !p.routed(name) || p.handled(name) {
			continue
		}
		return name
	}
	return ""
}

// outcomeUnmet says which after entry of a step is not met, "" when all are.
func (p *planner) outcomeUnmet(step *compile.Step) string {
	for _, a := range step.Spec.After {
		phase := p.state(a.Step).Phase
		if !slices.Contains(a.Outcomes, ergonv1alpha1.StepOutcome(phase)) {
			on := make([]string, len(a.Outcomes))
			for i, o := range a.Outcomes {
				on[i] = string(o)
			}
			return fmt.Sprintf("it runs after %s ends %s, and %s ended %s", a.Step, strings.Join(on, " or "), a.Step, phase)
		}
	}
	return ""
}
