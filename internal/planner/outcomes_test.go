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
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

// notify is a finally step that prints what it sees of the Run.
func notify() ergonv1alpha1.Step {
	s := step("notify")
	s.Container.Command = []string{"echo", "{{ .run.phase }}:{{ range .run.failedSteps }}{{ . }},{{ end }}"}
	return s
}

// outcomes ends each step's attempts as the map says; a step it does not name succeeds, and
// "" keeps a step running.
func outcomes(m map[string]PodPhase) func(string, int32) PodPhase {
	return func(s string, _ int32) PodPhase {
		if p, ok := m[s]; ok {
			return p
		}
		return PodSucceeded
	}
}

// drive plans and runs the kubelet n times, moving the clock by a second each time, and
// returns the commands of the pods started, by step.
func (w *world) drive(n int) map[string]string {
	commands := map[string]string{}
	for range n {
		p := w.plan()
		for _, req := range p.Pods {
			commands[req.Step.Name] = strings.Join(req.Rendered.Command, " ")
		}
		if p.Status.Phase.Finished() {
			break
		}
		w.kubelet()
		w.now = w.now.Add(time.Second)
	}
	return commands
}

func after(name, dep string, handles bool, on ...ergonv1alpha1.StepOutcome) ergonv1alpha1.Step {
	s := step(name)
	s.After = []ergonv1alpha1.OutcomeDependency{{Step: dep, Outcomes: on, Handles: handles}}
	return s
}

const (
	onFailed    = ergonv1alpha1.StepOutcome(ergonv1alpha1.StepFailed)
	onSucceeded = ergonv1alpha1.StepOutcome(ergonv1alpha1.StepSucceeded)
)

func TestFinallyStepsRunAfterTheGraphWhateverItsOutcome(t *testing.T) {
	cases := []struct {
		name     string
		outcome  map[string]PodPhase
		phase    ergonv1alpha1.RunPhase
		reason   string
		rendered string
	}{
		{"after success", nil, ergonv1alpha1.RunSucceeded, ergonv1alpha1.ReasonSucceeded, "echo Succeeded:"},
		{"after a failure", map[string]PodPhase{"build": PodFailed}, ergonv1alpha1.RunFailed, ergonv1alpha1.ReasonStepFailed, "echo Failed:build,"},
		{"whose own failure does not change the outcome", map[string]PodPhase{"notify": PodFailed},
			ergonv1alpha1.RunSucceeded, ergonv1alpha1.ReasonSucceeded, "echo Succeeded:"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, ergonv1alpha1.SceneSpec{
				Steps:   []ergonv1alpha1.Step{step("build"), step("deploy", "build")},
				Finally: []ergonv1alpha1.Step{notify(), step("cleanup", "notify")},
			}, outcomes(tc.outcome))
			commands := w.drive(20)
			if w.run.Status.Phase != tc.phase {
				t.Fatalf("phase = %s, want %s (%+v)", w.run.Status.Phase, tc.phase, w.run.Status.Conditions)
			}
			if c := w.run.Status.Conditions[0]; c.Reason != tc.reason {
				t.Errorf("reason = %s, want %s", c.Reason, tc.reason)
			}
			if commands["notify"] != tc.rendered {
				t.Errorf("notify rendered %q, want %q", commands["notify"], tc.rendered)
			}
			if w.wave("notify") <= w.wave("build") || (w.phase("deploy") == ergonv1alpha1.StepSucceeded && w.wave("notify") <= w.wave("deploy")) {
				t.Errorf("notify started in plan %d, before the graph ended", w.wave("notify"))
			}
			if tc.outcome["notify"] == "" && w.wave("cleanup") <= w.wave("notify") {
				t.Errorf("cleanup started in plan %d, not after notify (%d)", w.wave("cleanup"), w.wave("notify"))
			}
			if w.run.Status.Progress != "4/4" && tc.outcome["build"] == "" {
				t.Errorf("progress = %s, want 4/4", w.run.Status.Progress)
			}
		})
	}
}

func TestProgressCountsFinallyStepsFromTheStart(t *testing.T) {
	w := newWorld(t, ergonv1alpha1.SceneSpec{
		Steps:   []ergonv1alpha1.Step{step("build"), step("deploy", "build")},
		Finally: []ergonv1alpha1.Step{notify(), step("cleanup", "notify")},
	}, outcomes(nil))
	if p := w.plan(); p.Status.Progress != "0/4" {
		t.Fatalf("first progress = %s, want 0/4: the total must not grow once finally starts", p.Status.Progress)
	}
	w.drive(20)
	if c := w.run.Status.Conditions[0]; w.run.Status.Progress != "4/4" || c.Message != "all 4 steps finished" {
		t.Errorf("progress %s, message %q: want 4/4 and all 4 steps finished", w.run.Status.Progress, c.Message)
	}
}

