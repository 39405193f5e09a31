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

// Package budget is the arithmetic of model budgets per day: what Runs created in the last 24
// hours used, and whether that reaches a Scene's or a Trigger's budget (tokensPerDay,
// costPerDay).
package budget

import (
	"fmt"
	"time"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/cost"
)

// Window is the span a budget per day covers, up to now.
const Window = 24 * time.Hour

// Spending is what Runs used: tokens, and cost as a decimal string ("" for none).
type Spending struct {
	Tokens int64
	Cost   string
}

// add adds a usage to s; a cost that is not a decimal (only the manager writes status) is
// left out.
func (s *Spending) add(u *ergonv1alpha1.AgentUsage) {
	if u == nil {
		return
	}
	s.Tokens += u.TotalTokens
	if c, err := cost.Sum(s.Cost, u.Cost); err == nil {
		s.Cost = c
	}
}

// inWindow says whether a Run was created within Window of now.
func inWindow(run *ergonv1alpha1.Run, now time.Time) bool {
	return run.CreationTimestamp.After(now.Add(-Window))
}

// SceneSpent sums what the Runs of a Scene created within Window of now used in their own
// steps (a child Run counts toward its own Scene, so nothing counts twice). runs are the Runs
// that name the Scene; the Run named self, the one starting, is left out.
func SceneSpent(runs []ergonv1alpha1.Run, self string, now time.Time) Spending {
	var s Spending
	for i := range runs {
		run := &runs[i]
		if run.Name == self || !inWindow(run, now) {
			continue
		}
		for _, step := range run.Status.Steps {
			s.add(step.Usage)
		}
	}
	return s
}

// TriggerSpent sums what the Runs a Trigger created within Window of now used, from their
// status.usage, which includes their child Runs: a Trigger pays for all it set off. It also
// returns when the oldest of those Runs leaves the window, the soonest the spending can drop
// (zero when none is in it).
func TriggerSpent(runs []*ergonv1alpha1.Run, now time.Time) (Spending, time.Time) {
	var s Spending
	var frees time.Time
	for _, run := range runs {
		if !inWindow(run, now) {
			continue
		}
		s.add(run.Status.Usage)
		if out := run.CreationTimestamp.Add(Window); frees.IsZero() || out.Before(frees) {
			frees = out
		}
	}
	return s, frees
}

// Exceeded says whether s reaches budget b (nil: no budget), and how, for a message such as
// "used 1000 tokens in the last 24 hours, its budget.tokensPerDay is 1000". Tokens are
// checked first.
func (s Spending) Exceeded(b *ergonv1alpha1.SceneBudget) (string, bool) {
	if b == nil {
		return "", false
	}
	if b.TokensPerDay > 0 && s.Tokens >= b.TokensPerDay {
		return fmt.Sprintf("used %d tokens in the last 24 hours, its budget.tokensPerDay is %d", s.Tokens, b.TokensPerDay), true
	}
	if b.CostPerDay != "" {
		if c, err := cost.Compare(s.Cost, b.CostPerDay); err == nil && c >= 0 {
			spent := s.Cost
			if spent == "" {
				spent = "0"
			}
			return fmt.Sprintf("cost %s in the last 24 hours, its budget.costPerDay is %s", spent, b.CostPerDay), true
		}
	}
	return "", false
}
