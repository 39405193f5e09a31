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
	"slices"
	"strings"
	"testing"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
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
	runFailed := Event{Warning: true, Reason: "RunFailed", Message: "Run r Failed: step x failed"}
	var many []Event
	for i := range 200 {
		many = append(many, started(fmt.Sprintf("leaf-%04d", i)))
	}
	for _, tc := range []struct {
		name   string
		events []Event
		want   []string // "Reason: Message"
	}{
		{name: "one progress transition stays as it is",
			events: []Event{started("a"), failed},
			want:   []string{"StepStarted: Step a started", "StepFailed: Step x failed: exit 1"}},
		{name: "a step succeeding and the next starting are one Event, told as the start",
			events: []Event{succeeded("a"), started("b")},
			want:   []string{"StepStarted: Step a succeeded; Step b started"}},
		{name: "a fan-out's starts fold with the success before them, where the first was",
			events: []Event{succeeded("root"), started("m1"), failed, started("m2"), started("m3")},
			want: []string{"StepStarted: Step root succeeded; 3 steps started: m1, m2, m3",
				"StepFailed: Step x failed: exit 1"}},
		{name: "successes fold with the Run's success; skips keep theirs",
			events: []Event{succeeded("a"), skipped("s1"), succeeded("b"), skipped("s2"), runEnd},
			want: []string{"RunSucceeded: 2 steps succeeded: a, b; Run r Succeeded", "StepSkipped: Step s1 skipped: WhenFalse",
				"StepSkipped: Step s2 skipped: WhenFalse"}},
		{name: "successes alone fold as successes",
			events: []Event{succeeded("a"), succeeded("b")},
			want:   []string{"StepSucceeded: 2 steps succeeded: a, b"}},
		{name: "a Run that fails keeps its Warning apart",
			events: []Event{succeeded("a"), failed, runFailed},
			want: []string{"StepSucceeded: Step a succeeded", "StepFailed: Step x failed: exit 1",
				"RunFailed: Run r Failed: step x failed"}},
		{name: "no events", events: nil, want: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, e := range FoldEvents(tc.events) {
				got = append(got, e.Reason+": "+e.Message)
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
	t.Run("a wide fan-out lists what fits and counts the rest", func(t *testing.T) {
		out := FoldEvents(many)
		if len(out) != 1 {
			t.Fatalf("%d events, want 1", len(out))
		}
		m := out[0].Message
		if len(m) > maxFoldedNames+40 || !strings.HasPrefix(m, "200 steps started: leaf-0000, leaf-0001") ||
			!strings.Contains(m, " more") {
			t.Errorf("message (%d bytes) %q", len(m), m)
		}
		shown := strings.Count(m, "leaf-")
		if !strings.HasSuffix(m, fmt.Sprintf(" and %d more", 200-shown)) {
			t.Errorf("the count of the rest does not add up to 200 with %d shown: %q", shown, m[len(m)-40:])
		}
	})
	t.Run("two wide lists share the room of one", func(t *testing.T) {
		var mixed []Event
		for i := range 200 {
			mixed = append(mixed, succeeded(fmt.Sprintf("done-%04d", i)), started(fmt.Sprintf("next-%04d", i)))
		}
		out := FoldEvents(append(mixed, runEnd))
		if len(out) != 1 || out[0].Reason != "RunSucceeded" {
			t.Fatalf("got %+v, want one RunSucceeded Event", out)
		}
		m := out[0].Message
		if len(m) > 1024 || !strings.HasPrefix(m, "200 steps succeeded: done-0000") || !strings.Contains(m, "; 200 steps started: next-0000") ||
			!strings.HasSuffix(m, "; Run r Succeeded") {
			t.Errorf("message (%d bytes) %q", len(m), m)
		}
	})
	t.Run("the progress of several passes folds again into one Event", func(t *testing.T) {
		var held []Event
		for _, pass := range [][]Event{{started("a")}, {succeeded("a"), started("b")}, {succeeded("b"), started("c")}} {
			for _, e := range FoldEvents(pass) {
				if !e.Progress() {
					t.Fatalf("%+v is not progress", e)
				}
				held = append(held, e)
			}
		}
		out := FoldEvents(held)
		if len(out) != 1 || out[0].Reason != "StepStarted" ||
			out[0].Message != "3 steps started: a, b, c; 2 steps succeeded: a, b" {
			t.Fatalf("got %+v", out)
		}
		out = FoldEvents(append(out, succeeded("c"), runEnd))
		if len(out) != 1 || out[0].Reason != "RunSucceeded" ||
			out[0].Message != "3 steps started: a, b, c; 3 steps succeeded: a, b, c; Run r Succeeded" {
			t.Fatalf("folded once more, got %+v", out)
		}
	})
	t.Run("progress is what may be told later", func(t *testing.T) {
		for _, tc := range []struct {
			e    Event
			want bool
		}{
			{started("a"), true}, {succeeded("a"), true}, {runEnd, true},
			{FoldEvents([]Event{succeeded("a"), started("b")})[0], true},
			{failed, false}, {runFailed, false}, {skipped("s"), false},
			{Event{Warning: true, Reason: "RunSucceeded", Message: "odd"}, false},
		} {
			if got := tc.e.Progress(); got != tc.want {
				t.Errorf("%s %q: progress %v, want %v", tc.e.Reason, tc.e.Message, got, tc.want)
			}
		}
	})
}

func TestARunCreatedThroughAProtocolIsAuditedWhenItStarts(t *testing.T) {
	for _, c := range []struct {
		name        string
		annotations map[string]string
		want        string // the Event's message; "" none
	}{
		{name: "through MCP", annotations: map[string]string{ergonv1alpha1.AnnotationVia: "mcp",
			ergonv1alpha1.AnnotationCreatedBy: "alice"}, want: "Run created by alice through MCP"},
		{name: "through A2A", annotations: map[string]string{ergonv1alpha1.AnnotationVia: "a2a",
			ergonv1alpha1.AnnotationCreatedBy: "bob"}, want: "Run created by bob through A2A"},
		{name: "a protocol Ergon does not serve is not repeated", annotations: map[string]string{
			ergonv1alpha1.AnnotationVia: "<b>forged</b>", ergonv1alpha1.AnnotationCreatedBy: "mallory"}},
		{name: "created otherwise", annotations: map[string]string{ergonv1alpha1.AnnotationCreatedBy: "carol"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t, ergonv1alpha1.SceneSpec{Steps: []ergonv1alpha1.Step{step("a")}}, succeed)
			w.run.Annotations = c.annotations
			var told []string
			for _, e := range w.plan().Events {
				if e.Reason == ReasonCreatedThrough {
					told = append(told, e.Message)
				}
			}
			if c.want == "" && len(told) > 0 || c.want != "" && !slices.Equal(told, []string{c.want}) {
				t.Fatalf("told %q, want %q", told, c.want)
			}
			// Once started, it is not told again.
			for _, e := range w.plan().Events {
				if e.Reason == ReasonCreatedThrough {
					t.Fatalf("told again: %q", e.Message)
				}
			}
		})
	}
}