func TestFinallyStepsRunAfterACancel(t *testing.T) {
	w := newWorld(t, ergonv1alpha1.SceneSpec{
		Steps:   []ergonv1alpha1.Step{step("long"), step("next", "long")},
		Finally: []ergonv1alpha1.Step{notify()},
	}, outcomes(map[string]PodPhase{"long": "", "notify": ""}))
	w.drive(2)
	w.run.Spec.Cancel = true
	p := w.plan()
	if len(p.DeletePods) != 1 || len(p.Pods) != 1 || p.Pods[0].Step.Name != "notify" {
		t.Fatalf("the cancelling plan deletes %v and starts %d pods, want long's pod deleted and notify started", p.DeletePods, len(p.Pods))
	}
	if got := strings.Join(p.Pods[0].Rendered.Command, " "); got != "echo Cancelled:" {
		t.Errorf("notify rendered %q, want %q", got, "echo Cancelled:")
	}
	if p.Status.Phase != ergonv1alpha1.RunRunning || p.Status.Conditions[0].Reason != ergonv1alpha1.ReasonFinalizing {
		t.Fatalf("while notify runs the Run is %s (%s), want Running (Finalizing)", p.Status.Phase, p.Status.Conditions[0].Reason)
	}
	w.outcome = succeed
	w.drive(5)
	if w.run.Status.Phase != ergonv1alpha1.RunCancelled || w.phase("notify") != ergonv1alpha1.StepSucceeded ||
		w.phase("next") != ergonv1alpha1.StepPending {
		t.Fatalf("phase %s, notify %s, next %s: want Cancelled, Succeeded, never started", w.run.Status.Phase, w.phase("notify"), w.phase("next"))
	}
}

func TestFinallyStepsAfterTheRunTimedOutAndTheirOwnTimeout(t *testing.T) {
	w := newWorld(t, ergonv1alpha1.SceneSpec{
		Steps:          []ergonv1alpha1.Step{step("long")},
		Finally:        []ergonv1alpha1.Step{notify()},
		FinallyTimeout: &metav1.Duration{Duration: time.Minute},
	}, outcomes(map[string]PodPhase{"long": "", "notify": ""}))
	w.run.Spec.Timeout = &metav1.Duration{Duration: time.Hour}
	w.drive(1)
	w.now = t0.Add(time.Hour)
	p := w.plan()
	if len(p.Pods) != 1 || strings.Join(p.Pods[0].Rendered.Command, " ") != "echo Failed:" {
		t.Fatalf("after the Run timed out the plan starts %+v, want notify seeing Failed", p.Pods)
	}
	if p.RequeueAfter != time.Minute {
		t.Errorf("requeue after %s, want the finally timeout of 1m", p.RequeueAfter)
	}
	w.now = w.now.Add(time.Minute)
	p = w.plan()
	if p.Status.Phase != ergonv1alpha1.RunFailed || p.Status.Conditions[0].Reason != ergonv1alpha1.ReasonRunTimedOut {
		t.Fatalf("phase = %s (%s), want Failed (RunTimedOut)", p.Status.Phase, p.Status.Conditions[0].Reason)
	}
	if s := w.status("notify"); s.Phase != ergonv1alpha1.StepCancelled || s.Reason != ergonv1alpha1.ReasonFinallyTimedOut || len(p.DeletePods) != 1 {
		t.Errorf("notify is %s (%s), pods deleted %v: want Cancelled (FinallyTimedOut), its pod deleted", s.Phase, s.Reason, p.DeletePods)
	}
}

