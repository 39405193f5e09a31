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

package triggers

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/budget"
)

// BudgetPlan is what a Trigger's budget decides on one look.
type BudgetPlan struct {
	// Exceeded is why the Trigger starts no Run now ("" when it may): the Runs it created in
	// the last 24 hours used its budget.
	Exceeded string
	// Condition is the Trigger's BudgetExceeded condition; nil for a Trigger without a budget,
	// which has none.
	Condition *metav1.Condition
	// Events are told once per window: when the budget becomes spent.
	Events []Event
	// RequeueAfter is when the window frees enough to look again; zero when not spent.
	RequeueAfter time.Duration
}

// PlanBudget decides whether a Trigger may start Runs under its budget, from the Runs it
// created (any phase) and the time. It changes nothing and calls nothing.
func PlanBudget(trigger *ergonv1alpha1.Trigger, runs []*ergonv1alpha1.Run, now time.Time) BudgetPlan {
	b := trigger.Spec.Budget
	if b == nil {
		return BudgetPlan{}
	}
	spent, frees := budget.TriggerSpent(runs, now)
	why, over := spent.Exceeded(b)
	if !over {
		return BudgetPlan{Condition: &metav1.Condition{Type: ergonv1alpha1.ConditionBudgetExceeded,
			Status: metav1.ConditionFalse, Reason: "WithinBudget", ObservedGeneration: trigger.Generation,
			Message: "the Runs of the last 24 hours are within spec.budget"}}
	}
	why = "the Runs this Trigger created " + why + "; it starts no Run until the window frees"
	plan := BudgetPlan{Exceeded: why, Condition: &metav1.Condition{Type: ergonv1alpha1.ConditionBudgetExceeded,
		Status: metav1.ConditionTrue, Reason: ergonv1alpha1.ReasonBudgetExceeded, ObservedGeneration: trigger.Generation,
		Message: why}}
	if !frees.IsZero() {
		plan.RequeueAfter = max(frees.Sub(now), time.Second)
	}
	if !meta.IsStatusConditionTrue(trigger.Status.Conditions, ergonv1alpha1.ConditionBudgetExceeded) {
		plan.Events = append(plan.Events, Event{Type: corev1.EventTypeWarning, Reason: ergonv1alpha1.ReasonBudgetExceeded,
			Action: "Start", Message: why})
	}
	return plan
}
