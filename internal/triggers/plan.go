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

package triggers

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/naming"
	"github.com/ergon-dev/ergon/internal/schedule"
)

// Event reasons of a scheduled Trigger.
const (
	EventRunStarted    = "RunStarted"
	EventRunSkipped    = "RunSkipped"
	EventRunReplaced   = "RunReplaced"
	EventTooManyMissed = "TooManyMissedTimes"
)

// ScheduleFacts is what the schedule of a Trigger is planned from: the Trigger, its active Runs
// (oldest first), the time, and the time zone a schedule without one uses.
type ScheduleFacts struct {
	Trigger  *ergonv1alpha1.Trigger
	Active   []*ergonv1alpha1.Run
	Now      time.Time
	Location *time.Location
	// OverBudget says why the Trigger's budget is spent (PlanBudget); "" when it is not.
	OverBudget string
	// Limited says which of the manager's limits keeps the Trigger from starting a Run now
	// (its Runs per minute; LimitCondition); "" when none does. Like a spent budget, it
	// passes over the due time.
	Limited string
}

// Ready is the Trigger's Ready condition a plan sets.
type Ready struct {
	Status  metav1.ConditionStatus
	Reason  string
	Message string
}

// Event is an Event a plan asks for, about the Trigger and, when Regarding is set, one of its
// Runs. Once, when set, says the Event is told once per scheduled time: a Trigger reconciled
// again for the same time does not repeat it.
type Event struct {
	Type      string
	Reason    string
	Action    string
	Message   string
	Regarding *ergonv1alpha1.Run
	Once      time.Time
}

// SchedulePlan is everything one look at a scheduled Trigger decides. The controller carries it
// out in order: cancel, start, then write Status (only when Start succeeded or was not asked
// for), tell Events, and look again after RequeueAfter.
type SchedulePlan struct {
	// Cancel are the active Runs to cancel before Start (concurrencyPolicy Replace).
	Cancel []*ergonv1alpha1.Run
	// Start is the Run to create, nil when none is due.
	Start *ergonv1alpha1.Run
	// Why says, for the Run's Event and the log, why Start starts.
	Why string
	// Scheduled is the time Start, or an active Run of the same name, is for, and RunName that
	// Run's name: the status records them once Start exists. Zero when no Run is due or the
	// due one is skipped.
	Scheduled time.Time
	RunName   string
	// Skipped is true when the due time at Scheduled is passed over, not owed: the budget is
	// spent. The status records it as the last schedule time, with no Run.
	Skipped bool
	// NextScheduleTime is the next time the schedule owes a Run; nil when none will come.
	NextScheduleTime *metav1.Time
	Ready            Ready
	Events           []Event
	// RequeueAfter is when to look again; zero for never (until the Trigger changes).
	RequeueAfter time.Duration
}

// PlanSchedule decides what a scheduled Trigger does now: start the Run the most recent due
// time owes, after cancelling active Runs when concurrencyPolicy is Replace, or skip it when
// it is Forbid; and when to look again. It changes nothing and calls nothing.
func PlanSchedule(f ScheduleFacts) SchedulePlan {
	trigger := f.Trigger
	spec := trigger.Spec.Schedule
	sched, err := schedule.Parse(spec.Cron, ptr.Deref(spec.TimeZone, ""), f.Location)
	if err != nil {
		return SchedulePlan{Ready: Ready{metav1.ConditionFalse, ergonv1alpha1.ReasonInvalidSchedule,
			"spec.schedule: " + err.Error() + "; fix the cron schedule or time zone"}}
	}
	if ptr.Deref(trigger.Spec.Suspend, false) {
		return SchedulePlan{Ready: Ready{metav1.ConditionTrue, ergonv1alpha1.ReasonSuspended,
			"spec.suspend is set; no Run starts until it is cleared"}}
	}

	earliest := trigger.CreationTimestamp.Time
	if trigger.Status.LastScheduleTime != nil {
		earliest = trigger.Status.LastScheduleTime.Time
	}
	var deadline *time.Duration
	if spec.StartingDeadlineSeconds != nil {
		deadline = new(time.Duration(*spec.StartingDeadlineSeconds) * time.Second)
	}
	due := sched.DueAt(earliest, f.Now, deadline)
	plan := SchedulePlan{
		NextScheduleTime: &metav1.Time{Time: due.Next},
		Ready: Ready{metav1.ConditionTrue, ergonv1alpha1.ReasonScheduled,
			"Next Run at " + due.Next.UTC().Format(time.RFC3339)},
		RequeueAfter: due.Next.Sub(f.Now),
	}
	if due.TooManyMissed() {
		plan.Events = append(plan.Events, Event{Type: corev1.EventTypeWarning, Reason: EventTooManyMissed, Action: "Schedule",
			Message: fmt.Sprintf("Missed more than %d start times of %q; starting only the most recent. "+
				"Check the clocks, or set spec.schedule.startingDeadlineSeconds", schedule.MaxMissed, spec.Cron),
			Once: due.Time})
	}
	if due.Time.IsZero() {
		return plan
	}
	name := naming.ScheduledRunName(trigger.Name, due.Time)
	plan.Scheduled, plan.RunName = due.Time, name
	for _, run := range f.Active {
		if run.Name == name || run.Annotations[ergonv1alpha1.AnnotationStandsFor] == name {
			// Started on an earlier look, perhaps under an alternate name (someone else's
			// Run held this one); only the status may not have been written.
			plan.RunName = run.Name
			return plan
		}
	}
	if f.OverBudget != "" || f.Limited != "" {
		// Told once per window by PlanBudget's Event, or when the limit is reached by
		// LimitCondition's, not once per scheduled time.
		plan.RunName, plan.Skipped = "", true
		return plan
	}
	at := due.Time.UTC().Format(time.RFC3339)
	switch schedule.Decide(string(spec.ConcurrencyPolicy), len(f.Active)) {
	case schedule.Skip:
		plan.Scheduled, plan.RunName = time.Time{}, ""
		plan.Events = append(plan.Events, Event{Type: corev1.EventTypeNormal, Reason: EventRunSkipped, Action: "Schedule",
			Message: fmt.Sprintf("Run for %s not started: %s is still active and concurrencyPolicy is Forbid",
				at, f.Active[0].Name),
			Once: due.Time})
		return plan
	case schedule.ReplaceActive:
		for _, run := range f.Active {
			if run.Spec.Cancel {
				continue
			}
			plan.Cancel = append(plan.Cancel, run)
			plan.Events = append(plan.Events, Event{Type: corev1.EventTypeNormal, Reason: EventRunReplaced, Action: "Cancel",
				Message: fmt.Sprintf("Cancelled Run %s to start the one due at %s (concurrencyPolicy Replace)",
					run.Name, at),
				Regarding: run})
		}
	}
	plan.Start = NewRun(trigger, name, nil)
	plan.Why = "for the schedule time " + at
	return plan
}
