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
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

func TestGatesAreDecidedByDecisionQuorumOrTimeout(t *testing.T) {
	created := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	gate := func(mutate func(*ergonv1alpha1.GateSpec)) *ergonv1alpha1.Gate {
		g := &ergonv1alpha1.Gate{ObjectMeta: metav1.ObjectMeta{Name: "g", CreationTimestamp: metav1.NewTime(created)},
			Spec: ergonv1alpha1.GateSpec{Step: "review", Options: []string{"approve", "reject"},
				Timeout: &metav1.Duration{Duration: time.Hour}, OnTimeout: "reject"}}
		mutate(&g.Spec)
		return g
	}
	approval := func(user, option string) ergonv1alpha1.GateApproval {
		return ergonv1alpha1.GateApproval{User: user, Option: option}
	}
	cases := []struct {
		name      string
		gate      *ergonv1alpha1.Gate
		person    string
		at        time.Duration
		phase     ergonv1alpha1.GatePhase
		option    string
		decidedBy string
	}{
		{"an undecided gate waits", gate(func(*ergonv1alpha1.GateSpec) {}), "", time.Minute, ergonv1alpha1.GatePending, "", ""},
		{"a decision approves", gate(func(s *ergonv1alpha1.GateSpec) {
			s.Decision = &ergonv1alpha1.GateDecision{Option: "approve", User: "alice"}
		}), "", time.Minute, ergonv1alpha1.GateApproved, "approve", "alice"},
		{"a reject decision rejects", gate(func(s *ergonv1alpha1.GateSpec) {
			s.Decision = &ergonv1alpha1.GateDecision{Option: "reject", User: "bob"}
		}), "", time.Minute, ergonv1alpha1.GateRejected, "reject", "bob"},
		{"one approval of two needed waits", gate(func(s *ergonv1alpha1.GateSpec) {
			s.MinApprovals = new(int32(2))
			s.Approvals = []ergonv1alpha1.GateApproval{approval("alice", "approve")}
		}), "", time.Minute, ergonv1alpha1.GatePending, "", ""},
		{"two approvals of two needed approve", gate(func(s *ergonv1alpha1.GateSpec) {
			s.MinApprovals = new(int32(2))
			s.Approvals = []ergonv1alpha1.GateApproval{approval("alice", "approve"), approval("carol", "approve")}
		}), "", time.Minute, ergonv1alpha1.GateApproved, "approve", "alice, carol"},
		{"any rejection decides a quorum", gate(func(s *ergonv1alpha1.GateSpec) {
			s.MinApprovals = new(int32(3))
			s.Approvals = []ergonv1alpha1.GateApproval{approval("alice", "approve"), approval("dave", "reject")}
		}), "", time.Minute, ergonv1alpha1.GateRejected, "reject", "dave"},
		{"one person's decision cannot decide a quorum", gate(func(s *ergonv1alpha1.GateSpec) {
			s.MinApprovals = new(int32(3))
			s.Decision = &ergonv1alpha1.GateDecision{Option: "approve", User: "mallory"}
			s.Approvals = []ergonv1alpha1.GateApproval{approval("mallory", "approve")}
		}), "", time.Minute, ergonv1alpha1.GatePending, "", ""},
		{"nor reject it", gate(func(s *ergonv1alpha1.GateSpec) {
			s.MinApprovals = new(int32(2))
			s.Decision = &ergonv1alpha1.GateDecision{Option: "reject", User: "mallory"}
		}), "", time.Minute, ergonv1alpha1.GatePending, "", ""},
		{"the decision of the person behind the Run decides nothing where self-approval is forbidden",
			gate(func(s *ergonv1alpha1.GateSpec) {
				s.ForbidSelfApproval = true
				s.Decision = &ergonv1alpha1.GateDecision{Option: "approve", User: "vera"}
			}), "vera", time.Minute, ergonv1alpha1.GatePending, "", ""},
		{"the timeout applies onTimeout", gate(func(*ergonv1alpha1.GateSpec) {}), "", time.Hour, ergonv1alpha1.GateTimedOut, "reject", "timeout"},
		{"a decision before the timeout wins", gate(func(s *ergonv1alpha1.GateSpec) {
			s.Decision = &ergonv1alpha1.GateDecision{Option: "approve", User: "alice"}
		}), "", 2 * time.Hour, ergonv1alpha1.GateApproved, "approve", "alice"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, outcome := decideGate(tc.gate, tc.person, created.Add(tc.at))
			if status.Phase != tc.phase || status.Option != tc.option || status.DecidedBy != tc.decidedBy {
				t.Fatalf("got %s %q by %q, want %s %q by %q", status.Phase, status.Option, status.DecidedBy, tc.phase, tc.option, tc.decidedBy)
			}
			if (outcome != nil) != (tc.phase != ergonv1alpha1.GatePending) {
				t.Fatalf("outcome %v for phase %s", outcome, status.Phase)
			}
			if status.ExpiresAt == nil || !status.ExpiresAt.Equal(&metav1.Time{Time: created.Add(time.Hour)}) {
				t.Fatalf("expiresAt %v", status.ExpiresAt)
			}
		})
	}
}

func TestADecidedGateStaysDecided(t *testing.T) {
	g := &ergonv1alpha1.Gate{Spec: ergonv1alpha1.GateSpec{Decision: &ergonv1alpha1.GateDecision{Option: "reject", User: "x"}},
		Status: ergonv1alpha1.GateStatus{Phase: ergonv1alpha1.GateApproved, Option: "approve", DecidedBy: "alice"}}
	status, outcome := decideGate(g, "", time.Now())
	if status.Phase != ergonv1alpha1.GateApproved || status.DecidedBy != "alice" || outcome != nil {
		t.Fatalf("a decided Gate changed: %+v, %v", status, outcome)
	}
}
