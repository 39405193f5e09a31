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
	"maps"
	"slices"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/cost"
)

// RunUsage sums the model use of a Run: that of its steps (so far, for running ones) and
// what its child Runs report. Nil when nothing used a model. A cost that is not a decimal,
// which only an edited status could hold, is left out of the sum.
func RunUsage(steps []ergonv1alpha1.StepStatus, children map[string]ChildState) *ergonv1alpha1.AgentUsage {
	var parts []*ergonv1alpha1.AgentUsage
	for i := range steps {
		parts = append(parts, steps[i].Usage)
	}
	for _, name := range slices.Sorted(maps.Keys(children)) {
		parts = append(parts, children[name].Usage)
	}
	var total *ergonv1alpha1.AgentUsage
	for _, u := range parts {
		if u == nil {
			continue
		}
		if total == nil {
			total = &ergonv1alpha1.AgentUsage{}
		}
		total.Turns += u.Turns
		total.PromptTokens += u.PromptTokens
		total.CompletionTokens += u.CompletionTokens
		total.TotalTokens += u.TotalTokens
		if sum, err := cost.Sum(total.Cost, u.Cost); err == nil {
			total.Cost = sum
		}
	}
	return total
}
