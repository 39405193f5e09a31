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
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/controllers/internal/shared"
	"github.com/ergon-dev/ergon/internal/cause"
	"github.com/ergon-dev/ergon/internal/naming"
	"github.com/ergon-dev/ergon/internal/triggers"
)

// reconcileChain starts one Run for each Run of the source Scene that ended, in one of the
// Trigger's phases, since the last one handled. A watermark in status (lastScheduleTime and
// the UIDs handled at that second) makes each source Run count once even after the Runs it
// started are deleted by the history limits; the Run names, derived from the source Run's UID,
// make a repeated reconcile or a restart create nothing twice.
//
// While the Trigger's budget is spent (facts.overBudget), source Runs that end are passed
// over, as when it is suspended: they start nothing later either. While it has started as many
// Runs in the last minute as it may, they wait, in the order they ended, for the minute to
// free. A source Run whose chain is as deep as Runs may nest, or whose root caused as many Runs
// as it may, starts nothing: the LimitReached condition and an Event say which limit.
func (r *TriggerReconciler) reconcileChain(ctx context.Context, trigger *ergonv1alpha1.Trigger, status *ergonv1alpha1.TriggerStatus,
	facts *triggerFacts) error {
	source := trigger.Spec.RunCompleted
	runs := &ergonv1alpha1.RunList{}
	if err := r.List(ctx, runs, client.InNamespace(trigger.Namespace),
		client.MatchingFields{shared.SceneRefField: source.SceneRef.Name}); err != nil {
		return err
	}
	phases := source.Phases
	if len(phases) == 0 {
		phases = []ergonv1alpha1.RunPhase{ergonv1alpha1.RunSucceeded}
	}
	pending := sourcesToHandle(trigger, status, runs.Items, phases)
	suspended := ptr.Deref(trigger.Spec.Suspend, false)
	for _, src := range pending {
		// Runs that end while the Trigger is suspended are passed over, not started later.
		if !suspended && facts.overBudget == "" {
			if facts.look.Rate, _ = r.rate(trigger, facts); facts.look.Rate != nil {
				break // the rest wait for the minute to free; Reconcile requeues for it
			}
			refusal, err := r.chainRefusal(ctx, src)
			if err != nil {
				return err
			}
			if refusal != nil {
				// Told once, by the LimitReached condition's Event.
				refusal.Message = "not starting a Run for Run " + src.Name + ", which ended: " + refusal.Message
				facts.look.Refused = refusal
			} else if err := r.startChained(ctx, trigger, status, facts, src); err != nil {
				return err
			}
		}
		markHandled(status, src)
	}
	if suspended {
		setTriggerReady(status, trigger, metav1.ConditionTrue, ergonv1alpha1.ReasonSuspended,
			"spec.suspend is set; Runs of Scene "+source.SceneRef.Name+" that end now start nothing")
		return nil
	}
	names := make([]string, 0, len(phases))
	for _, p := range phases {
		names = append(names, string(p))
	}
	setTriggerReady(status, trigger, metav1.ConditionTrue, ergonv1alpha1.ReasonWatching,
		"Starts a Run when a Run of Scene "+source.SceneRef.Name+" ends "+strings.Join(names, " or "))
	return nil
}

// sourcesToHandle returns the finished Runs in the phases that are not behind the watermark:
// those that finished after it, or at its second and are not yet handled. They are in the order
// they finished. Runs that finished before the Trigger existed are never handled.
func sourcesToHandle(trigger *ergonv1alpha1.Trigger, status *ergonv1alpha1.TriggerStatus,
	runs []ergonv1alpha1.Run, phases []ergonv1alpha1.RunPhase) []*ergonv1alpha1.Run {
	watermark := trigger.CreationTimestamp.Time
	if status.LastScheduleTime != nil {
		watermark = status.LastScheduleTime.Time
	}
	var out []*ergonv1alpha1.Run
	for i := range runs {
		run := &runs[i]
		if !slices.Contains(phases, run.Status.Phase) || run.Status.FinishedAt == nil {
			continue
		}
		at := run.Status.FinishedAt.Time
		if at.Before(watermark) || at.Equal(watermark) && slices.Contains(status.HandledRuns, string(run.UID)) {
			continue
		}
		out = append(out, run)
	}
	slices.SortFunc(out, func(a, b *ergonv1alpha1.Run) int {
		if c := a.Status.FinishedAt.Compare(b.Status.FinishedAt.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}

// markHandled moves the watermark to a handled source Run.
func markHandled(status *ergonv1alpha1.TriggerStatus, src *ergonv1alpha1.Run) {
	at := src.Status.FinishedAt.Truncate(time.Second)
	if status.LastScheduleTime == nil || at.After(status.LastScheduleTime.Time) {
		status.LastScheduleTime = &metav1.Time{Time: at}
		status.HandledRuns = nil
	}
	status.HandledRuns = append(status.HandledRuns, string(src.UID))
}

// startChained starts the Run for one finished source Run. A mapping that fails is a Warning
// on the Trigger, and the source Run is passed over: evaluating it again would fail again.
func (r *TriggerReconciler) startChained(ctx context.Context, trigger *ergonv1alpha1.Trigger,
	status *ergonv1alpha1.TriggerStatus, facts *triggerFacts, src *ergonv1alpha1.Run) error {
	mappings, err := r.mappings.Get(trigger)
	if err != nil {
		r.Recorder.Eventf(trigger, src, corev1.EventTypeWarning, EventMappingFailed, "Map",
			"Not starting a Run for Run %s: %v", src.Name, err)
		return nil
	}
	vars, err := triggers.RunVars(src)
	if err != nil {
		return err
	}
	params, err := mappings.Eval(vars)
	if err != nil {
		r.Recorder.Eventf(trigger, src, corev1.EventTypeWarning, EventMappingFailed, "Map",
			"Not starting a Run for Run %s: %v", src.Name, err)
		return nil
	}
	run := triggers.NewRun(trigger, naming.ChainedRunName(trigger.Name, string(src.UID)), params)
	// The Run is caused by the end of src: the same root, one deeper.
	cause.Of(src).Next().Stamp(run)
	if err := r.createRun(ctx, trigger, facts, run, "because Run "+src.Name+" ended "+string(src.Status.Phase)); err != nil {
		return err
	}
	status.LastRun = run.Name
	return nil
}
