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

package run

import (
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/planner"
)

// TestTellEvents drives tellEvents through the passes of a Run and reads what it told.
func TestTellEvents(t *testing.T) {
	progress := func(pass ...planner.Event) []planner.Event { return planner.FoldEvents(pass) }
	started := func(step string) planner.Event {
		return planner.StepEvent("StepStarted", step, "Step %s started", step)
	}
	succeeded := func(step string) planner.Event {
		return planner.StepEvent("StepSucceeded", step, "Step %s succeeded", step)
	}
	failed := planner.Event{Warning: true, Reason: "StepFailed", Message: "Step c failed: exit 1"}
	runEnd := planner.Event{Reason: "RunSucceeded", Message: "Run r Succeeded"}
	type pass struct {
		at       time.Duration // since the first pass
		events   []planner.Event
		finished bool
		told     []string // "Reason: Message"
		wait     time.Duration
	}
	for _, tc := range []struct {
		name     string
		interval time.Duration
		passes   []pass
	}{
		{name: "the first progress is told at once, what follows within the interval waits for it",
			interval: 10 * time.Second,
			passes: []pass{
				{at: 0, events: progress(started("a")), told: []string{"StepStarted: Step a started"}},
				{at: 2 * time.Second, events: progress(succeeded("a"), started("b")), wait: 8 * time.Second},
				{at: 4 * time.Second, events: progress(succeeded("b"), started("c")), wait: 6 * time.Second},
				{at: 10 * time.Second, told: []string{"StepStarted: 2 steps succeeded: a, b; 2 steps started: b, c"}},
				{at: 11 * time.Second, events: progress(succeeded("c"), started("d")), wait: 9 * time.Second},
				{at: 12 * time.Second, events: progress(succeeded("d"), runEnd), finished: true,
					told: []string{"RunSucceeded: 2 steps succeeded: c, d; Step d started; Run r Succeeded"}},
			}},
		{name: "another Event tells the progress held before it first",
			interval: 10 * time.Second,
			passes: []pass{
				{at: 0, events: progress(started("a"), started("b")), told: []string{"StepStarted: 2 steps started: a, b"}},
				{at: time.Second, events: progress(succeeded("a"), started("c")), wait: 9 * time.Second},
				{at: 2 * time.Second, events: []planner.Event{failed},
					told: []string{"StepStarted: Step a succeeded; Step c started", "StepFailed: Step c failed: exit 1"}},
			}},
		{name: "no interval tells each pass at once",
			passes: []pass{
				{at: 0, events: progress(started("a")), told: []string{"StepStarted: Step a started"}},
				{at: time.Millisecond, events: progress(succeeded("a"), started("b")), told: []string{"StepStarted: Step a succeeded; Step b started"}},
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Unix(1_800_000_000, 0)
			clock := clocktesting.NewFakePassiveClock(start)
			rec := events.NewFakeRecorder(100)
			r := &RunReconciler{Recorder: rec, Clock: clock, Config: RunConfig{EventInterval: tc.interval}}
			run := &ergonv1alpha1.Run{}
			for i, p := range tc.passes {
				clock.SetTime(start.Add(p.at))
				wait := r.tellEvents(run, "ns/r", p.events, p.finished)
				var told []string
				for len(rec.Events) > 0 {
					e := <-rec.Events // "Type Reason Message"
					_, rest, _ := strings.Cut(e, " ")
					reason, message, _ := strings.Cut(rest, " ")
					told = append(told, reason+": "+message)
				}
				if strings.Join(told, "\n") != strings.Join(p.told, "\n") || wait != p.wait {
					t.Fatalf("pass %d: told\n%s\nwait %s; want\n%s\nwait %s", i, strings.Join(told, "\n"), wait,
						strings.Join(p.told, "\n"), p.wait)
				}
			}
		})
	}
}
