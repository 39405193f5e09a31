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

package trigger

import (
	"context"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/controllers/internal/shared"
	"github.com/ergon-dev/ergon/internal/cause"
	"github.com/ergon-dev/ergon/internal/triggers"
)

// reconcileSchedule carries out the schedule's plan: cancel what Replace replaces, start the due
// Run, then record it in status. Nothing is decided here; triggers.PlanSchedule decides.
func (r *TriggerReconciler) reconcileSchedule(ctx context.Context, trigger *ergonv1alpha1.Trigger, facts *triggerFacts,
	status *ergonv1alpha1.TriggerStatus) (ctrl.Result, error) {
	plan := triggers.PlanSchedule(triggers.ScheduleFacts{
		Trigger: trigger, Active: facts.active, Now: r.Clock.Now(), Location: r.Location, OverBudget: facts.overBudget,
		Limited: limited(facts.look.Rate),
	})
	for _, run := range plan.Cancel {
		log.FromContext(ctx).Info("Cancelling Run to replace it (concurrencyPolicy Replace)", "run", run.Name)
		patch := client.MergeFrom(run.DeepCopy())
		run.Spec.Cancel = true
		if err := r.Patch(ctx, run, patch); client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, err
		}
	}
	if plan.Start != nil {
		if err := r.createRun(ctx, trigger, facts, plan.Start, plan.Why); err != nil {
			return ctrl.Result{}, err
		}
		plan.RunName = plan.Start.Name // an alternate, when someone else's Run held the name
		if !slices.Contains(status.Active, plan.RunName) {
			status.Active = append(status.Active, plan.RunName)
			status.ActiveCount++
		}
	}
	// From what exists, not from this pass's action: a pass that read the Trigger before the
	// last status write still sees the Run that stands for the taken name.
	setNameTaken(status, trigger, slices.Concat(facts.active, facts.succeeded, facts.failed, []*ergonv1alpha1.Run{plan.Start}))
	if plan.RunName != "" {
		status.LastScheduleTime = &metav1.Time{Time: plan.Scheduled}
		status.LastRun = plan.RunName
	}
	if plan.Skipped {
		status.LastScheduleTime = &metav1.Time{Time: plan.Scheduled}
	}
	status.NextScheduleTime = plan.NextScheduleTime
	setTriggerReady(status, trigger, plan.Ready.Status, plan.Ready.Reason, plan.Ready.Message)
	for _, e := range plan.Events {
		if !e.Once.IsZero() && !r.firstNotice(trigger, e.Reason, e.Once) {
			continue
		}
		var related runtime.Object
		if e.Regarding != nil {
			related = e.Regarding
		}
		r.Recorder.Eventf(trigger, related, e.Type, e.Reason, e.Action, "%s", e.Message)
	}
	return ctrl.Result{RequeueAfter: plan.RequeueAfter}, nil
}

// firstNotice says whether this manager has not yet recorded the event reason about this
// scheduled time of the Trigger, and remembers that it now has. Only the latest time is kept.
func (r *TriggerReconciler) firstNotice(trigger *ergonv1alpha1.Trigger, reason string, scheduled time.Time) bool {
	key := trigger.Namespace + "/" + trigger.Name + "/" + reason
	previous, loaded := r.noticed.Swap(key, scheduled.Unix())
	return !loaded || previous.(int64) != scheduled.Unix()
}

// limited is a refusal's message, "" for none.
func limited(refusal *cause.Refusal) string {
	if refusal == nil {
		return ""
	}
	return refusal.Message
}

// setNameTaken records on the Trigger that a Run it does not own held the name of a Run it
// started, which it started under an alternate name (controllers/run/squatters.go): the newest of runs
// that stands for another name. Once True, it stays.
func setNameTaken(status *ergonv1alpha1.TriggerStatus, trigger *ergonv1alpha1.Trigger, runs []*ergonv1alpha1.Run) {
	var newest *ergonv1alpha1.Run
	for _, run := range runs {
		if run == nil || shared.StandsFor(run) == run.Name {
			continue
		}
		if newest == nil || newest.CreationTimestamp.Before(&run.CreationTimestamp) {
			newest = run
		}
	}
	if newest == nil {
		return
	}
	meta.SetStatusCondition(&status.Conditions, metav1.Condition{Type: ergonv1alpha1.ConditionNameTaken,
		Status: metav1.ConditionTrue, Reason: ergonv1alpha1.ReasonNameSquatted, ObservedGeneration: trigger.Generation,
		Message: fmt.Sprintf("Run %s, which the Trigger did not create, holds the name of a Run it starts; Ergon leaves "+
			"it alone and started Run %s in its place (the Events name who created it)", shared.StandsFor(newest), newest.Name)})
}
