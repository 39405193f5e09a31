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
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

func TestTokensSpentCountsTheStepsOfRunsOfTheLastDay(t *testing.T) {
	now := t0.Add(48 * time.Hour)
	run := func(name string, age time.Duration, tokens ...int64) ergonv1alpha1.Run {
		r := ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(now.Add(-age))}}
		for _, n := range tokens {
			s := ergonv1alpha1.StepStatus{Name: "s"}
			if n >= 0 {
				s.Usage = &ergonv1alpha1.AgentUsage{TotalTokens: n}
			}
			r.Status.Steps = append(r.Status.Steps, s)
		}
		// What the Run's children used is in its status.usage: not counted here.
		r.Status.Usage = &ergonv1alpha1.AgentUsage{TotalTokens: 1 << 30}
		return r
	}
	cases := []struct {
		name string
		runs []ergonv1alpha1.Run
		want int64
	}{
		{"none", nil, 0},
		{"steps of recent Runs add up, steps without usage count nothing",
			[]ergonv1alpha1.Run{run("a", time.Hour, 100, -1, 50), run("b", 23*time.Hour, 7)}, 157},
		{"Runs created a day ago or earlier are out of the window",
			[]ergonv1alpha1.Run{run("old", 24*time.Hour, 1000), run("older", 30*time.Hour, 1000), run("new", time.Minute, 1)}, 1},
		{"the Run starting is left out", []ergonv1alpha1.Run{run("self", time.Second, 500), run("a", time.Hour, 5)}, 5},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := TokensSpent(tc.runs, "self", now); got != tc.want {
				t.Fatalf("TokensSpent = %d, want %d", got, tc.want)
			}
		})
	}
}
