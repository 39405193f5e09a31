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

package kubectlergon

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/archive"
	"github.com/ergon-dev/ergon/internal/archiveapi"
)

func TestDiffValues(t *testing.T) {
	cases := []struct {
		name, a, b string
		want       []string
	}{
		{"JSON objects by field", `{"title":"Q3","items":[1,2],"owner":"ann"}`, `{"title":"Q4","items":[1,2,3]}`,
			[]string{`~ .title: "Q3" -> "Q4"`, "+ .items[2]: 3", `- .owner: "ann"`}},
		{"equal JSON has no difference", `{"a":1}`, `{ "a": 1 }`, nil},
		{"text by line", "one\ntwo\nthree", "one\n2\nthree\nfour", []string{"  one", "- two", "+ 2", "  three", "+ four"}},
		{"JSON against text is text", `{"a":1}`, "a=1", []string{`- {"a":1}`, "+ a=1"}},
		{"shared ends stay in place", "a\nb\nc\nd", "a\nx\nc\nd", []string{"  a", "- b", "+ x", "  c", "  d"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := DiffValues(tc.a, tc.b)
			if tc.name == "JSON objects by field" {
				slices.Sort(got)
				slices.Sort(tc.want)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

func TestDiffRuns(t *testing.T) {
	at := func(s int) *metav1.Time { return &metav1.Time{Time: time.Unix(1_700_000_000+int64(s), 0)} }
	run := func(name, mode, draft string, tokens int64) *ergonv1alpha1.Run {
		return &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: ergonv1alpha1.RunSpec{SceneRef: corev1.LocalObjectReference{Name: "report"}, Params: map[string]string{"mode": mode, "team": "a"}},
			Status: ergonv1alpha1.RunStatus{Phase: ergonv1alpha1.RunSucceeded, StartedAt: at(0), FinishedAt: at(90), Steps: []ergonv1alpha1.StepStatus{
				{Name: "fetch", Phase: ergonv1alpha1.StepSucceeded, StartedAt: at(0), FinishedAt: at(10), Output: &ergonv1alpha1.OutputValue{Preview: "data"}},
				{Name: "draft", Phase: ergonv1alpha1.StepSucceeded, StartedAt: at(10), FinishedAt: at(80),
					Usage: &ergonv1alpha1.AgentUsage{TotalTokens: tokens}, Output: &ergonv1alpha1.OutputValue{Preview: draft}},
				{Name: "approve", Phase: ergonv1alpha1.StepSucceeded, Decision: "approved"},
			}}}
	}
	answer := func(run, who, values string) ergonv1alpha1.Gate {
		return ergonv1alpha1.Gate{ObjectMeta: metav1.ObjectMeta{Name: run + "-approve"},
			Spec:   ergonv1alpha1.GateSpec{Step: "approve", Decision: &ergonv1alpha1.GateDecision{Option: "approve"}},
			Status: ergonv1alpha1.GateStatus{Option: "approve", DecidedBy: who, Values: &apiextensionsv1.JSON{Raw: []byte(values)}}}
	}
	a := CompareSide{Run: run("r1", "fast", "line one\nline two", 120), Gates: []ergonv1alpha1.Gate{answer("r1", "ann", `{"tone":"dry"}`)}}
	b := CompareSide{Run: run("r2", "slow", "line one\nline 2", 150), Gates: []ergonv1alpha1.Gate{answer("r2", "bob", `{"tone":"warm"}`)},
		Archived: true}
	a.Run.Status.Steps[1].Usage.Cost = "0.25"
	a.Run.Status.Steps = append(a.Run.Status.Steps, ergonv1alpha1.StepStatus{Name: "polish", Phase: ergonv1alpha1.StepSucceeded,
		Usage: &ergonv1alpha1.AgentUsage{TotalTokens: 10, Cost: "0.5"}})
	c := Compare(a, b)
	if c.A.Usage.TotalTokens != 130 || c.A.Usage.Cost != "0.75" {
		t.Errorf("run A's usage adds up to %+v, want 130 tokens costing 0.75", c.A.Usage)
	}
	out := &strings.Builder{}
	if err := PrintComparison(out, c); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{`param mode  "fast"`, `"slow"`, "130 tokens $0.75", "150 tokens", "decision approved",
		"--- r1/draft", "+++ r2/draft", "- line two", "+ line 2", "1m10s", "r2 (archived)",
		`- r1: approve {"tone":"dry"} by ann`, `+ r2: approve {"tone":"warm"} by bob`} {
		if !strings.Contains(text, want) {
			t.Errorf("the diff lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "param team") || strings.Contains(text, "r1/fetch") {
		t.Errorf("the diff shows what is equal:\n%s", text)
	}
}

func TestPrintHistory(t *testing.T) {
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	list := &archiveapi.ArchivedRunList{Items: []archiveapi.ArchivedRun{{Summary: archive.Summary{
		Namespace: "team-a", Name: "report-1", Scene: "report", Phase: "Failed", StartedBy: "alice",
		CreatedAt: now.Add(-3 * time.Hour), FinishedAt: now.Add(-3*time.Hour + 90*time.Second)}}}}
	out := &strings.Builder{}
	printHistory(out, list, true, now)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "NAMESPACE") {
		t.Fatalf("want a header with NAMESPACE and one row:\n%s", out)
	}
	for _, want := range []string{"team-a", "report-1", "report", "Failed", "alice", "<none>", "1m30s", "2h ago"} {
		if !strings.Contains(lines[1], want) {
			t.Errorf("the row lacks %q: %s", want, lines[1])
		}
	}
	out.Reset()
	printHistory(out, &archiveapi.ArchivedRunList{}, false, now)
	if out.String() != "No archived Runs found.\n" {
		t.Errorf("an empty page says %q", out)
	}
}

// Two long texts that differ everywhere are shown as removed, then added, without the
// quadratic table a longest common subsequence of them would need.
func TestDiffLinesOfLongTextsIsBounded(t *testing.T) {
	var a, b []string
	for i := range 3000 {
		a = append(a, fmt.Sprintf("a%d", i))
		b = append(b, fmt.Sprintf("b%d", i))
	}
	a = append([]string{"same start"}, append(a, "same end")...)
	b = append([]string{"same start"}, append(b, "same end")...)
	got := diffLines(a, b)
	if len(got) != 6002 || got[0] != "  same start" || got[1] != "- a0" || got[3001] != "+ b0" || got[6001] != "  same end" {
		t.Fatalf("got %d lines: %q ... %q", len(got), got[:3], got[len(got)-2:])
	}
}

// A comparison reads whole values up to its budget, and diffs the rest by their previews.
func TestComparisonsReadABoundedAmount(t *testing.T) {
	run := func(name, text string) *ergonv1alpha1.Run {
		r := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: name}}
		for i := range 40 {
			r.Status.Steps = append(r.Status.Steps, ergonv1alpha1.StepStatus{Name: fmt.Sprintf("s%02d", i), Phase: ergonv1alpha1.StepSucceeded,
				Output: &ergonv1alpha1.OutputValue{Preview: text[:8], Size: MaxDiffBytes, SHA256: name,
					Ref: &ergonv1alpha1.OutputRef{ConfigMap: "cm", Key: fmt.Sprint(i)}}})
		}
		return r
	}
	read := 0
	value := func(_ string, v *ergonv1alpha1.OutputValue) ([]byte, error) {
		read += int(v.Size)
		return []byte(strings.Repeat("x", int(v.Size))), nil
	}
	c := Compare(CompareSide{Run: run("a", "aaaaaaaaa"), Value: value}, CompareSide{Run: run("b", "bbbbbbbbb"), Value: value})
	if read > MaxCompareBytes {
		t.Errorf("a comparison read %d bytes, more than %d", read, MaxCompareBytes)
	}
	if !c.Steps[len(c.Steps)-1].PreviewsOnly || c.Steps[0].PreviewsOnly {
		t.Errorf("the first steps are diffed whole and the last by previews: %v, %v", c.Steps[0].PreviewsOnly, c.Steps[len(c.Steps)-1].PreviewsOnly)
	}
}
