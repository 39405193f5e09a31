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

// Package gatepolicy is the one place that says whose answer to a Gate counts and what a
// Gate's answers decide, for a gate step's Gate and an agent tool call's alike.
//
// The Gate admission webhook asks Decide whether the decision or vote being given counts, and
// refuses it with the reason when it does not (and asks RBAC when the answerer is not a listed
// approver); the Gate controller asks Decide what the answers stored decide, counting only
// those that count, so that an answer that reached a Gate some other way decides nothing. It
// knows nothing of clients: the person behind the Run, the time and the Gate are its inputs.
package gatepolicy

import (
	"fmt"
	"slices"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/humaninput"
)

// OptionReject is the option that rejects a Gate; every other option approves it.
// OptionApprove is the option a Gate offers by default besides it.
const (
	OptionReject  = "reject"
	OptionApprove = "approve"
)

// Self says whether the person behind a Gate's Run may answer it. It is where a Gate that
// approves what the Run's person set going (someone else's to give) differs from a Gate that
// asks that person for input.
type Self int

const (
	// SelfForbidden keeps the person behind the Run from answering. It is the zero value: a
	// Question that says nothing forbids it.
	SelfForbidden Self = iota
	// SelfAllowed lets the person behind the Run answer.
	SelfAllowed
)

// Question is what a Gate asks, and of whom.
type Question struct {
	// Gate and Run name the Gate and its Run, for messages.
	Gate, Run string
	// ToolCall is the id of the agent's tool call the Gate asks approval of; empty for a gate
	// step's Gate.
	ToolCall string
	// Approvers may answer without RBAC's verb approve.
	Approvers *ergonv1alpha1.Approvers
	// MinApprovals is how many different people must choose the same option; below 1 is 1.
	MinApprovals int32
	// Self says whether the person behind the Run may answer.
	Self Self
	// OnTimeout is the option chosen once ExpiresAt has passed undecided; a nil ExpiresAt
	// never passes.
	OnTimeout string
	ExpiresAt *time.Time
	// Input is the schema of the values an answer gives, on an input Gate; nil otherwise.
	// Invalid says why a Gate's input does not parse (a Gate only Ergon makes, so never in
	// practice): then no approving answer counts.
	Input   *humaninput.Field
	Invalid string
}

// QuestionOf reads what a Gate asks; expiresAt is when its timeout passes, or nil. A Gate
// with forbidSelfApproval forbids the person behind its Run to answer; one without allows it
// (a gate step's default; the Run controller sets forbidSelfApproval on the Gates of tool
// calls unless the tool allows self-approval).
func QuestionOf(gate *ergonv1alpha1.Gate, expiresAt *time.Time) Question {
	q := Question{Gate: gate.Name, Run: gate.Spec.RunRef.Name, ToolCall: gate.Annotations[ergonv1alpha1.AnnotationToolCall],
		Approvers: gate.Spec.Approvers, MinApprovals: 1, Self: SelfAllowed, OnTimeout: gate.Spec.OnTimeout, ExpiresAt: expiresAt}
	if gate.Spec.MinApprovals != nil {
		q.MinApprovals = *gate.Spec.MinApprovals
	}
	if gate.Spec.ForbidSelfApproval {
		q.Self = SelfForbidden
	}
	if in := gate.Spec.Input; in != nil {
		form, errs := humaninput.Parse(in.Raw, field.NewPath("spec", "input"))
		q.Input = form
		if len(errs) > 0 {
			q.Invalid = errs.ToAggregate().Error()
		}
	}
	return q
}

// Asks reports whether the Gate asks for input.
func (q *Question) Asks() bool { return q.Input != nil || q.Invalid != "" }

// Answer is one person's answer to a Gate: its decision, or a vote in its approvals.
type Answer struct {
	// User and Groups are who answered, as admission stamped them.
	User   string
	Groups []string
	Option string
	// Comment is what the person said.
	Comment string
	// Vote says the answer is a vote in spec.approvals, not spec.decision.
	Vote bool
	// Values are the answer's values on an input Gate, JSON-decoded (nil when it gave none, or
	// they are not JSON); Path is where they are in the Gate, for the errors that name them.
	Values any
	Path   *field.Path
}

