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

package gatepolicy

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/humaninput"
)

func TestDecideSaysWhoseAnswerCountsAndWhatTheAnswersDecide(t *testing.T) {
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	past, future := now.Add(-time.Minute), now.Add(time.Minute)
	decision := func(user, option string, groups ...string) Answer {
		return Answer{User: user, Groups: groups, Option: option, Comment: user + " says " + option}
	}
	vote := func(user, option string, groups ...string) Answer {
		a := decision(user, option, groups...)
		a.Vote = true
		return a
	}
	approval := Question{Gate: "g", Run: "deploy", MinApprovals: 1, Self: SelfForbidden}
	with := func(mutate func(*Question)) Question {
		q := approval
		mutate(&q)
		return q
	}
	counts := Verdict{}
	viaRBAC := Verdict{NeedsRBAC: true}
	refused := func(says string) Verdict { return Verdict{Refused: says} }

	cases := []struct {
		name     string
		q        Question
		person   string
		answers  []Answer
		verdicts []Verdict // Refused is matched as a substring
		outcome  *Outcome
	}{
		{"an unanswered Gate waits", approval, "vera", nil, []Verdict{}, nil},
		{"a listed approver's decision decides without RBAC",
			with(func(q *Question) { q.Approvers = &ergonv1alpha1.Approvers{Users: []string{"alice"}} }), "vera",
			[]Answer{decision("alice", "approve")}, []Verdict{counts},
			&Outcome{Phase: ergonv1alpha1.GateApproved, Option: "approve", DecidedBy: "alice", Comment: "alice says approve"}},
		{"a listed group's member decides without RBAC",
			with(func(q *Question) { q.Approvers = &ergonv1alpha1.Approvers{Groups: []string{"leads"}} }), "vera",
			[]Answer{decision("bob", "reject", "devs", "leads")}, []Verdict{counts},
			&Outcome{Phase: ergonv1alpha1.GateRejected, Option: "reject", DecidedBy: "bob", Comment: "bob says reject"}},
		{"someone not listed counts only if RBAC allows", approval, "vera",
			[]Answer{decision("dave", "approve")}, []Verdict{viaRBAC},
			&Outcome{Phase: ergonv1alpha1.GateApproved, Option: "approve", DecidedBy: "dave", Comment: "dave says approve"}},
		{"an approval Gate refuses the person behind the Run, listed or not",
			with(func(q *Question) { q.Approvers = &ergonv1alpha1.Approvers{Users: []string{"vera"}} }), "vera",
			[]Answer{decision("vera", "approve")}, []Verdict{refused("vera created Run deploy, and this Gate forbids self-approval")}, nil},
		{"and refuses their rejection too", approval, "vera",
			[]Answer{decision("vera", "reject")}, []Verdict{refused("forbids self-approval")}, nil},
		{"a tool call's Gate says why its person cannot approve",
			with(func(q *Question) { q.ToolCall = "call_1" }), "vera",
			[]Answer{decision("vera", "approve")}, []Verdict{refused("unless the tool's approval.allowSelfApproval is true")}, nil},
		{"a Gate that allows its person lets them answer", with(func(q *Question) { q.Self = SelfAllowed }), "vera",
			[]Answer{decision("vera", "approve")}, []Verdict{viaRBAC},
			&Outcome{Phase: ergonv1alpha1.GateApproved, Option: "approve", DecidedBy: "vera", Comment: "vera says approve"}},
		{"a Run without a person refuses nobody", approval, "",
			[]Answer{decision("vera", "approve")}, []Verdict{viaRBAC},
			&Outcome{Phase: ergonv1alpha1.GateApproved, Option: "approve", DecidedBy: "vera", Comment: "vera says approve"}},
		{"an answer that names nobody counts for nothing", approval, "vera",
			[]Answer{decision("", "approve")}, []Verdict{refused("the answer names nobody")}, nil},
		{"one decision cannot decide a Gate that needs two", with(func(q *Question) { q.MinApprovals = 2 }), "vera",
			[]Answer{decision("alice", "approve")}, []Verdict{refused("needs 2 approvals from different people")}, nil},
		{"nor reject it", with(func(q *Question) { q.MinApprovals = 2 }), "vera",
			[]Answer{decision("alice", "reject")}, []Verdict{refused("add your vote to spec.approvals")}, nil},
		{"one vote of two needed waits", with(func(q *Question) { q.MinApprovals = 2 }), "vera",
			[]Answer{vote("alice", "approve")}, []Verdict{viaRBAC}, nil},
		{"two people's votes of two needed approve", with(func(q *Question) { q.MinApprovals = 2 }), "vera",
			[]Answer{vote("alice", "approve"), vote("bob", "approve")}, []Verdict{viaRBAC, viaRBAC},
			&Outcome{Phase: ergonv1alpha1.GateApproved, Option: "approve", DecidedBy: "alice, bob"}},
		{"one person voting twice is one vote", with(func(q *Question) { q.MinApprovals = 2 }), "vera",
			[]Answer{vote("alice", "approve"), vote("alice", "approve")},
			[]Verdict{viaRBAC, refused("alice has already voted on this Gate")}, nil},
		{"the person behind the Run is no second approver", with(func(q *Question) { q.MinApprovals = 2 }), "vera",
			[]Answer{vote("alice", "approve"), vote("vera", "approve")}, []Verdict{viaRBAC, refused("forbids self-approval")}, nil},
		{"unless the Gate allows them", with(func(q *Question) { q.MinApprovals, q.Self = 2, SelfAllowed }), "vera",
			[]Answer{vote("alice", "approve"), vote("vera", "approve")}, []Verdict{viaRBAC, viaRBAC},
			&Outcome{Phase: ergonv1alpha1.GateApproved, Option: "approve", DecidedBy: "alice, vera"}},
		{"any rejection decides a quorum", with(func(q *Question) { q.MinApprovals = 3 }), "vera",
			[]Answer{vote("alice", "approve"), vote("dave", "reject")}, []Verdict{viaRBAC, viaRBAC},
			&Outcome{Phase: ergonv1alpha1.GateRejected, Option: "reject", DecidedBy: "dave", Comment: "dave says reject"}},
		{"a rejection decides although a quorum approved before it", with(func(q *Question) { q.MinApprovals = 2 }), "vera",
			[]Answer{vote("alice", "approve"), vote("bob", "approve"), vote("dave", "reject")}, []Verdict{viaRBAC, viaRBAC, viaRBAC},
			&Outcome{Phase: ergonv1alpha1.GateRejected, Option: "reject", DecidedBy: "dave", Comment: "dave says reject"}},
		{"a quorum is of people who chose the same option", with(func(q *Question) { q.MinApprovals = 2 }), "vera",
			[]Answer{vote("alice", "staging"), vote("bob", "production"), vote("carol", "production")},
			[]Verdict{viaRBAC, viaRBAC, viaRBAC},
			&Outcome{Phase: ergonv1alpha1.GateApproved, Option: "production", DecidedBy: "bob, carol"}},
		{"a decision beside votes on a one-approval Gate counts its person once", approval, "vera",
			[]Answer{decision("alice", "approve"), vote("alice", "reject")}, []Verdict{viaRBAC, refused("already voted")},
			&Outcome{Phase: ergonv1alpha1.GateApproved, Option: "approve", DecidedBy: "alice", Comment: "alice says approve"}},
		{"past the timeout onTimeout decides",
			with(func(q *Question) { q.OnTimeout, q.ExpiresAt = "reject", &past }), "vera", nil, []Verdict{},
			&Outcome{Phase: ergonv1alpha1.GateTimedOut, Option: "reject", DecidedBy: "timeout"}},
		{"before the timeout the Gate waits", with(func(q *Question) { q.OnTimeout, q.ExpiresAt = "reject", &future }), "vera",
			nil, []Verdict{}, nil},
		{"an answer that counts decides although the timeout has passed",
			with(func(q *Question) { q.OnTimeout, q.ExpiresAt = "reject", &past }), "vera",
			[]Answer{decision("alice", "approve")}, []Verdict{viaRBAC},
			&Outcome{Phase: ergonv1alpha1.GateApproved, Option: "approve", DecidedBy: "alice", Comment: "alice says approve"}},
		{"a refused answer leaves the timeout to decide",
			with(func(q *Question) { q.OnTimeout, q.ExpiresAt = "reject", &past }), "vera",
			[]Answer{decision("vera", "approve")}, []Verdict{refused("forbids self-approval")},
			&Outcome{Phase: ergonv1alpha1.GateTimedOut, Option: "reject", DecidedBy: "timeout"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := Decide(tc.q, tc.person, tc.answers, now)
			if len(d.Verdicts) != len(tc.verdicts) {
				t.Fatalf("verdicts %+v, want %+v", d.Verdicts, tc.verdicts)
			}
			for i, want := range tc.verdicts {
				got := d.Verdicts[i]
				if got.NeedsRBAC != want.NeedsRBAC || (got.Refused == "") != (want.Refused == "") ||
					!strings.Contains(got.Refused, want.Refused) {
					t.Errorf("verdict %d: got %+v, want %+v", i, got, want)
				}
			}
			switch {
			case tc.outcome == nil && d.Outcome != nil:
				t.Errorf("decided %+v, want it to wait", *d.Outcome)
			case tc.outcome != nil && d.Outcome == nil:
				t.Errorf("waits, want %+v", *tc.outcome)
			case tc.outcome != nil && *d.Outcome != *tc.outcome:
				t.Errorf("decided %+v, want %+v", *d.Outcome, *tc.outcome)
			}
		})
	}
}

