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

// Package health writes the kstatus conditions (Reconciling, Stalled) every kind of Ergon
// carries beside its own, so Flux, Argo CD and kubectl-based tools see each object's health
// without knowing Ergon: sigs.k8s.io/cli-utils/pkg/kstatus computes InProgress while
// Reconciling is True, Failed while Stalled is True, and otherwise reads Ready, if any.
package health

import (
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

// State is where an object is, as kstatus sees it.
type State int

const (
	// Current: the object is what its spec asks; neither condition is set.
	Current State = iota
	// Reconciling: the object is on its way there.
	Reconciling
	// Stalled: the object cannot get there without a change to its spec.
	Stalled
)

// Health is an object's State with the reason and message of the condition that says it.
type Health struct {
	State   State
	Reason  string
	Message string
}

// Set writes Reconciling and Stalled for h: the one h names is True with h's reason, and the
// other is removed, as kstatus's "abnormal-true" conditions are present only while True.
// LastTransitionTime is now when a condition appears and kept while it stays True.
func Set(conditions *[]metav1.Condition, generation int64, now metav1.Time, h Health) {
	for _, c := range []struct {
		kind State
		name string
	}{{Reconciling, ergonv1alpha1.ConditionReconciling}, {Stalled, ergonv1alpha1.ConditionStalled}} {
		if h.State != c.kind {
			meta.RemoveStatusCondition(conditions, c.name)
			continue
		}
		meta.SetStatusCondition(conditions, metav1.Condition{Type: c.name, Status: metav1.ConditionTrue,
			Reason: h.Reason, Message: h.Message, ObservedGeneration: generation, LastTransitionTime: now})
	}
}

// Of says a State from an object's own condition: Reconciling while it is not True, unless
// stalled names the reasons that cannot change without a change to the spec.
func Of(c *metav1.Condition, stalled ...string) Health {
	switch {
	case c == nil:
		return Health{State: Reconciling, Reason: "Pending", Message: "not reconciled yet"}
	case c.Status == metav1.ConditionTrue:
		return Health{State: Current}
	}
	if slices.Contains(stalled, c.Reason) {
		return Health{State: Stalled, Reason: c.Reason, Message: c.Message}
	}
	return Health{State: Reconciling, Reason: c.Reason, Message: c.Message}
}

// Run: Reconciling until it finishes, Current when it succeeded, Stalled when it failed or
// was cancelled (nothing changes it any more; its Succeeded condition says why).
func Run(status *ergonv1alpha1.RunStatus) Health {
	succeeded := meta.FindStatusCondition(status.Conditions, ergonv1alpha1.ConditionSucceeded)
	reason, message := string(status.Phase), ""
	if succeeded != nil {
		reason, message = succeeded.Reason, succeeded.Message
	}
	switch status.Phase {
	case ergonv1alpha1.RunSucceeded:
		return Health{State: Current}
	case ergonv1alpha1.RunFailed, ergonv1alpha1.RunCancelled:
		return Health{State: Stalled, Reason: reason, Message: message}
	case "":
		return Health{State: Reconciling, Reason: ergonv1alpha1.ReasonPending, Message: "the Run has not started"}
	default:
		return Health{State: Reconciling, Reason: reason, Message: message}
	}
}

// Gate: Reconciling while nobody has decided, Current once decided, whatever the decision
// (the Run it pauses tells what the decision meant), or once closed because its Run ended.
func Gate(status *ergonv1alpha1.GateStatus) Health {
	decided := meta.FindStatusCondition(status.Conditions, ergonv1alpha1.ConditionDecided)
	if (decided != nil && decided.Status == metav1.ConditionTrue) || status.Phase == ergonv1alpha1.GateClosed {
		return Health{State: Current}
	}
	h := Health{State: Reconciling, Reason: ergonv1alpha1.ReasonAwaitingDecision, Message: "waiting for a decision"}
	if decided != nil {
		h.Reason, h.Message = decided.Reason, decided.Message
	}
	return h
}

// Trigger: from its Ready condition; a schedule that does not parse is Stalled.
func Trigger(status *ergonv1alpha1.TriggerStatus) Health {
	return Of(meta.FindStatusCondition(status.Conditions, ergonv1alpha1.ConditionReady), ergonv1alpha1.ReasonInvalidSchedule)
}

// Scene: from its Ready condition; a Scene that does not compile is Stalled, one that names a
// Scene or Workspace that does not exist yet is Reconciling (GitOps applies in any order).
func Scene(status *ergonv1alpha1.SceneStatus) Health {
	return Of(meta.FindStatusCondition(status.Conditions, ergonv1alpha1.ConditionReady), ergonv1alpha1.ReasonCompileFailed)
}

// Workspace is a Workspace's health: Running and Idle are what its spec asks (an Idle
// Workspace starts again on use), Failed needs a change, anything else is on its way.
func Workspace(status *ergonv1alpha1.WorkspaceStatus) Health {
	ready := meta.FindStatusCondition(status.Conditions, ergonv1alpha1.ConditionReady)
	switch status.Phase {
	case ergonv1alpha1.WorkspaceRunning, ergonv1alpha1.WorkspaceIdle:
		return Health{State: Current}
	case ergonv1alpha1.WorkspaceFailed:
		h := Health{State: Stalled, Reason: ergonv1alpha1.ReasonPodFailed, Message: "the Workspace cannot run"}
		if ready != nil {
			h.Reason, h.Message = ready.Reason, ready.Message
		}
		return h
	}
	h := Health{State: Reconciling, Reason: ergonv1alpha1.ReasonPodPending, Message: "the workspace pod is starting"}
	if ready != nil {
		h.Reason, h.Message = ready.Reason, ready.Message
	}
	return h
}
