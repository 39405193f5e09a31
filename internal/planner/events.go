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

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

// Event is a transition worth an Event on the Run.
type Event struct {
	Warning bool
	Reason  string
	Message string
	// Action is what the manager was doing, when it is not reconciling the Run.
	Action string
	// step is the step a transition Event is about, for FoldEvents.
	step string
	// folded are the progress Events a folded Event tells, so that it can be folded again
	// with others (FoldEvents).
	folded []Event
}

// foldedEvents are the step transitions a plan tells in one Event, with the Run's success:
// the progress of one planning pass (the steps of a fan-out starting together, a step
// succeeding and the next starting, the last step and the Run succeeding) is one API write,
// next to the pass's one status patch, instead of one a transition. Failures, skips, waits and
// retries keep an Event each, since each has its own message and most are Warnings.
var foldedEvents = map[string]string{"StepStarted": "started", "StepSucceeded": "succeeded"}

// runSucceeded is the reason of the Run's success, which folds with the steps' progress.
const runSucceeded = "RunSucceeded"

// maxFoldedNames bounds the step names one folded Event lists (an Event's note holds 1 KiB).
const maxFoldedNames = 600

// FoldEvents folds the progress Events among events into one, where the first of them was.
// Its reason is the furthest transition it tells (RunSucceeded, else StepStarted, else
// StepSucceeded); its message tells each kind in the order they came: "Step a succeeded; 3
// steps started: b, c, d". Events with one progress Event keep it as it is. An Event folded
// before is folded again as the transitions it tells, so the progress of several passes can
// be told in one Event (the Run controller holds progress back, see RunConfig.EventInterval).
func FoldEvents(events []Event) []Event {
	events = unfold(events)
	names := map[string][]string{}
	var order []string // the kinds of progress, in the order they first came
	progress, runEnd := 0, -1
	for i, e := range events {
		switch {
		case isFolded(e):
			if len(names[e.Reason]) == 0 {
				order = append(order, e.Reason)
			}
			names[e.Reason] = append(names[e.Reason], e.step)
			progress++
		case e.Reason == runSucceeded && !e.Warning && runEnd < 0:
			order = append(order, e.Reason)
			runEnd = i
			progress++
		}
	}
	if progress < 2 {
		return events
	}
	reason := "StepSucceeded"
	switch {
	case runEnd >= 0:
		reason = runSucceeded
	case len(names["StepStarted"]) > 0:
		reason = "StepStarted"
	}
	parts := make([]string, 0, len(order))
	for _, kind := range order {
		switch n := names[kind]; {
		case kind == runSucceeded:
			parts = append(parts, events[runEnd].Message)
		case len(n) == 1:
			parts = append(parts, fmt.Sprintf("Step %s %s", n[0], foldedEvents[kind]))
		default:
			parts = append(parts, fmt.Sprintf("%d steps %s: %s", len(n), foldedEvents[kind], listNames(n, maxFoldedNames/len(order))))
		}
	}
	out := make([]Event, 0, len(events)-progress+1)
	var told []Event
	at := -1
	for i, e := range events {
		if !isFolded(e) && i != runEnd {
			out = append(out, e)
			continue
		}
		told = append(told, e)
		if at < 0 {
			at = len(out)
			out = append(out, Event{})
		}
	}
	out[at] = Event{Reason: reason, Message: strings.Join(parts, "; "), folded: told}
	return out
}

// unfold replaces each folded Event among events by the transitions it tells.
func unfold(events []Event) []Event {
	if !slices.ContainsFunc(events, func(e Event) bool { return e.folded != nil }) {
		return events
	}
	var out []Event
	for _, e := range events {
		if e.folded != nil {
			out = append(out, e.folded...)
		} else {
			out = append(out, e)
		}
	}
	return out
}

// Progress reports whether e tells progress only: steps starting or succeeding, the Run
// succeeding, or several of these folded. Such an Event may be told later, folded with others
// (FoldEvents); failures, skips, waits and retries are told when they happen.
func (e Event) Progress() bool {
	return isFolded(e) || e.folded != nil || (e.Reason == runSucceeded && !e.Warning)
}

// isFolded says whether e is a step transition that FoldEvents folds.
func isFolded(e Event) bool {
	_, ok := foldedEvents[e.Reason]
	return ok && e.step != "" && !e.Warning
}

// listNames joins names, up to about limit characters, then says how many more.
func listNames(names []string, limit int) string {
	var b strings.Builder
	for i, n := range names {
		if b.Len()+len(n) > limit {
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

// ReasonCreatedThrough is the reason of the Event that tells, when a Run starts, who created
// it through which of Ergon's protocol endpoints.
const ReasonCreatedThrough = "CreatedThrough"

// protocolNames are the protocols ergonv1alpha1.AnnotationVia may name.
var protocolNames = map[string]string{"mcp": "MCP", "a2a": "A2A"}

// tellProtocol audits a Run that starts and was created through a protocol endpoint: an
// Event names the person admission stamped as its creator and the protocol it names. An
// annotation naming no known protocol is not repeated.
func (p *planner) tellProtocol() {
	name, ok := protocolNames[p.f.Run.Annotations[ergonv1alpha1.AnnotationVia]]
	if !ok {
		return
	}
	who := p.f.Run.Annotations[ergonv1alpha1.AnnotationCreatedBy]
	if who == "" {
		who = "an unknown person"
	}
	p.plan.Events = append(p.plan.Events, Event{Reason: ReasonCreatedThrough,
		Message: fmt.Sprintf("Run created by %s through %s", who, name)})
}
