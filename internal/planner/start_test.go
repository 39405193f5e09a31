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

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/budget"
)

func TestDecideStart(t *testing.T) {
	good := &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: "s"}, Spec: ergonv1alpha1.SceneSpec{
		Params: []ergonv1alpha1.ParamSpec{{Name: "topic"}},
		Steps:  []ergonv1alpha1.Step{step("a"), step("b", "a")},
	}}
	broken := good.DeepCopy()
	broken.Spec.Steps[1].DependsOn = []string{"nope"}
	budgeted := good.DeepCopy()
	budgeted.Spec.Budget = &ergonv1alpha1.SceneBudget{TokensPerDay: 1000}
	costly := good.DeepCopy()
	costly.Spec.Budget = &ergonv1alpha1.SceneBudget{CostPerDay: "25.00"}
	created := metav1.NewTime(t0)
	run := func(mutate func(*ergonv1alpha1.Run)) *ergonv1alpha1.Run {
		r := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "ns", Generation: 2, CreationTimestamp: created},
			Spec: ergonv1alpha1.RunSpec{SceneRef: corev1.LocalObjectReference{Name: "s"}, Params: map[string]string{"topic": "x"}}}
		if mutate != nil {
			mutate(r)
		}
		return r
	}
	waiting := func(r *ergonv1alpha1.Run) {
		r.Status.Phase = ergonv1alpha1.RunPending
		r.Status.Conditions = []metav1.Condition{{Type: ergonv1alpha1.ConditionSucceeded, Status: metav1.ConditionUnknown,
			Reason: ergonv1alpha1.ReasonSceneNotFound}}
	}
	for _, tc := range []struct {
		name    string
		run     *ergonv1alpha1.Run
		scene   *ergonv1alpha1.Scene
		started bool
		now     time.Duration // after the Run's creation
		pending time.Duration
		spent   int64
		cost    string
		// want
		action  StartAction
		phase   ergonv1alpha1.RunPhase
		reason  string
		message string // a substring of the condition's message
		requeue time.Duration
		events  []string // reasons, "!" marks a warning
	}{
		{name: "a good Scene starts", run: run(nil), scene: good, action: StartScene},
		{name: "a retry starts from the retried Run, whatever the Scene",
			run: run(func(r *ergonv1alpha1.Run) { r.Spec.RetryOf = &ergonv1alpha1.RetryReference{Name: "old"} }), action: StartRetry},
		{name: "cancelled before it started, even while waiting for its Scene",
			run: run(func(r *ergonv1alpha1.Run) { r.Spec.Cancel = true; waiting(r) }), action: StartEnd,
			phase: ergonv1alpha1.RunCancelled, reason: ergonv1alpha1.ReasonCancelled, message: "cancelled before it started",
			events: []string{ergonv1alpha1.ReasonCancelled}},
		{name: "cancelled after a first pass acted but lost its status write: it starts, so the planner stops and records it",
			run: run(func(r *ergonv1alpha1.Run) { r.Spec.Cancel = true }), scene: good, started: true, action: StartScene},
		{name: "cancelled after a first pass acted, its Scene gone: it ends",
			run: run(func(r *ergonv1alpha1.Run) { r.Spec.Cancel = true }), started: true, action: StartEnd,
			phase: ergonv1alpha1.RunCancelled, reason: ergonv1alpha1.ReasonCancelled, events: []string{ergonv1alpha1.ReasonCancelled}},
		{name: "cancel wins over a retry",
			run: run(func(r *ergonv1alpha1.Run) {
				r.Spec.Cancel = true
				r.Spec.RetryOf = &ergonv1alpha1.RetryReference{Name: "old"}
			}), action: StartEnd, phase: ergonv1alpha1.RunCancelled, reason: ergonv1alpha1.ReasonCancelled,
			events: []string{ergonv1alpha1.ReasonCancelled}},
		{name: "a missing param fails the Run, naming it",
			run: run(func(r *ergonv1alpha1.Run) { r.Spec.Params = nil }), scene: good, action: StartEnd,
			phase: ergonv1alpha1.RunFailed, reason: ergonv1alpha1.ReasonInvalidParams, message: "spec.params[topic]",
			events: []string{"!" + ergonv1alpha1.ReasonInvalidParams}},
		{name: "an unknown param fails the Run",
			run: run(func(r *ergonv1alpha1.Run) { r.Spec.Params["colour"] = "red" }), scene: good, action: StartEnd,
			phase: ergonv1alpha1.RunFailed, reason: ergonv1alpha1.ReasonInvalidParams, message: "spec.params[colour]",
			events: []string{"!" + ergonv1alpha1.ReasonInvalidParams}},
		{name: "a Scene that does not compile fails the Run",
			run: run(nil), scene: broken, action: StartEnd,
			phase: ergonv1alpha1.RunFailed, reason: ergonv1alpha1.ReasonInvalidScene, message: "Scene s does not compile",
			events: []string{"!" + ergonv1alpha1.ReasonInvalidScene}},
		{name: "a Scene within its budget starts", run: run(nil), scene: budgeted, spent: 999, action: StartScene},
		{name: "a Scene without a budget starts whatever was spent", run: run(nil), scene: good, spent: 1 << 40, cost: "1000000000", action: StartScene},
		{name: "a Scene within its budget in cost starts", run: run(nil), scene: costly, spent: 1 << 40, cost: "24.999", action: StartScene},
		{name: "a Scene that spent its budget in cost fails the Run at start",
			run: run(nil), scene: costly, cost: "25.000001", action: StartEnd,
			phase: ergonv1alpha1.RunFailed, reason: ergonv1alpha1.ReasonBudgetExceeded,
			message: "cost 25.000001 in the last 24 hours, its budget.costPerDay is 25.00",
			events:  []string{"!" + ergonv1alpha1.ReasonBudgetExceeded}},
		{name: "a Scene that spent its budget fails the Run at start, with an Event",
			run: run(nil), scene: budgeted, spent: 1000, action: StartEnd,
			phase: ergonv1alpha1.RunFailed, reason: ergonv1alpha1.ReasonBudgetExceeded,
			message: "used 1000 tokens in the last 24 hours, its budget.tokensPerDay is 1000",
			events:  []string{"!" + ergonv1alpha1.ReasonBudgetExceeded}},
		{name: "a missing Scene is waited for, told once",
			run: run(nil), action: StartWait, now: time.Hour,
			phase: ergonv1alpha1.RunPending, reason: ergonv1alpha1.ReasonSceneNotFound, message: "the Run starts when it does",
			requeue: SceneNotFoundRetry, events: []string{"!" + ergonv1alpha1.ReasonSceneNotFound}},
		{name: "waiting on, it is not told again",
			run: run(waiting), action: StartWait,
			phase: ergonv1alpha1.RunPending, reason: ergonv1alpha1.ReasonSceneNotFound, requeue: SceneNotFoundRetry},
		{name: "within the pending timeout it looks again at the deadline at the latest",
			run: run(waiting), action: StartWait, now: 4*time.Minute + 30*time.Second, pending: 5 * time.Minute,
			phase: ergonv1alpha1.RunPending, reason: ergonv1alpha1.ReasonSceneNotFound, message: "or fails if it does not by 2026-11-30T09:05:00Z",
			requeue: 30 * time.Second},
		{name: "past the pending timeout it fails",
			run: run(waiting), action: StartEnd, now: 5 * time.Minute, pending: 5 * time.Minute,
			phase: ergonv1alpha1.RunFailed, reason: ergonv1alpha1.ReasonSceneNotFound, message: "waited 5m0s",
			events: []string{"!" + ergonv1alpha1.ReasonSceneNotFound}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := t0.Add(tc.now)
			p := DecideStart(StartFacts{Run: tc.run, Scene: tc.scene, Started: tc.started, Now: now, PendingTimeout: tc.pending,
				Spent: budget.Spending{Tokens: tc.spent, Cost: tc.cost}})
			if p.Action != tc.action {
				t.Fatalf("action %v, want %v", p.Action, tc.action)
			}
			if p.RequeueAfter != tc.requeue {
				t.Errorf("requeue after %s, want %s", p.RequeueAfter, tc.requeue)
			}
			var events []string
			for _, e := range p.Events {
				r := e.Reason
				if e.Warning {
					r = "!" + r
				}
				events = append(events, r)
			}
			if strings.Join(events, ",") != strings.Join(tc.events, ",") {
				t.Errorf("events %v, want %v", events, tc.events)
			}
			if tc.action == StartScene || tc.action == StartRetry {
				if p.Status != nil {
					t.Errorf("a starting Run has no status to write here, got %+v", p.Status)
				}
				return
			}
			s := p.Status
			if s.Phase != tc.phase || s.ObservedGeneration != 2 {
				t.Errorf("phase %q at generation %d, want %q at 2", s.Phase, s.ObservedGeneration, tc.phase)
			}
			if (s.FinishedAt != nil) != (tc.action == StartEnd) || (s.FinishedAt != nil && !s.FinishedAt.Time.Equal(now)) {
				t.Errorf("finishedAt %v for action %v at %s", s.FinishedAt, tc.action, now)
			}
			c := meta.FindStatusCondition(s.Conditions, ergonv1alpha1.ConditionSucceeded)
			wantStatus := metav1.ConditionFalse
			if tc.action == StartWait {
				wantStatus = metav1.ConditionUnknown
			}
			if c == nil || c.Status != wantStatus || c.Reason != tc.reason || c.ObservedGeneration != 2 ||
				!strings.Contains(c.Message, tc.message) {
				t.Errorf("condition %+v, want %s %s with %q", c, wantStatus, tc.reason, tc.message)
			}
			if tc.run.Status.Phase == ergonv1alpha1.RunPending && tc.action == StartWait && len(tc.run.Status.Conditions) != 1 {
				t.Errorf("the Run's own status was changed: %+v", tc.run.Status)
			}
		})
	}
}
