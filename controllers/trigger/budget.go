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

package trigger

import (
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/budget"
	"github.com/ergon-dev/ergon/internal/triggers"
)

// all is every Run the Trigger owns.
func (f *triggerFacts) all() []*ergonv1alpha1.Run {
	return slices.Concat(f.active, f.succeeded, f.failed)
}

// planBudget decides whether the Trigger's budget lets it start Runs, records the decision in
// its BudgetExceeded condition (removed for a Trigger without a budget), and tells it once per
// window in an Event. It returns the plan, whose Exceeded the sources honour.
func (r *TriggerReconciler) planBudget(trigger *ergonv1alpha1.Trigger, facts *triggerFacts,
	status *ergonv1alpha1.TriggerStatus) triggers.BudgetPlan {
	plan := triggers.PlanBudget(trigger, facts.all(), r.Clock.Now())
	if plan.Condition == nil {
		meta.RemoveStatusCondition(&status.Conditions, ergonv1alpha1.ConditionBudgetExceeded)
	} else {
		meta.SetStatusCondition(&status.Conditions, *plan.Condition)
	}
	for _, e := range plan.Events {
		r.Recorder.Eventf(trigger, nil, e.Type, e.Reason, e.Action, "%s", e.Message)
	}
	return plan
}

// keptForBudget says whether a finished Run stays beyond the history limits because it counts
// toward the Trigger's budget: a Run deleted would no longer be counted.
func keptForBudget(trigger *ergonv1alpha1.Trigger, run *ergonv1alpha1.Run, now time.Time) bool {
	return trigger.Spec.Budget != nil && run.CreationTimestamp.After(now.Add(-budget.Window))
}

// sooner is the sooner of two requeue delays, zero meaning none.
func sooner(a, b time.Duration) time.Duration {
	if a == 0 || (b != 0 && b < a) {
		return b
	}
	return a
}
