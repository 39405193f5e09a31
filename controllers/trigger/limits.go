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
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/controllers/internal/shared"
	"github.com/ergon-dev/ergon/internal/cause"
	"github.com/ergon-dev/ergon/internal/triggers"
)

// A Trigger starts at most the manager's --max-trigger-runs-per-minute Runs in any minute,
// from whatever source, and a runCompleted Trigger starts no Run past the cause caps of the
// Run whose end it chains to (internal/cause). Counts come from the cache of the Trigger's
// Runs, joined with the Runs this manager started a moment ago (cause.Ledger), which the
// hooks server shares. The LimitReached condition says which limit holds it back.

// ledger is the record of Runs created a moment ago; the manager shares one with the Run
// controller and the hooks server.
func (r *TriggerReconciler) ledger() *cause.Ledger {
	r.ledgerOnce.Do(func() {
		if r.Ledger == nil {
			r.Ledger = &cause.Ledger{}
		}
	})
	return r.Ledger
}

// rate says whether the Trigger has started as many Runs in the last minute as it may, and
// when to look again if so.
func (r *TriggerReconciler) rate(trigger *ergonv1alpha1.Trigger, facts *triggerFacts) (*cause.Refusal, time.Duration) {
	now := r.Clock.Now()
	names, frees := cause.StartedWithin(facts.all(), now)
	refusal := r.Limits.Rate(trigger.Name, r.ledger().Count(cause.TriggerKey(trigger), names, now))
	if refusal == nil {
		return nil, 0
	}
	wait := cause.Window
	if !frees.IsZero() {
		wait = max(frees.Sub(now), time.Second)
	}
	return refusal, wait
}

// chainRefusal says why a runCompleted Trigger may not start a Run because src ended: the
// depth the Run would have, or the Runs src's root caused already.
func (r *TriggerReconciler) chainRefusal(ctx context.Context, src *ergonv1alpha1.Run) (*cause.Refusal, error) {
	c := cause.Of(src)
	caused, err := shared.CausedBy(ctx, r.Client, src.Namespace, c.Root)
	if err != nil {
		return nil, err
	}
	n := r.ledger().Count(cause.RootLedgerKey(c.Root), caused, r.Clock.Now())
	return r.Limits.Chained(c, cause.Usage{Caused: n}), nil
}

// keptForRate says whether a finished Run stays beyond the history limits because it counts
// toward the Trigger's Runs of the last minute.
func keptForRate(run *ergonv1alpha1.Run, now time.Time) bool {
	return run.CreationTimestamp.After(now.Add(-cause.Window))
}

// setLimitCondition records what the look found in the LimitReached condition, and tells it
// once in a Warning Event when it becomes True.
func (r *TriggerReconciler) setLimitCondition(trigger *ergonv1alpha1.Trigger, status *ergonv1alpha1.TriggerStatus,
	look triggers.LimitLook) {
	previous := meta.FindStatusCondition(status.Conditions, ergonv1alpha1.ConditionLimitReached)
	c, event := triggers.LimitCondition(trigger, previous, look)
	meta.SetStatusCondition(&status.Conditions, c)
	if event != nil {
		r.Recorder.Eventf(trigger, nil, event.Type, event.Reason, event.Action, "%s", event.Message)
	}
}