func TestQuestionOfReadsAGatesRules(t *testing.T) {
	expires := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	step := &ergonv1alpha1.Gate{ObjectMeta: metav1.ObjectMeta{Name: "r-review"},
		Spec: ergonv1alpha1.GateSpec{RunRef: corev1.LocalObjectReference{Name: "r"}, Step: "review", OnTimeout: "reject"}}
	q := QuestionOf(step, &expires)
	if q.Self != SelfAllowed || q.MinApprovals != 1 || q.ToolCall != "" || q.Run != "r" || q.Gate != "r-review" ||
		q.OnTimeout != "reject" || q.ExpiresAt != &expires {
		t.Errorf("a gate step's Gate without rules: %+v", q)
	}
	tool := step.DeepCopy()
	tool.Annotations = map[string]string{ergonv1alpha1.AnnotationToolCall: "call_1"}
	tool.Spec.ForbidSelfApproval, tool.Spec.MinApprovals = true, new(int32(2))
	tool.Spec.Approvers = &ergonv1alpha1.Approvers{Users: []string{"alice"}}
	q = QuestionOf(tool, nil)
	if q.Self != SelfForbidden || q.MinApprovals != 2 || q.ToolCall != "call_1" || q.Approvers == nil || q.ExpiresAt != nil {
		t.Errorf("a tool call's Gate: %+v", q)
	}
}

