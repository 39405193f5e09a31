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
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/controllers/internal/shared"
	"github.com/ergon-dev/ergon/internal/cause"
	"github.com/ergon-dev/ergon/internal/compile"
	"github.com/ergon-dev/ergon/internal/planner"
	"github.com/ergon-dev/ergon/internal/shard"
	"github.com/ergon-dev/ergon/internal/slots"
)

// slotWakeBuffer is how many wake-ups may wait for the Run controller's queue.
const slotWakeBuffer = 4096

// newSlots makes the Run controller's slot allocator (internal/slots) and the channel its
// wake-ups come through: a waiting Run is reconciled again as soon as a slot is free for it.
func (r *RunReconciler) newSlots() <-chan event.GenericEvent {
	wake := make(chan event.GenericEvent, slotWakeBuffer)
	r.slots = slots.New(r.Config.Slots, func(keys []slots.Key) {
		for _, k := range keys {
			select {
			case wake <- event.GenericEvent{Object: &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Namespace: k.Namespace, Name: k.Name}}}:
			default:
				// A full buffer drops the wake-up; the Run's own retry (planner.SlotRetry) comes.
			}
		}
	})
	queueSlots.Store(r.slots)
	return wake
}

// rebuildSlots tells the allocator, once per manager, what the Runs of its shard hold by their
// status, before it answers the first Run: after a restart the counts are what the Runs hold,
// not zero. It reads the cache, which is synced before any reconcile.
func (r *RunReconciler) rebuildSlots(ctx context.Context) error {
	r.slotsMu.Lock()
	defer r.slotsMu.Unlock()
	if r.slotsBuilt || r.Config.Slots.Unlimited() {
		return nil
	}
	runs := &ergonv1alpha1.RunList{}
	// Read only: the cache's objects are counted, not copied.
	if err := r.List(ctx, runs, client.UnsafeDisableDeepCopy); err != nil {
		return err
	}
	r.slots.Rebuild(slotUsages(runs.Items, r.Config.Shard))
	r.slotsBuilt = true
	return nil
}

// slotUsages is what the unfinished Runs of a shard hold by their status. The slots are
// counted from the status of the Runs, which only the manager writes, not from pods: anyone
// who may create a pod can give it Ergon's labels, and a flood of such pods must not stall
// every Run.
func slotUsages(runs []ergonv1alpha1.Run, s shard.Shard) map[slots.Key]slots.Usage {
	usages := map[slots.Key]slots.Usage{}
	for i := range runs {
		run := &runs[i]
		if run.Status.Phase.Finished() || !s.Owns(run.Namespace) {
			continue
		}
		if u := (slots.Usage{Active: planner.StatusUnits(&run.Status), Inherits: isChildRun(run)}); u.Active > 0 {
			usages[slots.Key{Namespace: run.Namespace, Name: run.Name}] = u
		}
	}
	return usages
}

// isChildRun reports whether a Run was started by a scene step of another Run, whose slot it
// inherits for its first unit. Only the manager sets a Run's depth (admission keeps the
// annotations under ergon.dev/ to it), so a tenant cannot pass a Run of its own off as a child
// to start units without a slot.
func isChildRun(run *ergonv1alpha1.Run) bool {
	owner := metav1.GetControllerOf(run)
	return cause.Of(run).Depth > 0 && owner != nil && owner.Kind == shared.KindRun && owner.APIVersion == ergonv1alpha1.GroupVersion.String()
}

// slotGrant is the planner's Facts.Slots for a Run: it asks the allocator for the slots the
// pass may use, given what the Run holds at that moment.
func (r *RunReconciler) slotGrant(run *ergonv1alpha1.Run) func(active int) (int, string) {
	key := slots.Key{Namespace: run.Namespace, Name: run.Name}
	inherits := isChildRun(run)
	return func(active int) (int, string) {
		g := r.slots.Acquire(key, slots.Usage{Active: active, Inherits: inherits})
		return g.N, g.Wait
	}
}

// settleSlots tells the allocator what a Run holds after its pass and how many of its units
// still wait, which returns the slots it was granted and did not use. plan is nil when the pass
// failed before planning; then what the stored status records stands.
func (r *RunReconciler) settleSlots(run *ergonv1alpha1.Run, scene *compile.Scene, stored *ergonv1alpha1.RunStatus, plan *planner.Plan) {
	if r.slots == nil {
		return
	}
	key := slots.Key{Namespace: run.Namespace, Name: run.Name}
	status, waiting := stored, 0
	if plan != nil {
		status, waiting = &plan.Status, plan.WaitingForSlots
	}
	if status.Phase.Finished() {
		r.slots.Forget(key)
		return
	}
	r.slots.Settle(key, slots.Usage{Active: planner.ActiveUnits(scene, status), Inherits: isChildRun(run)}, waiting)
}

// forgetSlots drops a Run that finished or is gone from the allocator.
func (r *RunReconciler) forgetSlots(namespace, name string) {
	if r.slots != nil {
		r.slots.Forget(slots.Key{Namespace: namespace, Name: name})
	}
}
