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
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/planner"
)

// heldProgress is a running Run's progress Events not told yet, and when its last one was.
type heldProgress struct {
	mu     sync.Mutex
	last   time.Time
	events []planner.Event
}

// tellEvents records a pass's Events on the Run. Progress (steps starting and succeeding, the
// Run succeeding: planner.Event.Progress) is told at most once per EventInterval per Run:
// progress that comes sooner is held, and told folded into one Event with what follows, when
// the interval is over, before the Run's next other Event, or with the Run's end. A chain of
// short steps then costs the API server an Event every few steps, not one a step, and the Run's
// status tells each step as before. Other Events (failures, skips, waits, retries) are told at
// once. tellEvents returns how long until held progress is due; the caller passes by again
// then. A manager that stops forgets what it held: the status keeps the whole story.
func (r *RunReconciler) tellEvents(run *ergonv1alpha1.Run, key string, events []planner.Event, finished bool) time.Duration {
	var progress, other []planner.Event
	for _, e := range events {
		if e.Progress() {
			progress = append(progress, e)
		} else {
			other = append(other, e)
		}
	}
	v, _ := r.heldProgress.LoadOrStore(key, &heldProgress{})
	h := v.(*heldProgress)
	h.mu.Lock()
	defer h.mu.Unlock()
	if finished {
		r.heldProgress.Delete(key)
	}
	h.events = append(h.events, progress...)
	var wait time.Duration
	if len(h.events) > 0 {
		now := r.Clock.Now()
		if due := h.last.Add(r.Config.EventInterval); len(other) > 0 || finished || !now.Before(due) {
			r.emit(run, "Reconcile", planner.FoldEvents(h.events))
			h.events, h.last = nil, now
		} else {
			wait = due.Sub(now)
		}
	}
	r.emit(run, "Reconcile", other)
	return wait
}

// emit records events on the Run as the given action, Warnings as such.
func (r *RunReconciler) emit(run *ergonv1alpha1.Run, action string, events []planner.Event) {
	for _, e := range events {
		eventType := corev1.EventTypeNormal
		if e.Warning {
			eventType = corev1.EventTypeWarning
		}
		act := action
		if e.Action != "" {
			act = e.Action
		}
		r.Recorder.Eventf(run, nil, eventType, e.Reason, act, "%s", e.Message)
	}
}
