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

package budget

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

var now = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

// run is a Run created age ago whose steps used the tokens and costs given in pairs; its
// status.usage says what its children added on top.
func run(name string, age time.Duration, children ergonv1alpha1.AgentUsage, steps ...ergonv1alpha1.AgentUsage) ergonv1alpha1.Run {
	r := ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(now.Add(-age))}}
	total := children
	for _, u := range steps {
		s := ergonv1alpha1.StepStatus{Name: "s"}
		if u.TotalTokens >= 0 {
			s.Usage = &u
			total.TotalTokens += u.TotalTokens
		}
		r.Status.Steps = append(r.Status.Steps, s)
	}
	r.Status.Usage = &total
	return r
}

func TestSceneSpentCountsTheStepsOfRunsOfTheLastDay(t *testing.T) {
	children := ergonv1alpha1.AgentUsage{TotalTokens: 1 << 30, Cost: "1000"}
	cases := []struct {
		name string
		runs []ergonv1alpha1.Run
		want Spending
	}{
		{"none", nil, Spending{}},
		{"steps of recent Runs add up, steps without usage count nothing",
			[]ergonv1alpha1.Run{run("a", time.Hour, children, ergonv1alpha1.AgentUsage{TotalTokens: 100, Cost: "0.25"},
				ergonv1alpha1.AgentUsage{TotalTokens: -1}, ergonv1alpha1.AgentUsage{TotalTokens: 50}),
				run("b", 23*time.Hour, children, ergonv1alpha1.AgentUsage{TotalTokens: 7, Cost: "1.5"})},
			Spending{157, "1.75"}},
		{"Runs created a day ago or earlier are out of the window",
			[]ergonv1alpha1.Run{run("old", 24*time.Hour, children, ergonv1alpha1.AgentUsage{TotalTokens: 1000}),
				run("older", 30*time.Hour, children, ergonv1alpha1.AgentUsage{TotalTokens: 1000}),
				run("new", time.Minute, children, ergonv1alpha1.AgentUsage{TotalTokens: 1})}, Spending{Tokens: 1}},
		{"the Run starting is left out", []ergonv1alpha1.Run{run("self", time.Second, children, ergonv1alpha1.AgentUsage{TotalTokens: 500}),
			run("a", time.Hour, children, ergonv1alpha1.AgentUsage{TotalTokens: 5})}, Spending{Tokens: 5}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := SceneSpent(tc.runs, "self", now); got != tc.want {
				t.Fatalf("SceneSpent = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestTriggerSpentCountsWhatItsRunsSetOff(t *testing.T) {
	a := run("a", 2*time.Hour, ergonv1alpha1.AgentUsage{TotalTokens: 1000, Cost: "2"}, ergonv1alpha1.AgentUsage{TotalTokens: 10})
	b := run("b", 20*time.Hour, ergonv1alpha1.AgentUsage{Cost: "0.5"})
	old := run("old", 25*time.Hour, ergonv1alpha1.AgentUsage{TotalTokens: 1 << 20, Cost: "99"})
	fresh := run("fresh", 0, ergonv1alpha1.AgentUsage{})
	fresh.Status.Usage = nil
	got, frees := TriggerSpent([]*ergonv1alpha1.Run{&a, &old, &b, &fresh}, now)
	if want := (Spending{1010, "2.5"}); got != want {
		t.Errorf("TriggerSpent = %+v, want %+v", got, want)
	}
	if want := now.Add(4 * time.Hour); !frees.Equal(want) {
		t.Errorf("the window frees at %s, want %s (b's creation plus a day)", frees, want)
	}
	if _, frees := TriggerSpent(nil, now); !frees.IsZero() {
		t.Errorf("no Runs, yet the window frees at %s", frees)
	}
}

func TestExceeded(t *testing.T) {
	cases := []struct {
		name   string
		spent  Spending
		budget *ergonv1alpha1.SceneBudget
		want   string
	}{
		{"no budget", Spending{1 << 40, "1000000"}, nil, ""},
		{"under both", Spending{999, "24.99"}, &ergonv1alpha1.SceneBudget{TokensPerDay: 1000, CostPerDay: "25"}, ""},
		{"tokens reached", Spending{1000, "1"}, &ergonv1alpha1.SceneBudget{TokensPerDay: 1000, CostPerDay: "25"},
			"used 1000 tokens in the last 24 hours, its budget.tokensPerDay is 1000"},
		{"cost reached", Spending{10, "25.000"}, &ergonv1alpha1.SceneBudget{TokensPerDay: 1000, CostPerDay: "25"},
			"cost 25.000 in the last 24 hours, its budget.costPerDay is 25"},
		{"a cost budget only: tokens do not count", Spending{1 << 40, ""}, &ergonv1alpha1.SceneBudget{CostPerDay: "0.01"}, ""},
		{"a cost budget of zero is spent at once", Spending{}, &ergonv1alpha1.SceneBudget{CostPerDay: "0"},
			"cost 0 in the last 24 hours, its budget.costPerDay is 0"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			why, over := tc.spent.Exceeded(tc.budget)
			if why != tc.want || over != (tc.want != "") {
				t.Errorf("Exceeded = %q, %v; want %q", why, over, tc.want)
			}
		})
	}
}
