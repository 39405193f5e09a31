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

package controllers

import (
	"context"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/naming"
	"github.com/ergon-dev/ergon/internal/schedule"
	"github.com/ergon-dev/ergon/internal/triggers"
)

// reconcileSchedule starts the Run a schedule owes now, if any, as its concurrency policy
// allows, and requeues at the next scheduled time. It never polls.
func (r *TriggerReconciler) reconcileSchedule(ctx context.Context, trigger *ergonv1alpha1.Trigger, facts *triggerFacts,
	status *ergonv1alpha1.TriggerStatus) (ctrl.Result, error) {
	spec := trigger.Spec.Schedule
	sched, err := schedule.Parse(spec.Cron, ptr.Deref(spec.TimeZone, ""), r.Location)
	if err != nil {
		status.NextScheduleTime = nil
		setTriggerReady(status, trigger, metav1.ConditionFalse, ergonv1alpha1.ReasonInvalidSchedule,
			"spec.schedule: "+err.Error()+"; fix the cron schedule or time zone")
		return ctrl.Result{}, nil
	}
	if ptr.Deref(trigger.Spec.Suspend, false) {
		status.NextScheduleTime = nil
		setTriggerReady(status, trigger, metav1.ConditionTrue, ergonv1alpha1.ReasonSuspended,
			"spec.suspend is set; no Run starts until it is cleared")
		return ctrl.Result{}, nil
	}

	now := r.Clock.Now()
	earliest := trigger.CreationTimestamp.Time
	if status.LastScheduleTime != nil {
		earliest = status.LastScheduleTime.Time
	}
	var deadline *time.Duration
	if spec.StartingDeadlineSeconds != nil {
		deadline = new(time.Duration(*spec.StartingDeadlineSeconds) * time.Second)
	}
	due := sched.DueAt(earliest, now, deadline)
	if due.TooManyMissed() && r.firstNotice(trigger, EventTooManyMissed, due.Time) {
		r.Recorder.Eventf(trigger, nil, corev1.EventTypeWarning, EventTooManyMissed, "Schedule",
			"Missed more than %d start times of %q; starting only the most recent. Check the clocks, or set spec.schedule.startingDeadlineSeconds",
			schedule.MaxMissed, spec.Cron)
	}
	if !due.Time.IsZero() {
		if err := r.startScheduled(ctx, trigger, facts, status, due.Time); err != nil {
			return ctrl.Result{}, err
		}
	}
	status.NextScheduleTime = &metav1.Time{Time: due.Next}
	setTriggerReady(status, trigger, metav1.ConditionTrue, ergonv1alpha1.ReasonScheduled,
		"Next Run at "+due.Next.UTC().Format(time.RFC3339))
	return ctrl.Result{RequeueAfter: due.Next.Sub(now)}, nil
}

// startScheduled starts the Run for a scheduled time under the concurrency policy.
func (r *TriggerReconciler) startScheduled(ctx context.Context, trigger *ergonv1alpha1.Trigger, facts *triggerFacts,
	status *ergonv1alpha1.TriggerStatus, scheduled time.Time) error {
	name := naming.ScheduledRunName(trigger.Name, scheduled)
	for _, run := range facts.active {
		if run.Name == name {
			// Started already; the status write that said so was lost or is on its way.
			status.LastScheduleTime = &metav1.Time{Time: scheduled}
			status.LastRun = name
			return nil
		}
	}
	switch schedule.Decide(string(trigger.Spec.Schedule.ConcurrencyPolicy), len(facts.active)) {
	case schedule.Skip:
		// As a CronJob, the time stays owed: it starts when the active Run ends, if that is
		// within the starting deadline.
		if !r.firstNotice(trigger, EventRunSkipped, scheduled) {
			return nil
		}
		log.FromContext(ctx).Info("Not starting a Run while one is active (concurrencyPolicy Forbid)",
			"scheduled", scheduled, "active", status.Active)
		r.Recorder.Eventf(trigger, nil, corev1.EventTypeNormal, EventRunSkipped, "Schedule",
			"Run for %s not started: %s is still active and concurrencyPolicy is Forbid",
			scheduled.UTC().Format(time.RFC3339), facts.active[0].Name)
		return nil
	case schedule.ReplaceActive:
		for _, run := range facts.active {
			if run.Spec.Cancel {
				continue
			}
			log.FromContext(ctx).Info("Cancelling Run to replace it (concurrencyPolicy Replace)", "run", run.Name)
			patch := client.MergeFrom(run.DeepCopy())
			run.Spec.Cancel = true
			if err := r.Patch(ctx, run, patch); client.IgnoreNotFound(err) != nil {
				return err
			}
			r.Recorder.Eventf(trigger, run, corev1.EventTypeNormal, EventRunReplaced, "Cancel",
				"Cancelled Run %s to start the one due at %s (concurrencyPolicy Replace)", run.Name,
				scheduled.UTC().Format(time.RFC3339))
		}
	}
	run := triggers.NewRun(trigger, name, nil)
	if err := r.createRun(ctx, trigger, run, "for the schedule time "+scheduled.UTC().Format(time.RFC3339)); err != nil {
		return err
	}
	status.LastScheduleTime = &metav1.Time{Time: scheduled}
	status.LastRun = name
	if !slices.Contains(status.Active, name) {
		status.Active = append(status.Active, name)
		status.ActiveCount++
	}
	return nil
}

// firstNotice says whether this manager has not yet recorded the event reason about this
// scheduled time of the Trigger, and remembers that it now has. Only the latest time is kept.
func (r *TriggerReconciler) firstNotice(trigger *ergonv1alpha1.Trigger, reason string, scheduled time.Time) bool {
	key := trigger.Namespace + "/" + trigger.Name + "/" + reason
	previous, loaded := r.noticed.Swap(key, scheduled.Unix())
	return !loaded || previous.(int64) != scheduled.Unix()
}
