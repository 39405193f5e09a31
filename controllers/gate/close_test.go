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
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

func TestAGateWhoseRunEndedIsClosed(t *testing.T) {
	now := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	for _, end := range []ergonv1alpha1.RunPhase{ergonv1alpha1.RunCancelled, ergonv1alpha1.RunFailed, ergonv1alpha1.RunSucceeded} {
		t.Run(string(end), func(t *testing.T) {
			gate := &ergonv1alpha1.Gate{ObjectMeta: metav1.ObjectMeta{Name: "g", Generation: 3},
				Spec: ergonv1alpha1.GateSpec{RunRef: corev1.LocalObjectReference{Name: "deploy-7"}, Step: "review"}}
			pending, _ := decideGate(gate, "", now)
			status := closeGate(gate, pending, end, now)
			if status.Phase != ergonv1alpha1.GateClosed || status.DecidedBy != "" || status.Option != "" || status.DecidedAt != nil {
				t.Fatalf("status = %+v", status)
			}
			c := meta.FindStatusCondition(status.Conditions, ergonv1alpha1.ConditionDecided)
			if c == nil || c.Status != metav1.ConditionFalse || c.Reason != ergonv1alpha1.ReasonRunFinished || c.ObservedGeneration != 3 ||
				!strings.Contains(c.Message, "Run deploy-7 ended "+string(end)+" before anyone decided") {
				t.Fatalf("Decided = %+v", c)
			}
			if meta.IsStatusConditionTrue(status.Conditions, "Reconciling") {
				t.Fatalf("a closed Gate is still reconciling: %+v", status.Conditions)
			}
			// Closed for good: deciding again changes nothing.
			gate.Status = status
			gate.Spec.Decision = &ergonv1alpha1.GateDecision{Option: "approve", User: "alice"}
			again, outcome := decideGate(gate, "", now.Add(time.Minute))
			if again.Phase != ergonv1alpha1.GateClosed || outcome != nil {
				t.Fatalf("after a late decision: %s, %+v", again.Phase, outcome)
			}
		})
	}
}

func TestOnlyARunThatEndsWakesItsGates(t *testing.T) {
	run := func(p ergonv1alpha1.RunPhase) *ergonv1alpha1.Run {
		return &ergonv1alpha1.Run{Status: ergonv1alpha1.RunStatus{Phase: p}}
	}
	for _, tc := range []struct {
		old, new ergonv1alpha1.RunPhase
		want     bool
	}{
		{ergonv1alpha1.RunWaiting, ergonv1alpha1.RunCancelled, true},
		{ergonv1alpha1.RunRunning, ergonv1alpha1.RunFailed, true},
		{ergonv1alpha1.RunRunning, ergonv1alpha1.RunWaiting, false},
		{ergonv1alpha1.RunCancelled, ergonv1alpha1.RunCancelled, false},
	} {
		if got := runEnded.Update(event.UpdateEvent{ObjectOld: run(tc.old), ObjectNew: run(tc.new)}); got != tc.want {
			t.Errorf("%s -> %s: %v, want %v", tc.old, tc.new, got, tc.want)
		}
	}
	if runEnded.Create(event.CreateEvent{Object: run(ergonv1alpha1.RunCancelled)}) {
		t.Error("a Run created finished (the manager starting) wakes its Gates; they are reconciled anyway")
	}
}
