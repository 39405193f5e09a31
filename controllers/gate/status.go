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

package gate

import (
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/gatepolicy"
	"github.com/ergon-dev/ergon/internal/health"
)

// decideGate computes a Gate's status at a moment: decided by the answers that count
// (gatepolicy.Decide says which, for the person behind the Gate's Run), or by its timeout,
// with the kstatus conditions. It is pure; the reconciler writes what it returns.
func decideGate(gate *ergonv1alpha1.Gate, person string, now time.Time) (ergonv1alpha1.GateStatus, *gatepolicy.Outcome) {
	status, outcome := decision(gate, person, now)
	health.Set(&status.Conditions, gate.Generation, metav1.NewTime(now), health.Gate(&status))
	return status, outcome
}

func decision(gate *ergonv1alpha1.Gate, person string, now time.Time) (ergonv1alpha1.GateStatus, *gatepolicy.Outcome) {
	status := *gate.Status.DeepCopy()
	status.ObservedGeneration = gate.Generation
	if gate.Spec.Timeout != nil && status.ExpiresAt == nil {
		status.ExpiresAt = &metav1.Time{Time: gate.CreationTimestamp.Add(gate.Spec.Timeout.Duration)}
	}
	if status.Phase != "" && status.Phase != ergonv1alpha1.GatePending {
		return status, nil // decided once, for good
	}
	var expires *time.Time
	if status.ExpiresAt != nil {
		expires = &status.ExpiresAt.Time
	}
	outcome := gatepolicy.Decide(gatepolicy.QuestionOf(gate, expires), person, gatepolicy.AnswersOf(gate), now).Outcome
	cond := metav1.Condition{Type: ergonv1alpha1.ConditionDecided, ObservedGeneration: gate.Generation,
		LastTransitionTime: metav1.NewTime(now)}
	if outcome == nil {
		status.Phase = ergonv1alpha1.GatePending
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, ergonv1alpha1.ReasonAwaitingDecision, "waiting for a decision"
		meta.SetStatusCondition(&status.Conditions, cond)
		return status, nil
	}
	at := metav1.NewTime(now)
	status.Phase, status.Option, status.DecidedBy, status.DecidedAt = outcome.Phase, outcome.Option, outcome.DecidedBy, &at
	if outcome.Values != "" {
		status.Values = &apiextensionsv1.JSON{Raw: []byte(outcome.Values)}
	}
	cond.Status, cond.Reason = metav1.ConditionTrue, string(outcome.Phase)
	cond.Message = fmt.Sprintf("%s decided %s", outcome.DecidedBy, outcome.Option)
	meta.SetStatusCondition(&status.Conditions, cond)
	return status, outcome
}