func TestAnswersOfListsTheDecisionThenTheVotes(t *testing.T) {
	gate := &ergonv1alpha1.Gate{Spec: ergonv1alpha1.GateSpec{
		Decision:  &ergonv1alpha1.GateDecision{User: "alice", Groups: []string{"leads"}, Option: "approve", Comment: "ok"},
		Approvals: []ergonv1alpha1.GateApproval{{User: "bob", Option: "reject"}, {User: "carol", Option: "approve"}},
	}}
	got := AnswersOf(gate)
	if len(got) != 3 || got[0].Vote || got[0].User != "alice" || got[0].Groups[0] != "leads" || got[0].Comment != "ok" ||
		!got[1].Vote || got[1].User != "bob" || got[1].Option != "reject" || !got[2].Vote || got[2].User != "carol" {
		t.Errorf("answers %+v", got)
	}
}

func TestDecideOnAnInputGate(t *testing.T) {
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	past := now.Add(-time.Minute)
	gate := &ergonv1alpha1.Gate{ObjectMeta: metav1.ObjectMeta{Name: "r-ask"}, Spec: ergonv1alpha1.GateSpec{
		RunRef: corev1.LocalObjectReference{Name: "r"}, Step: "ask",
		Input: &apiextensionsv1.JSON{Raw: []byte(`{"type": "object", "required": ["version"], "properties": {
			"version": {"type": "string", "default": "v1"}, "replicas": {"type": "integer", "minimum": 1, "default": 2}}}`)}}}
	q := QuestionOf(gate, nil)
	if q.Input == nil || q.Invalid != "" || !q.Asks() {
		t.Fatalf("QuestionOf an input Gate: %+v", q)
	}
	answer := func(user, option, values string, vote bool) Answer {
		a := Answer{User: user, Option: option, Vote: vote, Path: field.NewPath("spec", "decision", "values")}
		if values != "" {
			v, err := humaninput.DecodeValues([]byte(values))
			if err != nil {
				t.Fatal(err)
			}
			a.Values = v
		}
		return a
	}
	quorum := q
	quorum.MinApprovals = 3
	timeout := q
	timeout.OnTimeout, timeout.ExpiresAt = "approve", &past
	plain := QuestionOf(&ergonv1alpha1.Gate{Spec: ergonv1alpha1.GateSpec{Step: "review"}}, nil)

	for _, tc := range []struct {
		name    string
		q       Question
		answers []Answer
		// refused are substrings of each verdict's Refused ("" when it counts).
		refused []string
		outcome *Outcome
	}{
		{"values that fit decide, canonical", q, []Answer{answer("alice", "approve", `{"replicas": 3.0, "version": "v2"}`, false)},
			[]string{""}, &Outcome{Phase: ergonv1alpha1.GateApproved, Option: "approve", DecidedBy: "alice",
				Values: `{"replicas":3,"version":"v2"}`}},
		{"values that do not fit count for nothing", q, []Answer{answer("alice", "approve", `{"replicas": 0}`, false)},
			[]string{"spec.decision.values.version: Required value"}, nil},
		{"an approval without values counts for nothing", q, []Answer{answer("alice", "approve", "", false)},
			[]string{"spec.decision.values: Invalid value: null"}, nil},
		{"a rejection needs no values", q, []Answer{answer("alice", "reject", "", false)},
			[]string{""}, &Outcome{Phase: ergonv1alpha1.GateRejected, Option: "reject", DecidedBy: "alice"}},
		{"a quorum is of people who gave the same values", quorum, []Answer{
			answer("alice", "approve", `{"version": "v2", "replicas": 2}`, true),
			answer("bob", "approve", `{"version": "v3", "replicas": 2}`, true),
			answer("carol", "approve", `{"replicas": 2, "version": "v2"}`, true),
			answer("dave", "approve", `{"version": "v3", "replicas": 2}`, true),
			answer("erin", "approve", `{"version": "v2", "replicas": 2.0}`, true)},
			[]string{"", "", "", "", ""}, &Outcome{Phase: ergonv1alpha1.GateApproved, Option: "approve",
				DecidedBy: "alice, carol, erin", Values: `{"replicas":2,"version":"v2"}`}},
		{"a timeout that approves takes the defaults", timeout, nil, []string{},
			&Outcome{Phase: ergonv1alpha1.GateTimedOut, Option: "approve", DecidedBy: "timeout", Values: `{"replicas":2,"version":"v1"}`}},
		{"a Gate that asks nothing takes no values", plain, []Answer{answer("alice", "approve", `{"a": 1}`, false)},
			[]string{"this Gate asks for no input"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Decide(tc.q, "vera", tc.answers, now)
			for i, want := range tc.refused {
				got := d.Verdicts[i].Refused
				if (want == "") != (got == "") || !strings.Contains(got, want) {
					t.Errorf("verdict %d refused %q, want %q", i, got, want)
				}
			}
			switch {
			case tc.outcome == nil && d.Outcome != nil:
				t.Errorf("decided %+v, want it to wait", *d.Outcome)
			case tc.outcome != nil && d.Outcome == nil:
				t.Errorf("waits, want %+v", *tc.outcome)
			case tc.outcome != nil && *d.Outcome != *tc.outcome:
				t.Errorf("decided %+v, want %+v", *d.Outcome, *tc.outcome)
			}
		})
	}
}

