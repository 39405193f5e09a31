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
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

func TestRunUsageSumsStepsAndChildRuns(t *testing.T) {
	u := func(turns int32, prompt, completion int64, c string) *ergonv1alpha1.AgentUsage {
		return &ergonv1alpha1.AgentUsage{Turns: turns, PromptTokens: prompt, CompletionTokens: completion,
			TotalTokens: prompt + completion, Cost: c}
	}
	step := func(usage *ergonv1alpha1.AgentUsage) ergonv1alpha1.StepStatus {
		return ergonv1alpha1.StepStatus{Name: "s", Usage: usage}
	}
	cases := []struct {
		name     string
		steps    []ergonv1alpha1.StepStatus
		children map[string]ChildState
		want     *ergonv1alpha1.AgentUsage
	}{
		{"no model use", []ergonv1alpha1.StepStatus{step(nil)}, map[string]ChildState{"c": {}}, nil},
		{"one step", []ergonv1alpha1.StepStatus{step(u(2, 100, 20, "0.0006"))}, nil, u(2, 100, 20, "0.0006")},
		{"steps and children add up, costs exactly",
			[]ergonv1alpha1.StepStatus{step(u(2, 100, 20, "0.1")), step(nil), step(u(1, 50, 5, "0.2"))},
			map[string]ChildState{"a": {Usage: u(3, 1000, 100, "1.05")}, "b": {}},
			u(6, 1150, 125, "1.35")},
		{"unpriced steps count their tokens only",
			[]ergonv1alpha1.StepStatus{step(u(1, 10, 1, "")), step(u(1, 10, 1, "0.5"))}, nil, u(2, 20, 2, "0.5")},
		{"no pricing anywhere leaves the cost unset",
			[]ergonv1alpha1.StepStatus{step(u(1, 10, 1, ""))}, map[string]ChildState{"a": {Usage: u(1, 5, 5, "")}}, u(2, 15, 6, "")},
		{"a cost that is not a decimal is left out",
			[]ergonv1alpha1.StepStatus{step(u(1, 10, 1, "lots")), step(u(1, 10, 1, "0.25"))}, nil, u(2, 20, 2, "0.25")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := RunUsage(tc.steps, tc.children)
			if !equality.Semantic.DeepEqual(got, tc.want) {
				t.Fatalf("RunUsage = %+v, want %+v", got, tc.want)
			}
		})
	}
}
