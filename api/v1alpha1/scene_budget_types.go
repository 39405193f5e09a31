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

package v1alpha1

// SceneBudget bounds what Runs may spend on models per day: a Scene's (spec.budget) or a
// Trigger's (spec.budget). Set tokensPerDay, costPerDay or both; the first one reached counts.
// +kubebuilder:validation:XValidation:rule="has(self.tokensPerDay) || has(self.costPerDay)",message="a budget sets tokensPerDay, costPerDay or both"
type SceneBudget struct {
	// tokensPerDay bounds the tokens the Runs used over the last 24 hours. For a Scene: the
	// totalTokens of their own steps (a child Run counts toward its own Scene), over the
	// Scene's Runs created in that window; once they reach it, a new Run fails at start with
	// BudgetExceeded and a Warning Event; Runs already running go on. For a Trigger: the
	// status.usage of the Runs it created in that window (child Runs included); once they
	// reach it, the Trigger starts no Run (see the Trigger's budget).
	// +kubebuilder:validation:Minimum=1
	// +optional
	TokensPerDay int64 `json:"tokensPerDay,omitempty"`

	// costPerDay bounds the cost of the same Runs over the last 24 hours, a decimal string
	// in the currency of the models' pricing, such as "25.00". Only models with a pricing
	// add cost.
	// +kubebuilder:validation:Pattern=`^[0-9]{1,9}(\.[0-9]{1,12})?$`
	// +kubebuilder:validation:MaxLength=22
	// +optional
	CostPerDay string `json:"costPerDay,omitempty"`
}

// ConditionBudgetExceeded is True on a Trigger while the Runs it created in the last 24 hours
// have used its budget, and it starts no Run.
const ConditionBudgetExceeded = "BudgetExceeded"
