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
)

// foldedEvents are the step transitions told in one Event per plan when several steps make
// them at once, such as the steps of a fan-out starting together: one API write instead of
// one a step. Failures, skips and waits keep an Event each, since each has its own message.
var foldedEvents = map[string]string{"StepStarted": "started", "StepSucceeded": "succeeded"}

// maxFoldedNames bounds the step names one folded Event lists (an Event's note holds 1 KiB).
const maxFoldedNames = 600

// foldEvents folds the plan's Events of each reason in foldedEvents into one, where the first
// of them was, naming the steps in order.
func foldEvents(events []Event) []Event {
	names := map[string][]string{}
	for _, e := range events {
		if _, ok := foldedEvents[e.Reason]; ok && e.step != "" {
			names[e.Reason] = append(names[e.Reason], e.step)
		}
	}
	out := make([]Event, 0, len(events))
	done := map[string]bool{}
	for _, e := range events {
		verb, fold := foldedEvents[e.Reason]
		if !fold || e.step == "" || len(names[e.Reason]) < 2 {
			out = append(out, e)
			continue
		}
		if done[e.Reason] {
			continue
		}
		done[e.Reason] = true
		out = append(out, Event{Reason: e.Reason, Message: fmt.Sprintf("%d steps %s: %s", len(names[e.Reason]), verb, listNames(names[e.Reason]))})
	}
	return out
}

// listNames joins names, up to about maxFoldedNames characters, then says how many more.
func listNames(names []string) string {
	var b strings.Builder
	for i, n := range names {
		if b.Len()+len(n) > maxFoldedNames {
			fmt.Fprintf(&b, " and %d more", len(names)-i)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(n)
	}
	return b.String()
}