func TestFailureBranches(t *testing.T) {
	cases := []struct {
		name    string
		steps   []ergonv1alpha1.Step
		outcome map[string]PodPhase
		phase   ergonv1alpha1.RunPhase
		reason  string
		steps2  map[string]ergonv1alpha1.StepPhase
	}{
		{
			name:    "a branch runs only when its step failed, and without handles the Run still fails",
			steps:   []ergonv1alpha1.Step{step("build"), after("report", "build", false, onFailed), step("deploy", "build")},
			outcome: map[string]PodPhase{"build": PodFailed},
			phase:   ergonv1alpha1.RunFailed, reason: ergonv1alpha1.ReasonFailureUnhandled,
			steps2: map[string]ergonv1alpha1.StepPhase{"report": ergonv1alpha1.StepSucceeded, "deploy": ergonv1alpha1.StepSkipped},
		},
		{
			name:    "a branch that handles the failure and succeeds makes the Run succeed",
			steps:   []ergonv1alpha1.Step{step("build"), after("fix", "build", true, onFailed)},
			outcome: map[string]PodPhase{"build": PodFailed},
			phase:   ergonv1alpha1.RunSucceeded, reason: ergonv1alpha1.ReasonSucceeded,
			steps2: map[string]ergonv1alpha1.StepPhase{"build": ergonv1alpha1.StepFailed, "fix": ergonv1alpha1.StepSucceeded},
		},
		{
			name:    "a handler that fails leaves the Run failed",
			steps:   []ergonv1alpha1.Step{step("build"), after("fix", "build", true, onFailed)},
			outcome: map[string]PodPhase{"build": PodFailed, "fix": PodFailed},
			phase:   ergonv1alpha1.RunFailed, reason: ergonv1alpha1.ReasonStepFailed,
			steps2: map[string]ergonv1alpha1.StepPhase{"fix": ergonv1alpha1.StepFailed},
		},
		{
			name:  "a failure branch is skipped when its step succeeds",
			steps: []ergonv1alpha1.Step{step("build"), after("fix", "build", true, onFailed), step("deploy", "build")},
			phase: ergonv1alpha1.RunSucceeded, reason: ergonv1alpha1.ReasonSucceeded,
			steps2: map[string]ergonv1alpha1.StepPhase{"fix": ergonv1alpha1.StepSkipped, "deploy": ergonv1alpha1.StepSucceeded},
		},
		{
			name: "a step after either outcome runs in both cases, and steps after a handler go on",
			steps: []ergonv1alpha1.Step{step("build"), after("fix", "build", true, onFailed),
				after("publish", "fix", false, onSucceeded), after("log", "build", false, onFailed, onSucceeded)},
			outcome: map[string]PodPhase{"build": PodFailed},
			phase:   ergonv1alpha1.RunSucceeded, reason: ergonv1alpha1.ReasonSucceeded,
			steps2: map[string]ergonv1alpha1.StepPhase{"publish": ergonv1alpha1.StepSucceeded, "log": ergonv1alpha1.StepSucceeded},
		},
		{
			name:    "an unrouted failure elsewhere still stops new steps, branches included",
			steps:   []ergonv1alpha1.Step{step("lint"), step("build", "lint"), after("fix", "build", true, onFailed)},
			outcome: map[string]PodPhase{"lint": PodFailed},
			phase:   ergonv1alpha1.RunFailed, reason: ergonv1alpha1.ReasonStepFailed,
			steps2: map[string]ergonv1alpha1.StepPhase{"build": ergonv1alpha1.StepSkipped, "fix": ergonv1alpha1.StepSkipped},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, ergonv1alpha1.SceneSpec{Steps: tc.steps}, outcomes(tc.outcome))
			w.runToEnd()
			if w.run.Status.Phase != tc.phase || w.run.Status.Conditions[0].Reason != tc.reason {
				t.Fatalf("phase = %s (%s), want %s (%s)", w.run.Status.Phase, w.run.Status.Conditions[0].Reason, tc.phase, tc.reason)
			}
			for s, want := range tc.steps2 {
				if got := w.phase(s); got != want {
					t.Errorf("step %s is %s, want %s (%s)", s, got, want, w.status(s).Message)
				}
			}
		})
	}
}

func TestAFailureBranchRunsOnceAfterTheLastRetry(t *testing.T) {
	build := step("build")
	build.Retry = &ergonv1alpha1.RetryPolicy{Limit: 2, Backoff: &ergonv1alpha1.Backoff{Duration: &metav1.Duration{Duration: 10 * time.Second}}}
	w := newWorld(t, ergonv1alpha1.SceneSpec{Steps: []ergonv1alpha1.Step{build, after("fix", "build", true, onFailed)},
		Finally: []ergonv1alpha1.Step{notify()}}, outcomes(map[string]PodPhase{"build": PodFailed}))
	w.drive(100)
	if got := w.status("build"); got.Attempts != 3 || got.Phase != ergonv1alpha1.StepFailed {
		t.Fatalf("build: %d attempts, %s; want 3, Failed", got.Attempts, got.Phase)
	}
	if w.wave("fix") <= w.wave("build") || len(w.pods["fix"]) != 1 {
		t.Errorf("fix ran %d times, first in plan %d; want once, after build's last attempt", len(w.pods["fix"]), w.wave("fix"))
	}
	if w.run.Status.Phase != ergonv1alpha1.RunSucceeded || w.phase("notify") != ergonv1alpha1.StepSucceeded {
		t.Errorf("phase %s, notify %s; want Succeeded, Succeeded", w.run.Status.Phase, w.phase("notify"))
	}
}

