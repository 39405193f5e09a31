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

package wslease

import (
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/naming"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func claim(pod string, since time.Time) Claim {
	return Claim{Pod: pod, Run: "run-" + pod, RunUID: "uid-" + pod, Since: since}
}

func pods(cs []Claim) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Pod)
	}
	return out
}

func TestTake(t *testing.T) {
	old := t0.Add(-time.Minute)
	allLive := func(Claim) bool { return true }
	liveOnly := func(names ...string) func(Claim) bool {
		return func(c Claim) bool { return slices.Contains(names, c.Pod) }
	}
	for _, tc := range []struct {
		name      string
		state     State
		me        string
		live      func(Claim) bool
		wantTook  bool
		wantAhead int
		wantHold  string
		wantQueue []string
	}{
		{name: "a free lease with nobody in line is taken", me: "a", live: allLive,
			wantTook: true, wantHold: "a"},
		{name: "a held lease puts the asker at the end of the line",
			state: State{Holder: new(claim("h", old)), Queue: []Claim{claim("b", old)}}, me: "a", live: allLive,
			wantAhead: 2, wantHold: "h", wantQueue: []string{"b", "a"}},
		{name: "asking again keeps one's place",
			state: State{Holder: new(claim("h", old)), Queue: []Claim{claim("a", old), claim("b", old)}}, me: "a", live: allLive,
			wantAhead: 1, wantHold: "h", wantQueue: []string{"a", "b"}},
		{name: "the holder asking again still holds it",
			state: State{Holder: new(claim("a", old))}, me: "a", live: liveOnly(),
			wantTook: true, wantHold: "a"},
		{name: "a free lease goes to the first in line, not to a later asker",
			state: State{Queue: []Claim{claim("b", old), claim("a", old)}}, me: "a", live: allLive,
			wantAhead: 1, wantQueue: []string{"b", "a"}},
		{name: "the first in line takes a free lease and leaves the line",
			state: State{Queue: []Claim{claim("a", old), claim("b", old)}}, me: "a", live: allLive,
			wantTook: true, wantHold: "a", wantQueue: []string{"b"}},
		{name: "a holder whose Run no longer holds it is dropped",
			state: State{Holder: new(claim("h", old))}, me: "a", live: liveOnly("a"),
			wantTook: true, wantHold: "a"},
		{name: "a holder that took the lease within the grace period is kept, whatever the cache says",
			state: State{Holder: new(claim("h", t0.Add(-time.Second)))}, me: "a", live: liveOnly(),
			wantAhead: 1, wantHold: "h", wantQueue: []string{"a"}},
		{name: "dead claims ahead in line are dropped, live ones keep their order",
			state: State{Queue: []Claim{claim("dead", old), claim("b", old), claim("gone", old), claim("a", old)}},
			me:    "a", live: liveOnly("a", "b"),
			wantAhead: 1, wantQueue: []string{"b", "a"}},
		{name: "a claim listed twice counts once",
			state: State{Holder: new(claim("h", old)), Queue: []Claim{claim("b", old), claim("b", old), claim("h", old)}},
			me:    "a", live: allLive,
			wantAhead: 2, wantHold: "h", wantQueue: []string{"b", "a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next, took, ahead := Take(tc.state, claim(tc.me, t0), t0, tc.live)
			if took != tc.wantTook || ahead != tc.wantAhead {
				t.Errorf("took=%v ahead=%d, want took=%v ahead=%d", took, ahead, tc.wantTook, tc.wantAhead)
			}
			if got := next.holderPod(); got != tc.wantHold {
				t.Errorf("holder = %q, want %q", got, tc.wantHold)
			}
			if got := pods(next.Queue); !slices.Equal(got, tc.wantQueue) {
				t.Errorf("queue = %v, want %v", got, tc.wantQueue)
			}
			if took && next.Holder.Pod == tc.me && tc.state.holderPod() != tc.me && !next.Holder.Since.Equal(t0) {
				t.Errorf("a new holder's since is %v, want now", next.Holder.Since)
			}
		})
	}
}

