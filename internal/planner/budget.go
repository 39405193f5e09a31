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
	"time"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

// BudgetWindow is the span a Scene's budget.tokensPerDay covers, up to now.
const BudgetWindow = 24 * time.Hour

// TokensSpent sums the tokens that the Runs of a Scene created within BudgetWindow of now
// used in their own steps (a child Run counts toward its own Scene, so nothing counts twice).
// runs are the Runs that name the Scene; the Run named self, the one starting, is left out.
func TokensSpent(runs []ergonv1alpha1.Run, self string, now time.Time) int64 {
	var spent int64
	since := now.Add(-BudgetWindow)
	for i := range runs {
		run := &runs[i]
		if run.Name == self || !run.CreationTimestamp.After(since) {
			continue
		}
		for _, s := range run.Status.Steps {
			if s.Usage != nil {
				spent += s.Usage.TotalTokens
			}
		}
	}
	return spent
}
