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

// SceneBudget bounds what a Scene's Runs may spend on models.
type SceneBudget struct {
	// tokensPerDay bounds the tokens the Scene's Runs used over the last 24 hours: the
	// totalTokens of their own steps (a child Run counts toward its own Scene), over the
	// Runs created in that window. Once they reach it, a new Run fails at start with
	// BudgetExceeded and a Warning Event; Runs already running go on.
	// +kubebuilder:validation:Minimum=1
	// +required
	TokensPerDay int64 `json:"tokensPerDay"`
}