func TestStepsStartInTheOrderTheyAsked(t *testing.T) {
	var s State
	live := func(Claim) bool { return true }
	var took bool
	s, took, _ = Take(s, claim("first", t0), t0, live)
	if !took {
		t.Fatal("the first asker did not get a free lease")
	}
	now := t0
	for _, p := range []string{"second", "third", "fourth"} {
		now = now.Add(time.Second)
		s, _, _ = Take(s, claim(p, now), now, live)
	}
	// They keep asking, in another order; the line does not change.
	for _, p := range []string{"fourth", "third", "second"} {
		s, took, _ = Take(s, claim(p, now), now, live)
		if took {
			t.Fatalf("%s took a held lease", p)
		}
	}
	var order []string
	for range 4 {
		order = append(order, s.holderPod())
		s, _ = Release(s, s.holderPod())
		for _, p := range []string{"fourth", "third", "second"} {
			if s, took, _ = Take(s, claim(p, now), now, live); took {
				break
			}
		}
	}
	if want := []string{"first", "second", "third", "fourth"}; !slices.Equal(order, want) {
		t.Errorf("held in order %v, want %v", order, want)
	}
}

func TestRelease(t *testing.T) {
	s := State{Holder: new(claim("h", t0)), Queue: []Claim{claim("a", t0), claim("b", t0)}}
	if next, changed := Release(s, "h"); !changed || next.Holder != nil || !slices.Equal(pods(next.Queue), []string{"a", "b"}) {
		t.Errorf("releasing the holder: %+v, %v", next, changed)
	}
	if next, changed := Release(s, "a"); !changed || next.holderPod() != "h" || !slices.Equal(pods(next.Queue), []string{"b"}) {
		t.Errorf("leaving the line: %+v, %v", next, changed)
	}
	if _, changed := Release(s, "x"); changed {
		t.Error("releasing what one does not hold changed the lease")
	}
}

func TestHolds(t *testing.T) {
	run := func(phase ergonv1alpha1.RunPhase, steps ...ergonv1alpha1.StepStatus) *ergonv1alpha1.Run {
		r := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: "r"}}
		r.Status.Phase, r.Status.Steps = phase, steps
		return r
	}
	pod1 := naming.StepPodName("r", "s", 1)
	pod2 := naming.StepPodName("r", "s", 2)
	for _, tc := range []struct {
		name string
		run  *ergonv1alpha1.Run
		pod  string
		want bool
	}{
		{"a running step holds its pod's claim", run(ergonv1alpha1.RunRunning,
			ergonv1alpha1.StepStatus{Name: "s", Phase: ergonv1alpha1.StepRunning, PodName: pod1, Attempts: 1}), pod1, true},
		{"a step whose pod is pending holds it", run(ergonv1alpha1.RunRunning,
			ergonv1alpha1.StepStatus{Name: "s", Phase: ergonv1alpha1.StepPending, PodName: pod1, Attempts: 1}), pod1, true},
		{"a step waiting for its first attempt holds that attempt's claim", run(ergonv1alpha1.RunRunning,
			ergonv1alpha1.StepStatus{Name: "s", Phase: ergonv1alpha1.StepWaiting}), pod1, true},
		{"a step waiting to retry holds the next attempt's claim", run(ergonv1alpha1.RunRunning,
			ergonv1alpha1.StepStatus{Name: "s", Phase: ergonv1alpha1.StepWaiting, PodName: pod1, Attempts: 1}), pod2, true},
		{"a finished step does not", run(ergonv1alpha1.RunRunning,
			ergonv1alpha1.StepStatus{Name: "s", Phase: ergonv1alpha1.StepSucceeded, PodName: pod1, Attempts: 1}), pod1, false},
		{"a step retrying after its pod failed does not", run(ergonv1alpha1.RunRunning,
			ergonv1alpha1.StepStatus{Name: "s", Phase: ergonv1alpha1.StepRetrying, PodName: pod1, Attempts: 1}), pod1, false},
		{"a finished Run does not", run(ergonv1alpha1.RunCancelled,
			ergonv1alpha1.StepStatus{Name: "s", Phase: ergonv1alpha1.StepRunning, PodName: pod1, Attempts: 1}), pod1, false},
		{"a Run that is gone does not", nil, pod1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Holds(tc.run, tc.pod); got != tc.want {
				t.Errorf("Holds = %v, want %v", got, tc.want)
			}
		})
	}
}