// AnswersOf lists a Gate's answers in the order they count: its decision, then its votes as
// they were cast.
func AnswersOf(gate *ergonv1alpha1.Gate) []Answer {
	var answers []Answer
	if d := gate.Spec.Decision; d != nil {
		answers = append(answers, Answer{User: d.User, Groups: d.Groups, Option: d.Option, Comment: d.Comment,
			Values: decoded(d.Values), Path: field.NewPath("spec", "decision", "values")})
	}
	for i, a := range gate.Spec.Approvals {
		answers = append(answers, Answer{User: a.User, Groups: a.Groups, Option: a.Option, Comment: a.Comment, Vote: true,
			Values: decoded(a.Values), Path: field.NewPath("spec", "approvals").Index(i).Child("values")})
	}
	return answers
}

// decoded reads values kept as JSON; nil when there are none.
func decoded(raw *apiextensionsv1.JSON) any {
	if raw == nil || len(raw.Raw) == 0 {
		return nil
	}
	v, err := humaninput.DecodeValues(raw.Raw)
	if err != nil {
		return nil
	}
	return v
}

// PersonOf is the person behind a Run, whom a Gate that forbids self-approval refuses: the
// Run's ergon.dev/created-by. Empty for no Run, or a Run without a person.
func PersonOf(run *ergonv1alpha1.Run) string {
	if run == nil {
		return ""
	}
	return run.Annotations[ergonv1alpha1.AnnotationCreatedBy]
}

// Verdict says whether one answer counts.
type Verdict struct {
	// Refused says why the answer counts for nothing; empty when it counts.
	Refused string
	// NeedsRBAC says the answerer is not a listed approver: the answer counts only if RBAC
	// grants them the verb approve on the Gate, which admission asks when it is given.
	NeedsRBAC bool
	// Invalid names the fields of the answer's values that do not fit the Gate's input, when
	// that is why it is refused.
	Invalid field.ErrorList
}

// Outcome is what decided a Gate.
type Outcome struct {
	Phase  ergonv1alpha1.GatePhase
	Option string
	// DecidedBy is who decided: a person, the people of a quorum joined by ", ", or "timeout".
	DecidedBy string
	Comment   string
	// Values are what an approved input Gate was answered with, as canonical JSON
	// (humaninput.Canonical): the deciding people's values, or the input's defaults when a
	// timeout approved. Empty otherwise.
	Values string
}

// Decision is what a Gate's answers come to.
type Decision struct {
	// Verdicts has one entry per answer, in the answers' order.
	Verdicts []Verdict
	// Outcome is what decided the Gate; nil while it waits.
	Outcome *Outcome
}

// Decide says, for a Gate asking q of its Run's person, which answers count and what they
// decide at now. An answer counts when it names a person (admission stamps one), is a vote
// when the Gate needs several approvals, is not the person behind the Run's where q forbids
// self-approval, is its person's first, and, approving an input Gate, gives values that fit
// its input. Any rejection that counts decides; otherwise the first option (with the same
// values, on an input Gate) that MinApprovals different people chose does; otherwise, past
// ExpiresAt, OnTimeout does, with the input's defaults. It is pure.
func Decide(q Question, person string, answers []Answer, now time.Time) Decision {
	need := max(q.MinApprovals, 1)
	d := Decision{Verdicts: make([]Verdict, len(answers))}
	counted := map[string]bool{}
	chose := map[string][]string{}
	var rejected, approved *Outcome
	for i, a := range answers {
		d.Verdicts[i] = judge(q, person, a, need, counted)
		if d.Verdicts[i].Refused != "" {
			continue
		}
		counted[a.User] = true
		if a.Option == OptionReject {
			if rejected == nil {
				rejected = &Outcome{Phase: ergonv1alpha1.GateRejected, Option: a.Option, DecidedBy: a.User, Comment: a.Comment}
			}
			continue
		}
		values := ""
		if q.Asks() {
			values, _ = humaninput.Canonical(a.Values) // decoded JSON, so it encodes
		}
		key := a.Option + "\x00" + values
		chose[key] = append(chose[key], a.User)
		if approved == nil && int32(len(chose[key])) >= need {
			approved = &Outcome{Phase: ergonv1alpha1.GateApproved, Option: a.Option, DecidedBy: strings.Join(chose[key], ", "),
				Values: values}
			if need == 1 {
				approved.Comment = a.Comment
			}
		}
	}
	switch {
	case rejected != nil:
		d.Outcome = rejected
	case approved != nil:
		d.Outcome = approved
	case q.ExpiresAt != nil && !now.Before(*q.ExpiresAt):
		d.Outcome = &Outcome{Phase: ergonv1alpha1.GateTimedOut, Option: q.OnTimeout, DecidedBy: "timeout"}
		if q.Input != nil && q.OnTimeout != "" && q.OnTimeout != OptionReject {
			defaults, _ := q.Input.Defaults(nil) // admission made sure they are whole
			d.Outcome.Values, _ = humaninput.Canonical(defaults)
		}
	}
	return d
}