func TestSuspendLetsRunningStepsFinishAndStartsNothing(t *testing.T) {
	w := newWorld(t, ergonv1alpha1.SceneSpec{Steps: []ergonv1alpha1.Step{step("a"), step("b", "a")}},
		outcomes(map[string]PodPhase{"a": ""}))
	w.run.Spec.Timeout = &metav1.Duration{Duration: time.Hour}
	w.drive(2)
	w.run.Spec.Suspend = true
	p := w.plan()
	if p.Status.Phase != ergonv1alpha1.RunSuspended || len(p.DeletePods) != 0 || !hasEvent(p, "RunSuspended") {
		t.Fatalf("phase %s, pods deleted %v, events %+v: want Suspended, none deleted, RunSuspended told", p.Status.Phase, p.DeletePods, p.Events)
	}
	w.outcome = succeed
	w.drive(3)
	if w.phase("a") != ergonv1alpha1.StepSucceeded || w.phase("b") != ergonv1alpha1.StepPending || len(w.pods["b"]) != 0 {
		t.Fatalf("a %s, b %s with %d pods: want a Succeeded while suspended and b not started", w.phase("a"), w.phase("b"), len(w.pods["b"]))
	}
	if w.run.Status.Phase != ergonv1alpha1.RunSuspended || w.run.Status.Progress != "1/2" {
		t.Errorf("phase %s, progress %s: want Suspended, 1/2", w.run.Status.Phase, w.run.Status.Progress)
	}
	w.run.Spec.Suspend = false
	p = w.plan()
	if len(p.Pods) != 1 || p.Pods[0].Step.Name != "b" || !hasEvent(p, "RunResumed") || p.Status.Phase != ergonv1alpha1.RunRunning {
		t.Fatalf("resuming starts %d pods, phase %s; want b started, Running, RunResumed told", len(p.Pods), p.Status.Phase)
	}
}

func TestASuspendedRunStillTimesOutAndACancelRunsFinally(t *testing.T) {
	retrying := step("a")
	retrying.Retry = &ergonv1alpha1.RetryPolicy{Limit: 3, Backoff: &ergonv1alpha1.Backoff{Duration: &metav1.Duration{Duration: 10 * time.Second}}}
	w := newWorld(t, ergonv1alpha1.SceneSpec{Steps: []ergonv1alpha1.Step{retrying, step("b", "a")},
		Finally: []ergonv1alpha1.Step{notify()}}, outcomes(map[string]PodPhase{"a": PodFailed, "notify": ""}))
	w.run.Spec.Timeout = &metav1.Duration{Duration: time.Hour}
	w.run.Spec.Suspend = true
	w.drive(1)
	if len(w.pods["a"]) != 0 || w.run.Status.Phase != ergonv1alpha1.RunSuspended {
		t.Fatalf("a suspended Run started %d pods and is %s", len(w.pods["a"]), w.run.Status.Phase)
	}
	w.run.Spec.Suspend = false
	w.drive(2) // a's first attempt fails; the retry is due
	w.run.Spec.Suspend = true
	w.drive(30)
	if n := len(w.pods["a"]); n != 1 {
		t.Fatalf("a has %d attempts while suspended, want 1: no retry starts", n)
	}
	w.now = t0.Add(time.Hour)
	p := w.plan()
	if w.phase("a") != ergonv1alpha1.StepCancelled || len(p.Pods) != 1 || p.Pods[0].Step.Name != "notify" {
		t.Fatalf("at the deadline a is %s and the plan starts %d pods: want a Cancelled and notify started although suspended", w.phase("a"), len(p.Pods))
	}
}

func TestARetrySeededWithReusedStepsRunsOnlyTheRest(t *testing.T) {
	w := newWorld(t, ergonv1alpha1.SceneSpec{Steps: []ergonv1alpha1.Step{step("a"), step("b", "a"), step("c", "b")}}, succeed)
	w.run.Status.Steps = []ergonv1alpha1.StepStatus{{Name: "a", Phase: ergonv1alpha1.StepSucceeded, Reason: ergonv1alpha1.ReasonReused,
		Output: &ergonv1alpha1.OutputValue{Preview: "kept", Size: 4}}}
	commands := w.drive(10)
	if w.run.Status.Phase != ergonv1alpha1.RunSucceeded || len(w.pods["a"]) != 0 || len(w.pods["b"]) != 1 || len(w.pods["c"]) != 1 {
		t.Fatalf("phase %s; pods a %d, b %d, c %d: want Succeeded with only b and c run", w.run.Status.Phase,
			len(w.pods["a"]), len(w.pods["b"]), len(w.pods["c"]))
	}
	if commands["b"] == "" {
		t.Errorf("b was not started")
	}
}

func hasEvent(p *Plan, reason string) bool {
	for _, e := range p.Events {
		if e.Reason == reason {
			return true
		}
	}
	return false
}
