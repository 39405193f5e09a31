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
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

func usedRun(name string, created time.Time, tokens int64, cost string) *ergonv1alpha1.Run {
	r := activeRun(name)
	r.CreationTimestamp = metav1.NewTime(created)
	r.Status.Usage = &ergonv1alpha1.AgentUsage{TotalTokens: tokens, Cost: cost}
	return r
}

func TestPlanBudget(t *testing.T) {
	now := created.Add(30 * time.Hour)
	withBudget := func(b ergonv1alpha1.SceneBudget, exceededBefore bool) *ergonv1alpha1.Trigger {
		return scheduled(func(t *ergonv1alpha1.Trigger) {
			t.Spec.Budget = &b
			if exceededBefore {
				t.Status.Conditions = []metav1.Condition{{Type: ergonv1alpha1.ConditionBudgetExceeded, Status: metav1.ConditionTrue}}
			}
		})
	}
	runs := []*ergonv1alpha1.Run{
		usedRun("old", now.Add(-25*time.Hour), 1<<30, "1000"), // out of the window
		usedRun("a", now.Add(-20*time.Hour), 600, "1.50"),
		usedRun("b", now.Add(-time.Hour), 400, "0.75"),
	}
	tests := []struct {
		name     string
		trigger  *ergonv1alpha1.Trigger
		exceeded string // substring; "" when within
		event    bool
		requeue  time.Duration
		cond     metav1.ConditionStatus
	}{
		{name: "no budget: no condition, nothing skipped", trigger: scheduled(nil)},
		{name: "within both", trigger: withBudget(ergonv1alpha1.SceneBudget{TokensPerDay: 1001, CostPerDay: "2.26"}, false),
			cond: metav1.ConditionFalse},
		{name: "tokens spent: skip, tell once, look again when Run a leaves the window",
			trigger:  withBudget(ergonv1alpha1.SceneBudget{TokensPerDay: 1000}, false),
			exceeded: "used 1000 tokens in the last 24 hours, its budget.tokensPerDay is 1000", event: true,
			requeue: 4 * time.Hour, cond: metav1.ConditionTrue},
		{name: "cost spent, told before: no second Event in the same window",
			trigger:  withBudget(ergonv1alpha1.SceneBudget{CostPerDay: "2.25"}, true),
			exceeded: "cost 2.25 in the last 24 hours, its budget.costPerDay is 2.25", requeue: 4 * time.Hour,
			cond: metav1.ConditionTrue},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := PlanBudget(tc.trigger, runs, now)
			if tc.exceeded == "" && p.Exceeded != "" || !strings.Contains(p.Exceeded, tc.exceeded) {
				t.Errorf("exceeded %q, want %q", p.Exceeded, tc.exceeded)
			}
			if got := len(p.Events) == 1 && p.Events[0].Reason == ergonv1alpha1.ReasonBudgetExceeded &&
				p.Events[0].Type == "Warning"; got != tc.event {
				t.Errorf("events %+v, want a BudgetExceeded Warning: %v", p.Events, tc.event)
			}
			if p.RequeueAfter != tc.requeue {
				t.Errorf("requeue after %s, want %s", p.RequeueAfter, tc.requeue)
			}
			switch {
			case tc.cond == "" && p.Condition != nil:
				t.Errorf("condition %+v, want none", p.Condition)
			case tc.cond != "" && (p.Condition == nil || p.Condition.Status != tc.cond ||
				p.Condition.Type != ergonv1alpha1.ConditionBudgetExceeded):
				t.Errorf("condition %+v, want BudgetExceeded %s", p.Condition, tc.cond)
			}
		})
	}
}

func TestASpentBudgetPassesOverTheDueTime(t *testing.T) {
	trigger := scheduled(nil)
	now := created.Add(25 * time.Minute)
	p := PlanSchedule(ScheduleFacts{Trigger: trigger, Now: now, Location: time.UTC, OverBudget: "spent"})
	if p.Start != nil || p.RunName != "" || !p.Skipped || !p.Scheduled.Equal(created.Add(20*time.Minute)) {
		t.Fatalf("plan = %+v; want the 09:20 time passed over, no Run", p)
	}
	if len(p.Events) != 0 {
		t.Errorf("events %+v; PlanBudget tells it once per window", p.Events)
	}
	if p.RequeueAfter != 5*time.Minute {
		t.Errorf("requeue after %s, want the next time", p.RequeueAfter)
	}
	within := PlanSchedule(ScheduleFacts{Trigger: trigger, Now: now, Location: time.UTC})
	if within.Start == nil || within.Skipped {
		t.Errorf("within budget the due Run starts: %+v", within)
	}
}