// judge says whether one answer counts, given the people whose answers counted before it.
func judge(q Question, person string, a Answer, need int32, counted map[string]bool) Verdict {
	switch {
	case a.User == "":
		return Verdict{Refused: "the answer names nobody; admission stamps who answers, so it did not come through admission"}
	case !a.Vote && need > 1:
		return Verdict{Refused: fmt.Sprintf("this Gate needs %d approvals from different people, so no single decision decides it; "+
			"add your vote to spec.approvals instead (any rejection decides)", need)}
	}
	who := Who(q, person, a.User, a.Groups)
	if who.Refused != "" {
		return who
	}
	if counted[a.User] {
		return Verdict{Refused: fmt.Sprintf("%s has already voted on this Gate; a vote is cast once", a.User)}
	}
	if invalid := checkValues(q, a); len(invalid) > 0 {
		return Verdict{Refused: invalid.ToAggregate().Error(), Invalid: invalid}
	}
	return who
}

// Who says whether user, in groups, may answer a Gate asking q of person (the person behind
// its Run, "" for none), before anything of the answer is known: Refused when nothing lets
// them, NeedsRBAC when only RBAC's verb approve on the Gate would. Decide asks it of every
// answer; the plugin's and the console's lists of what waits on someone ask it of every
// open Gate, so they list exactly what admission would let that person answer.
func Who(q Question, person, user string, groups []string) Verdict {
	if q.Self == SelfForbidden && person != "" && user == person {
		return Verdict{Refused: selfRefusal(q, person)}
	}
	// An input Gate asks the person behind its Run first of all (their own gate step, their
	// agent's question, their conversation): they answer it as a listed approver would.
	if q.Asks() && q.Self == SelfAllowed && person != "" && user == person {
		return Verdict{}
	}
	return Verdict{NeedsRBAC: !listed(q.Approvers, user, groups)}
}

// checkValues says which fields of an answer's values do not fit the Gate: an answer that
// approves an input Gate gives values valid against its input; other answers give none (a
// rejection's are not read).
func checkValues(q Question, a Answer) field.ErrorList {
	path := a.Path
	if path == nil {
		path = field.NewPath("values")
	}
	switch {
	case a.Option == OptionReject:
		return nil
	case q.Invalid != "":
		return field.ErrorList{field.InternalError(path, fmt.Errorf("the Gate's input does not parse: %s", q.Invalid))}
	case q.Input != nil:
		return q.Input.Validate(a.Values, path)
	case a.Values != nil:
		return field.ErrorList{field.Forbidden(path, "this Gate asks for no input; answer with an option (and a comment) only")}
	}
	return nil
}

// selfRefusal says why the person behind the Run cannot answer.
func selfRefusal(q Question, person string) string {
	if q.ToolCall != "" {
		return fmt.Sprintf("%s created Run %s, and this Gate forbids self-approval: a tool call of the Run's agent is approved "+
			"by someone other than the person it acts for (unless the tool's approval.allowSelfApproval is true); "+
			"ask another approver", person, q.Run)
	}
	return fmt.Sprintf("%s created Run %s, and this Gate forbids self-approval; ask another approver", person, q.Run)
}

// listed reports whether the approvers name the user, or one of the user's groups.
func listed(a *ergonv1alpha1.Approvers, user string, groups []string) bool {
	if a == nil {
		return false
	}
	return slices.Contains(a.Users, user) || slices.ContainsFunc(groups, func(g string) bool { return slices.Contains(a.Groups, g) })
}
