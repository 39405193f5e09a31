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
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/cause"
)

func TestTheLimitConditionSaysWhichLimitHoldsATriggerBackAndTellsItOnce(t *testing.T) {
	trigger := &ergonv1alpha1.Trigger{ObjectMeta: metav1.ObjectMeta{Name: "t", Generation: 2}}
	rate := &cause.Refusal{Reason: ergonv1alpha1.ReasonRateLimited, Message: "the minute is full"}
	deep := &cause.Refusal{Reason: ergonv1alpha1.ReasonDepthExceeded, Message: "too deep"}
	cond := func(status metav1.ConditionStatus, reason, message string) *metav1.Condition {
		return &metav1.Condition{Type: ergonv1alpha1.ConditionLimitReached, Status: status, Reason: reason, Message: message}
	}
	within := cond(metav1.ConditionFalse, ergonv1alpha1.ReasonWithinLimits, "")
	cases := []struct {
		name       string
		previous   *metav1.Condition
		look       LimitLook
		wantStatus metav1.ConditionStatus
		wantReason string
		wantEvent  bool
	}{
		{name: "the first look, within every limit: False", look: LimitLook{},
			wantStatus: metav1.ConditionFalse, wantReason: ergonv1alpha1.ReasonWithinLimits},
		{name: "the minute fills: True, told once", previous: within, look: LimitLook{Rate: rate},
			wantStatus: metav1.ConditionTrue, wantReason: ergonv1alpha1.ReasonRateLimited, wantEvent: true},
		{name: "the minute stays full: True, not told again",
			previous: cond(metav1.ConditionTrue, ergonv1alpha1.ReasonRateLimited, "the minute is full"), look: LimitLook{Rate: rate},
			wantStatus: metav1.ConditionTrue, wantReason: ergonv1alpha1.ReasonRateLimited},
		{name: "the minute frees: False",
			previous: cond(metav1.ConditionTrue, ergonv1alpha1.ReasonRateLimited, "the minute is full"), look: LimitLook{},
			wantStatus: metav1.ConditionFalse, wantReason: ergonv1alpha1.ReasonWithinLimits},
		{name: "a cause cap refuses a chained Run: True, told", previous: within, look: LimitLook{Refused: deep},
			wantStatus: metav1.ConditionTrue, wantReason: ergonv1alpha1.ReasonDepthExceeded, wantEvent: true},
		{name: "a cause cap stays reported while nothing starts",
			previous: cond(metav1.ConditionTrue, ergonv1alpha1.ReasonDepthExceeded, "too deep"), look: LimitLook{},
			wantStatus: metav1.ConditionTrue, wantReason: ergonv1alpha1.ReasonDepthExceeded},
		{name: "a Run starts again: False",
			previous: cond(metav1.ConditionTrue, ergonv1alpha1.ReasonDepthExceeded, "too deep"), look: LimitLook{Started: true},
			wantStatus: metav1.ConditionFalse, wantReason: ergonv1alpha1.ReasonWithinLimits},
		{name: "a cause cap is told before a full minute", previous: within, look: LimitLook{Rate: rate, Refused: deep},
			wantStatus: metav1.ConditionTrue, wantReason: ergonv1alpha1.ReasonDepthExceeded, wantEvent: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, event := LimitCondition(trigger, tc.previous, tc.look)
			if c.Type != ergonv1alpha1.ConditionLimitReached || c.Status != tc.wantStatus || c.Reason != tc.wantReason ||
				c.ObservedGeneration != 2 {
				t.Fatalf("condition = %+v", c)
			}
			if (event != nil) != tc.wantEvent {
				t.Fatalf("event = %+v, want one: %v", event, tc.wantEvent)
			}
			if event != nil && (event.Reason != c.Reason || event.Message != c.Message || event.Type != "Warning") {
				t.Fatalf("event = %+v for condition %+v", event, c)
			}
		})
	}
}
