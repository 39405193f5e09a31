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
	"fmt"
	"strings"
	"testing"
)

func TestFoldEvents(t *testing.T) {
	started := func(step string) Event {
		return Event{Reason: "StepStarted", Message: "Step " + step + " started", step: step}
	}
	succeeded := func(step string) Event {
		return Event{Reason: "StepSucceeded", Message: "Step " + step + " succeeded", step: step}
	}
	failed := Event{Warning: true, Reason: "StepFailed", Message: "Step x failed: exit 1"}
	skipped := func(step string) Event {
		return Event{Reason: "StepSkipped", Message: "Step " + step + " skipped: WhenFalse"}
	}
	runEnd := Event{Reason: "RunSucceeded", Message: "Run r Succeeded"}
	var many []Event
	for i := range 200 {
		many = append(many, started(fmt.Sprintf("leaf-%04d", i)))
	}
	for _, tc := range []struct {
		name   string
		events []Event
		want   []string // "Reason: Message"
	}{
		{name: "one transition of a kind stays as it is",
			events: []Event{started("a"), succeeded("b")},
			want:   []string{"StepStarted: Step a started", "StepSucceeded: Step b succeeded"}},
		{name: "a fan-out's starts fold into one Event where the first was",
			events: []Event{succeeded("root"), started("m1"), failed, started("m2"), started("m3")},
			want: []string{"StepSucceeded: Step root succeeded", "StepStarted: 3 steps started: m1, m2, m3",
				"StepFailed: Step x failed: exit 1"}},
		{name: "successes fold too; skips, failures and the Run's end keep theirs",
			events: []Event{succeeded("a"), skipped("s1"), succeeded("b"), skipped("s2"), runEnd},
			want: []string{"StepSucceeded: 2 steps succeeded: a, b", "StepSkipped: Step s1 skipped: WhenFalse",
				"StepSkipped: Step s2 skipped: WhenFalse", "RunSucceeded: Run r Succeeded"}},
		{name: "no events", events: nil, want: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, e := range foldEvents(tc.events) {
				got = append(got, e.Reason+": "+e.Message)
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
	t.Run("a wide fan-out lists what fits and counts the rest", func(t *testing.T) {
		out := foldEvents(many)
		if len(out) != 1 {
			t.Fatalf("%d events, want 1", len(out))
		}
		m := out[0].Message
		if len(m) > 1024 || !strings.HasPrefix(m, "200 steps started: leaf-0000, leaf-0001") ||
			!strings.Contains(m, " more") {
			t.Errorf("message (%d bytes) %q", len(m), m)
		}
		shown := strings.Count(m, "leaf-")
		if !strings.HasSuffix(m, fmt.Sprintf(" and %d more", 200-shown)) {
			t.Errorf("the count of the rest does not add up to 200 with %d shown: %q", shown, m[len(m)-40:])
		}
	})
}
