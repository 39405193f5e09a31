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

package v1alpha1

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

func TestCastVotesOnlyGrowAtTheEnd(t *testing.T) {
	v := func(user, option string, groups ...string) ergonv1alpha1.GateApproval {
		return ergonv1alpha1.GateApproval{User: user, Option: option, Groups: groups}
	}
	old := []ergonv1alpha1.GateApproval{v("alice", "approve", "leads"), v("bob", "approve")}
	cases := []struct {
		name  string
		votes []ergonv1alpha1.GateApproval
		field string // of the refusal; empty when allowed
	}{
		{"unchanged", old, ""},
		{"one vote appended", append(old[:2:2], v("carol", "reject")), ""},
		{"two votes appended", append(old[:2:2], v("carol", "approve"), v("dave", "approve")), "spec.approvals[3]"},
		{"an option rewritten", []ergonv1alpha1.GateApproval{v("alice", "reject", "leads"), v("bob", "approve")}, "spec.approvals[0]"},
		{"groups dropped", []ergonv1alpha1.GateApproval{v("alice", "approve"), v("bob", "approve")}, "spec.approvals[0]"},
		{"reordered", []ergonv1alpha1.GateApproval{v("bob", "approve"), v("alice", "approve", "leads")}, "spec.approvals[0]"},
		{"the last withdrawn", old[:1], "spec.approvals"},
		{"the first withdrawn, one added", []ergonv1alpha1.GateApproval{v("bob", "approve"), v("carol", "approve")}, "spec.approvals[0]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			errs := castVotes(&ergonv1alpha1.Gate{Spec: ergonv1alpha1.GateSpec{Approvals: old}},
				&ergonv1alpha1.Gate{Spec: ergonv1alpha1.GateSpec{Approvals: tc.votes}})
			switch {
			case tc.field == "" && len(errs) > 0:
				t.Fatalf("refused: %v", errs)
			case tc.field != "" && (len(errs) != 1 || errs[0].Field != tc.field):
				t.Fatalf("got %v, want one refusal of %s", errs, tc.field)
			}
		})
	}
}

func TestReservedAnnotationsAreTheManagers(t *testing.T) {
	run := func(annotations map[string]string) *ergonv1alpha1.Run {
		return &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Annotations: annotations}}
	}
	mine := map[string]string{ergonv1alpha1.AnnotationCreatedBy: "mallory"}
	cases := []struct {
		name     string
		old, new map[string]string
		refused  []string
	}{
		{"create, created-by is the requester", nil, mine, nil},
		{"create, created-by names another", nil, map[string]string{ergonv1alpha1.AnnotationCreatedBy: "alice"},
			[]string{"metadata.annotations[ergon.dev/created-by]"}},
		{"create, identity is the requester's", nil, map[string]string{ergonv1alpha1.AnnotationCreatedBy: "mallory",
			ergonv1alpha1.AnnotationIdentity: `{"username":"mallory"}`}, nil},
		{"create, identity names another", nil, map[string]string{ergonv1alpha1.AnnotationCreatedBy: "mallory",
			ergonv1alpha1.AnnotationIdentity: `{"username":"alice","groups":["system:masters"]}`},
			[]string{"metadata.annotations[ergon.dev/identity]"}},
		{"create with a depth", nil, map[string]string{ergonv1alpha1.AnnotationCreatedBy: "mallory", ergonv1alpha1.AnnotationDepth: "-5"},
			[]string{"metadata.annotations[ergon.dev/depth]"}},
		{"create with other annotations", nil, map[string]string{ergonv1alpha1.AnnotationCreatedBy: "mallory", "team": "x"}, nil},
		{"update, unchanged", mine, map[string]string{ergonv1alpha1.AnnotationCreatedBy: "mallory", "team": "x"}, nil},
		{"update, changed", mine, map[string]string{ergonv1alpha1.AnnotationCreatedBy: "alice"},
			[]string{"metadata.annotations[ergon.dev/created-by]"}},
		{"update, removed", mine, map[string]string{}, []string{"metadata.annotations[ergon.dev/created-by]"}},
		{"update, depth added", mine, map[string]string{ergonv1alpha1.AnnotationCreatedBy: "mallory", ergonv1alpha1.AnnotationDepth: "1"},
			[]string{"metadata.annotations[ergon.dev/depth]"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var old *ergonv1alpha1.Run
			if tc.old != nil {
				old = run(tc.old)
			}
			var stamps map[string]string
			if tc.old == nil {
				stamps = map[string]string{ergonv1alpha1.AnnotationCreatedBy: "mallory",
					ergonv1alpha1.AnnotationIdentity: `{"username":"mallory"}`}
			}
			errs := reservedAnnotations(old, run(tc.new), stamps)
			var fields []string
			for _, e := range errs {
				fields = append(fields, e.Field)
			}
			if len(fields) != len(tc.refused) || (len(fields) > 0 && fields[0] != tc.refused[0]) {
				t.Fatalf("refused %v, want %v", fields, tc.refused)
			}
		})
	}
}
