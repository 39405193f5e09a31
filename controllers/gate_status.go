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
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/health"
)

// optionReject is the option that rejects a Gate; every other option approves it.
const optionReject = "reject"

// gateOutcome is what decided a Gate, or nothing yet.
type gateOutcome struct {
	phase     ergonv1alpha1.GatePhase
	option    string
	decidedBy string
	comment   string
}

// decideGate computes a Gate's status at a moment: decided by its decision (only when one
// approval suffices), by a quorum of approvals (any rejection decides), or by its timeout,
// with the kstatus conditions. It is pure; the reconciler writes what it returns.
func decideGate(gate *ergonv1alpha1.Gate, now time.Time) (ergonv1alpha1.GateStatus, *gateOutcome) {
	status, outcome := decision(gate, now)
	health.Set(&status.Conditions, gate.Generation, metav1.NewTime(now), health.Gate(&status))
	return status, outcome
}

func decision(gate *ergonv1alpha1.Gate, now time.Time) (ergonv1alpha1.GateStatus, *gateOutcome) {
	status := *gate.Status.DeepCopy()
	status.ObservedGeneration = gate.Generation
	if gate.Spec.Timeout != nil && status.ExpiresAt == nil {
		status.ExpiresAt = &metav1.Time{Time: gate.CreationTimestamp.Add(gate.Spec.Timeout.Duration)}
	}
	if status.Phase != "" && status.Phase != ergonv1alpha1.GatePending {
		return status, nil // decided once, for good
	}
	outcome := outcomeOf(gate, now, status.ExpiresAt)
	cond := metav1.Condition{Type: ergonv1alpha1.ConditionDecided, ObservedGeneration: gate.Generation,
		LastTransitionTime: metav1.NewTime(now)}
	if outcome == nil {
		status.Phase = ergonv1alpha1.GatePending
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, ergonv1alpha1.ReasonAwaitingDecision, "waiting for a decision"
		meta.SetStatusCondition(&status.Conditions, cond)
		return status, nil
	}
	at := metav1.NewTime(now)
	status.Phase, status.Option, status.DecidedBy, status.DecidedAt = outcome.phase, outcome.option, outcome.decidedBy, &at
	cond.Status, cond.Reason = metav1.ConditionTrue, string(outcome.phase)
	cond.Message = fmt.Sprintf("%s decided %s", outcome.decidedBy, outcome.option)
	meta.SetStatusCondition(&status.Conditions, cond)
	return status, outcome
}

func outcomeOf(gate *ergonv1alpha1.Gate, now time.Time, expires *metav1.Time) *gateOutcome {
	phaseOf := func(option string) ergonv1alpha1.GatePhase {
		if option == optionReject {
			return ergonv1alpha1.GateRejected
		}
		return ergonv1alpha1.GateApproved
	}
	if d := singleDecision(gate); d != nil {
		return &gateOutcome{phase: phaseOf(d.Option), option: d.Option, decidedBy: d.User, comment: d.Comment}
	}
	need := neededApprovals(gate)
	var approvers []string
	for _, a := range gate.Spec.Approvals {
		if a.Option == optionReject {
			return &gateOutcome{phase: ergonv1alpha1.GateRejected, option: a.Option, decidedBy: a.User, comment: a.Comment}
		}
		approvers = append(approvers, a.User)
	}
	if len(approvers) > 0 && int32(len(approvers)) >= need {
		return &gateOutcome{phase: ergonv1alpha1.GateApproved, option: gate.Spec.Approvals[0].Option,
			decidedBy: strings.Join(approvers, ", ")}
	}
	if expires != nil && !now.Before(expires.Time) {
		return &gateOutcome{phase: ergonv1alpha1.GateTimedOut, option: gate.Spec.OnTimeout, decidedBy: "timeout"}
	}
	return nil
}

// neededApprovals is how many different people must approve the Gate.
func neededApprovals(gate *ergonv1alpha1.Gate) int32 {
	if gate.Spec.MinApprovals == nil {
		return 1
	}
	return *gate.Spec.MinApprovals
}

// singleDecision is the Gate's decision when one person's decision decides it, or nil. A
// Gate that needs several approvals is decided only by counting votes: admission refuses a
// decision on it, and should one get through anyway, it is ignored.
func singleDecision(gate *ergonv1alpha1.Gate) *ergonv1alpha1.GateDecision {
	if neededApprovals(gate) > 1 {
		return nil
	}
	return gate.Spec.Decision
}