func TestThePersonBehindTheRunAnswersTheirInputGate(t *testing.T) {
	input := &apiextensionsv1.JSON{Raw: []byte(`{"type": "object", "properties": {"v": {"type": "string"}}}`)}
	gate := func(forbid bool, in *apiextensionsv1.JSON) Question {
		return QuestionOf(&ergonv1alpha1.Gate{ObjectMeta: metav1.ObjectMeta{Name: "g"}, Spec: ergonv1alpha1.GateSpec{
			RunRef: corev1.LocalObjectReference{Name: "r"}, Step: "s", Input: in, ForbidSelfApproval: forbid,
			Approvers: &ergonv1alpha1.Approvers{Users: []string{"dana"}}}}, nil)
	}
	values, _ := humaninput.DecodeValues([]byte(`{"v": "x"}`))
	cases := []struct {
		name      string
		q         Question
		user      string
		values    any
		refused   string
		needsRBAC bool
	}{
		{"the Run's person, on an input Gate", gate(false, input), "vera", values, "", false},
		{"a listed approver", gate(false, input), "dana", values, "", false},
		{"anyone else needs RBAC's approve", gate(false, input), "mallory", values, "", true},
		{"the Run's person, where the Gate forbids it", gate(true, input), "vera", values, "forbids self-approval", false},
		{"the Run's person, on a plain Gate: RBAC decides, as ever", gate(false, nil), "vera", nil, "", true},
		{"the Run's person, listed, where a plain Gate forbids it", func() Question {
			q := gate(true, nil)
			q.Approvers = &ergonv1alpha1.Approvers{Users: []string{"vera", "dana"}}
			return q
		}(), "vera", nil, "forbids self-approval", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := Decide(c.q, "vera", []Answer{{User: c.user, Option: "approve", Values: c.values}}, time.Time{})
			v := d.Verdicts[0]
			if !strings.Contains(v.Refused, c.refused) || (c.refused == "" && v.Refused != "") || v.NeedsRBAC != c.needsRBAC {
				t.Fatalf("verdict %+v, want refused %q and NeedsRBAC %v", v, c.refused, c.needsRBAC)
			}
			// What the lists of waiting Gates ask before anyone answers agrees with it.
			if w := Who(c.q, "vera", c.user, nil); w.Refused != v.Refused || w.NeedsRBAC != v.NeedsRBAC {
				t.Fatalf("Who = %+v, but the answer's verdict is %+v", w, v)
			}
		})
	}
}
