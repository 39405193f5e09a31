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
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/cause"
)

// LimitLook is what one look at a Trigger found about the manager's limits.
type LimitLook struct {
	// Rate is the Runs-per-minute refusal while the Trigger has started as many Runs in the
	// last minute as it may; nil otherwise.
	Rate *cause.Refusal
	// Refused is the cause cap that kept a runCompleted Trigger from starting a Run in this
	// look (the depth or the Runs caused by the ended Run's root); nil when none did.
	Refused *cause.Refusal
	// Started says whether the Trigger started a Run in this look.
	Started bool
}

// LimitCondition is the Trigger's LimitReached condition after a look, and the Warning Event
// to tell, once, when it becomes True for a reason or message it did not have. The Runs-per-
// minute limit holds while the last minute is full; a cause cap stays reported until the
// Trigger starts a Run again. previous is the condition as the status holds it, nil on the
// first look.
func LimitCondition(trigger *ergonv1alpha1.Trigger, previous *metav1.Condition, look LimitLook) (metav1.Condition, *Event) {
	c := metav1.Condition{Type: ergonv1alpha1.ConditionLimitReached, ObservedGeneration: trigger.Generation,
		Status: metav1.ConditionFalse, Reason: ergonv1alpha1.ReasonWithinLimits,
		Message: "the Trigger starts Runs within the manager's limits (docs/limits.md)"}
	refusal := look.Refused
	if refusal == nil {
		refusal = look.Rate
	}
	switch {
	case refusal != nil:
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, refusal.Reason, refusal.Message
	case !look.Started && previous != nil && previous.Status == metav1.ConditionTrue &&
		previous.Reason != ergonv1alpha1.ReasonRateLimited:
		// A cause cap refused the last Run it would have started; nothing started since.
		c.Status, c.Reason, c.Message = previous.Status, previous.Reason, previous.Message
	}
	if c.Status != metav1.ConditionTrue ||
		previous != nil && previous.Status == metav1.ConditionTrue && previous.Reason == c.Reason && previous.Message == c.Message {
		return c, nil
	}
	return c, &Event{Type: corev1.EventTypeWarning, Reason: c.Reason, Action: "Start", Message: c.Message}
}
