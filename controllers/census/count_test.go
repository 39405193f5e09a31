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

package census

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/shard"
)

var t0 = time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)

func at(d time.Duration) *metav1.Time { t := metav1.NewTime(t0.Add(d)); return &t }

func run(ns string, created time.Duration, phase ergonv1alpha1.RunPhase, steps ...ergonv1alpha1.StepStatus) ergonv1alpha1.Run {
	return ergonv1alpha1.Run{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprint(created), CreationTimestamp: *at(created)},
		Status:     ergonv1alpha1.RunStatus{Phase: phase, StartedAt: at(created + time.Second), Steps: steps},
	}
}

// text prints samples as the exposition format would, one per line, for comparing.
func text(samples []sample) string {
	var b strings.Builder
	for _, s := range samples {
		name := strings.TrimPrefix(strings.Split(s.desc.String(), "\"")[1], "ergon_")
		fmt.Fprintf(&b, "%s%v %g\n", name, s.labels, s.value)
	}
	return b.String()
}

func TestCountRuns(t *testing.T) {
	now := t0.Add(time.Hour)
	all := shard.Shard{Index: 0, Count: 1}
	cases := []struct {
		name string
		runs []ergonv1alpha1.Run
		want string
	}{
		{name: "none", want: ""},
		{
			name: "finished Runs are not counted",
			runs: []ergonv1alpha1.Run{run("a", 0, ergonv1alpha1.RunSucceeded), run("a", 0, ergonv1alpha1.RunFailed),
				run("a", 0, ergonv1alpha1.RunCancelled)},
			want: "",
		},
		{
			name: "a Run not yet seen by the controller is Pending",
			runs: []ergonv1alpha1.Run{run("a", 30*time.Minute, "")},
			want: "runs[a Pending] 1\nruns_oldest_seconds[a Pending] 1800\n",
		},
		{
			name: "by namespace and phase, the oldest of each",
			runs: []ergonv1alpha1.Run{
				run("b", 50*time.Minute, ergonv1alpha1.RunWaiting),
				run("a", 10*time.Minute, ergonv1alpha1.RunSuspended),
				run("a", 40*time.Minute, ergonv1alpha1.RunWaiting),
				run("a", 20*time.Minute, ergonv1alpha1.RunWaiting),
			},
			want: "runs[a Suspended] 1\nruns_oldest_seconds[a Suspended] 3000\nruns[a Waiting] 2\nruns_oldest_seconds[a Waiting] 2400\n" +
				"runs[b Waiting] 1\nruns_oldest_seconds[b Waiting] 600\n",
		},
		{
			name: "idle is since the latest step or attempt start or end, of Running Runs only",
			runs: []ergonv1alpha1.Run{
				// Started at 0:01, a step started 0:05 and its earlier attempt ended 0:04: idle 55m.
				run("a", 0, ergonv1alpha1.RunRunning, ergonv1alpha1.StepStatus{Name: "s", StartedAt: at(5 * time.Minute),
					History: []ergonv1alpha1.AttemptStatus{{Attempt: 1, StartedAt: at(2 * time.Minute), FinishedAt: at(4 * time.Minute)}}}),
				// A step ended at 0:30: idle 30m, less than the other.
				run("a", 0, ergonv1alpha1.RunRunning, ergonv1alpha1.StepStatus{Name: "s", FinishedAt: at(30 * time.Minute)}),
				// A retry due in the future is not idle.
				run("b", 0, ergonv1alpha1.RunRunning, ergonv1alpha1.StepStatus{Name: "s", NextAttemptAt: at(2 * time.Hour)}),
				// A Waiting Run waits for people: the Gates count it.
				run("c", 0, ergonv1alpha1.RunWaiting),
			},
			want: "runs[a Running] 2\nruns_oldest_seconds[a Running] 3600\nruns[b Running] 1\nruns_oldest_seconds[b Running] 3600\n" +
				"runs[c Waiting] 1\nruns_oldest_seconds[c Waiting] 3600\nruns_idle_seconds[a] 3300\nruns_idle_seconds[b] 0\n",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := text(countRuns(tc.runs, all, now)); got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

func TestCountOnlyTheShard(t *testing.T) {
	now := t0.Add(time.Hour)
	var mine, theirs string
	for i := 0; mine == "" || theirs == ""; i++ {
		ns := fmt.Sprintf("ns-%d", i)
		if shard.Of(ns, 2) == 0 {
			mine = ns
		} else {
			theirs = ns
		}
	}
	s := shard.Shard{Index: 0, Count: 2}
	runs := []ergonv1alpha1.Run{run(mine, 0, ergonv1alpha1.RunRunning), run(theirs, 0, ergonv1alpha1.RunRunning)}
	if got, want := text(countRuns(runs, s, now)), fmt.Sprintf("runs[%s Running] 1\nruns_oldest_seconds[%[1]s Running] 3600\n"+
		"runs_idle_seconds[%[1]s] 3599\n", mine); got != want {
		t.Errorf("Runs: got\n%s\nwant\n%s", got, want)
	}
	gates := []ergonv1alpha1.Gate{gate(mine, 0, ""), gate(theirs, 0, "")}
	want := fmt.Sprintf("gates_pending[%s] 1\ngates_oldest_pending_seconds[%[1]s] 3600\n", mine)
	if got := text(countGates(gates, s, now)); got != want {
		t.Errorf("Gates: got\n%s\nwant\n%s", got, want)
	}
}

func gate(ns string, created time.Duration, phase ergonv1alpha1.GatePhase) ergonv1alpha1.Gate {
	return ergonv1alpha1.Gate{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprint(created), CreationTimestamp: *at(created)},
		Status:     ergonv1alpha1.GateStatus{Phase: phase},
	}
}

func TestCountGates(t *testing.T) {
	now := t0.Add(time.Hour)
	deleting := gate("a", 0, ergonv1alpha1.GatePending)
	deleting.DeletionTimestamp = at(0)
	gates := []ergonv1alpha1.Gate{
		gate("a", 20*time.Minute, ""), gate("a", 10*time.Minute, ergonv1alpha1.GatePending),
		gate("a", 0, ergonv1alpha1.GateApproved), gate("a", 0, ergonv1alpha1.GateRejected),
		gate("a", 0, ergonv1alpha1.GateTimedOut), gate("a", 0, ergonv1alpha1.GateClosed), deleting,
		gate("b", 59*time.Minute, ergonv1alpha1.GatePending),
	}
	want := "gates_pending[a] 2\ngates_oldest_pending_seconds[a] 3000\ngates_pending[b] 1\ngates_oldest_pending_seconds[b] 60\n"
	if got := text(countGates(gates, shard.Shard{Count: 1}, now)); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestCountTriggers(t *testing.T) {
	over := func(ns string, status metav1.ConditionStatus) ergonv1alpha1.Trigger {
		return ergonv1alpha1.Trigger{ObjectMeta: metav1.ObjectMeta{Namespace: ns},
			Status: ergonv1alpha1.TriggerStatus{Conditions: []metav1.Condition{{Type: ergonv1alpha1.ConditionBudgetExceeded, Status: status}}}}
	}
	triggers := []ergonv1alpha1.Trigger{over("a", metav1.ConditionTrue), over("a", metav1.ConditionTrue),
		over("b", metav1.ConditionFalse), {ObjectMeta: metav1.ObjectMeta{Namespace: "c"}}}
	if got, want := text(countTriggers(triggers, shard.Shard{Count: 1})), "triggers_over_budget[a] 2\n"; got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}
