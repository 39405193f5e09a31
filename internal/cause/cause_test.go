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

package cause

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

var t0 = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

func runWith(name string, annotations map[string]string) *ergonv1alpha1.Run {
	return &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name),
		Annotations: annotations}}
}

func TestEveryRunHasACause(t *testing.T) {
	cases := []struct {
		name string
		run  *ergonv1alpha1.Run
		want Cause
	}{
		{name: "a Run a person created is its own root, at depth 0", run: runWith("mine", nil),
			want: Cause{Root: "mine/uid-mine", Depth: 0}},
		{name: "a Run the manager created carries its root and depth", run: runWith("child", map[string]string{
			ergonv1alpha1.AnnotationCauseRoot: "mine/uid-mine", ergonv1alpha1.AnnotationDepth: "2"}),
			want: Cause{Root: "mine/uid-mine", Depth: 2}},
		{name: "a child Run made before roots were recorded is its own root at its depth", run: runWith("old", map[string]string{
			ergonv1alpha1.AnnotationDepth: "3"}), want: Cause{Root: "old/uid-old", Depth: 3}},
		{name: "a depth that does not parse is 0", run: runWith("odd", map[string]string{ergonv1alpha1.AnnotationDepth: "x"}),
			want: Cause{Root: "odd/uid-odd"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Of(tc.run); got != tc.want {
				t.Fatalf("Of = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestARunCausedByAnotherHasItsRootOneDeeper(t *testing.T) {
	parent := runWith("p", map[string]string{ergonv1alpha1.AnnotationCauseRoot: "r/uid-r", ergonv1alpha1.AnnotationDepth: "4"})
	child := runWith("c", nil)
	Of(parent).Next().Stamp(child)
	if got := Of(child); got != (Cause{Root: "r/uid-r", Depth: 5}) {
		t.Fatalf("child's cause = %+v", got)
	}
}

func TestTheLimitsRefuseAtTheirValueAndNameTheirFlag(t *testing.T) {
	l := Limits{MaxDepth: 3, MaxCaused: 5, MaxChildren: 2, MaxPerMinute: 4}
	at := Cause{Root: "root/uid", Depth: 3}
	cases := []struct {
		name       string
		refusal    *Refusal
		wantReason string
		wantIn     []string
	}{
		{name: "a child one below every limit", refusal: l.Child(Cause{Root: "root/uid", Depth: 1}, Usage{Caused: 4, Children: 1})},
		{name: "a child at the depth limit", refusal: l.Child(at, Usage{}), wantReason: ergonv1alpha1.ReasonDepthExceeded,
			wantIn: []string{"nest deeper than 3", "Run root", FlagMaxDepth, ValueMaxDepth}},
		{name: "a child at the child Runs limit", refusal: l.Child(Cause{Root: "r"}, Usage{Children: 2}),
			wantReason: ergonv1alpha1.ReasonChildRunsExceeded, wantIn: []string{"(2)", FlagMaxChildren, ValueMaxChildren}},
		{name: "a child at the caused Runs limit", refusal: l.Child(Cause{Root: "r"}, Usage{Caused: 5}),
			wantReason: ergonv1alpha1.ReasonCausedRunsExceeded, wantIn: []string{"(5)", FlagMaxCaused, ValueMaxCaused}},
		{name: "a chained Run is not held to the child Runs limit", refusal: l.Chained(Cause{Root: "r", Depth: 2}, Usage{Children: 9})},
		{name: "a chained Run at the depth limit", refusal: l.Chained(at, Usage{}), wantReason: ergonv1alpha1.ReasonDepthExceeded},
		{name: "a chained Run at the caused Runs limit", refusal: l.Chained(Cause{Root: "r"}, Usage{Caused: 6}),
			wantReason: ergonv1alpha1.ReasonCausedRunsExceeded},
		{name: "a Trigger below its rate", refusal: l.Rate("t", 3)},
		{name: "a Trigger at its rate", refusal: l.Rate("t", 4), wantReason: ergonv1alpha1.ReasonRateLimited,
			wantIn: []string{"Trigger t", "(4)", FlagMaxPerMinute, ValueMaxPerMinute}},
		{name: "zero limits take the defaults", refusal: Limits{}.Child(Cause{Depth: DefaultMaxDepth - 1},
			Usage{Caused: DefaultMaxCaused - 1, Children: DefaultMaxChildren - 1})},
		{name: "the default depth refuses past it", refusal: Limits{}.Child(Cause{Depth: DefaultMaxDepth}, Usage{}),
			wantReason: ergonv1alpha1.ReasonDepthExceeded},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.wantReason == "" {
				if tc.refusal != nil {
					t.Fatalf("refused: %+v", tc.refusal)
				}
				return
			}
			if tc.refusal == nil || tc.refusal.Reason != tc.wantReason {
				t.Fatalf("refusal = %+v, want reason %s", tc.refusal, tc.wantReason)
			}
			for _, want := range tc.wantIn {
				if !strings.Contains(tc.refusal.Message, want) {
					t.Errorf("message %q does not name %q", tc.refusal.Message, want)
				}
			}
		})
	}
}

func TestTheLedgerCountsWhatTheCacheHasNotSeenYetForAMinute(t *testing.T) {
	var l Ledger
	l.Record("k", "a", t0)
	l.Record("k", "b", t0.Add(10*time.Second))
	if n := l.Count("k", nil, t0.Add(20*time.Second)); n != 2 {
		t.Fatalf("two recorded, none seen: %d", n)
	}
	if n := l.Count("k", []string{"a", "c"}, t0.Add(20*time.Second)); n != 3 {
		t.Fatalf("a seen and recorded counts once, with b recorded and c seen: %d", n)
	}
	if n := l.Count("k", nil, t0.Add(65*time.Second)); n != 1 {
		t.Fatalf("a is forgotten a minute after it was recorded: %d", n)
	}
	if n := l.Count("other", []string{"x"}, t0); n != 1 {
		t.Fatalf("keys are apart: %d", n)
	}
	l.Forget("k", "b")
	if n := l.Count("k", nil, t0.Add(20*time.Second)); n != 0 {
		t.Fatalf("forgotten: %d", n)
	}
}

func TestALedgerReservationIsAtomicAtTheLimit(t *testing.T) {
	var l Ledger
	for i, name := range []string{"a", "b"} {
		if n, ok := l.Reserve("t", []string{"seen"}, name, 3, t0); !ok || n != i+1 {
			t.Fatalf("reserve %s: %d %v", name, n, ok)
		}
	}
	if n, ok := l.Reserve("t", []string{"seen"}, "c", 3, t0); ok || n != 3 {
		t.Fatalf("the fourth place: %d %v", n, ok)
	}
}

func TestOnlyRunsOfTheLastMinuteCountTowardARate(t *testing.T) {
	at := func(name string, created time.Time) *ergonv1alpha1.Run {
		return &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(created)}}
	}
	names, frees := StartedWithin([]*ergonv1alpha1.Run{
		at("old", t0.Add(-2*time.Minute)), at("edge", t0.Add(-time.Minute)), at("recent", t0.Add(-20*time.Second)),
		at("now", t0), at("far-future", t0.Add(time.Hour)),
	}, t0)
	if strings.Join(names, ",") != "recent,now" || !frees.Equal(t0.Add(40*time.Second)) {
		t.Fatalf("names %v, frees %s", names, frees)
	}
}
