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
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/controllers/internal/shared"
	"github.com/ergon-dev/ergon/internal/triggers"
)

// triggerFacts is what a Trigger's reconcile reads: the Runs it started, split by outcome,
// finished ones oldest first.
type triggerFacts struct {
	active    []*ergonv1alpha1.Run
	succeeded []*ergonv1alpha1.Run
	failed    []*ergonv1alpha1.Run // failed or cancelled
	// overBudget says why the Trigger's budget is spent; "" when it is not.
	overBudget string
	// look is what this look found about the manager's limits (limits.go).
	look triggers.LimitLook
}

// gather lists the Runs the Trigger owns.
func (r *TriggerReconciler) gather(ctx context.Context, trigger *ergonv1alpha1.Trigger) (*triggerFacts, error) {
	runs := &ergonv1alpha1.RunList{}
	if err := r.List(ctx, runs, client.InNamespace(trigger.Namespace), triggerLabelSelector(trigger)); err != nil {
		return nil, err
	}
	facts := &triggerFacts{}
	for i := range runs.Items {
		run := &runs.Items[i]
		if !metav1.IsControlledBy(run, trigger) {
			continue
		}
		switch run.Status.Phase {
		case ergonv1alpha1.RunSucceeded:
			facts.succeeded = append(facts.succeeded, run)
		case ergonv1alpha1.RunFailed, ergonv1alpha1.RunCancelled:
			facts.failed = append(facts.failed, run)
		default:
			if run.DeletionTimestamp.IsZero() {
				facts.active = append(facts.active, run)
			}
		}
	}
	byFinish := func(a, b *ergonv1alpha1.Run) int {
		if c := finishedAt(a).Compare(finishedAt(b)); c != 0 {
			return c
		}
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		// Within one second, a schedule's Run names (by unix minute) sort by time.
		return strings.Compare(a.Name, b.Name)
	}
	slices.SortFunc(facts.succeeded, byFinish)
	slices.SortFunc(facts.failed, byFinish)
	slices.SortFunc(facts.active, func(a, b *ergonv1alpha1.Run) int {
		return a.CreationTimestamp.Compare(b.CreationTimestamp.Time)
	})
	return facts, nil
}

func finishedAt(run *ergonv1alpha1.Run) time.Time {
	if run.Status.FinishedAt != nil {
		return run.Status.FinishedAt.Time
	}
	return run.CreationTimestamp.Time
}

// setRunHistory records the active Runs and when one last succeeded. The time is kept when
// the Run that set it has been deleted since.
func setRunHistory(status *ergonv1alpha1.TriggerStatus, facts *triggerFacts) {
	status.Active = nil
	for _, run := range facts.active {
		status.Active = append(status.Active, run.Name)
	}
	status.ActiveCount = int32(len(facts.active))
	if n := len(facts.succeeded); n > 0 {
		last := finishedAt(facts.succeeded[n-1])
		if status.LastSuccessfulTime == nil || last.After(status.LastSuccessfulTime.Time) {
			status.LastSuccessfulTime = &metav1.Time{Time: last}
		}
	}
}

// historyToDelete returns the oldest finished Runs beyond the Trigger's history limits.
func historyToDelete(trigger *ergonv1alpha1.Trigger, facts *triggerFacts) []*ergonv1alpha1.Run {
	beyond := func(runs []*ergonv1alpha1.Run, limit *int32, byDefault int32) []*ergonv1alpha1.Run {
		keep := int(byDefault)
		if limit != nil {
			keep = int(*limit)
		}
		if len(runs) <= keep {
			return nil
		}
		return runs[:len(runs)-keep]
	}
	return append(beyond(facts.succeeded, trigger.Spec.SuccessfulRunsHistoryLimit, 3),
		beyond(facts.failed, trigger.Spec.FailedRunsHistoryLimit, 1)...)
}

// deleteHistory deletes the finished Runs beyond the history limits.
func (r *TriggerReconciler) deleteHistory(ctx context.Context, trigger *ergonv1alpha1.Trigger, facts *triggerFacts) error {
	for _, run := range historyToDelete(trigger, facts) {
		if !run.DeletionTimestamp.IsZero() || keptForBudget(trigger, run, r.Clock.Now()) || keptForRate(run, r.Clock.Now()) ||
			(r.Archive && !shared.Archived(run)) {
			continue
		}
		log.FromContext(ctx).Info("Deleting Run beyond the history limit", "run", run.Name, "phase", run.Status.Phase)
		err := r.Delete(ctx, run, client.Preconditions{UID: &run.UID}, client.PropagationPolicy(metav1.DeletePropagationBackground))
		if client.IgnoreNotFound(err) != nil {
			return err
		}
		if err == nil {
			r.Recorder.Eventf(trigger, run, corev1.EventTypeNormal, EventRunDeleted, "Delete",
				"Deleted %s Run %s beyond the history limit", run.Status.Phase, run.Name)
		}
	}
	return nil
}
