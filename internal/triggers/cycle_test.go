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
	"slices"
	"testing"
)

func TestFindCycle(t *testing.T) {
	ab, bc, ca := Chain{"t1", "a", "b"}, Chain{"t2", "b", "c"}, Chain{"t3", "c", "a"}
	cases := []struct {
		name   string
		first  Chain
		others []Chain
		want   []string // the Triggers of the cycle, in order; nil for none
	}{
		{"no other Triggers", ab, nil, nil},
		{"a chain that ends", ab, []Chain{bc}, nil},
		{"a self-loop", Chain{"t", "a", "a"}, nil, []string{"t"}},
		{"two Triggers back and forth", ab, []Chain{{"t2", "b", "a"}}, []string{"t1", "t2"}},
		{"three Triggers in a ring", ca, []Chain{ab, bc}, []string{"t3", "t1", "t2"}},
		{"the ring found from any member", ab, []Chain{bc, ca}, []string{"t1", "t2", "t3"}},
		{"the shortest of two cycles is named", ab, []Chain{bc, ca, {"t0", "b", "a"}}, []string{"t1", "t0"}},
		{"a branch that dead-ends is not a cycle", ab, []Chain{{"t2", "b", "x"}, {"t3", "x", "y"}}, nil},
		{"a cycle elsewhere is not this Trigger's", ab, []Chain{{"t2", "x", "y"}, {"t3", "y", "x"}}, nil},
		{"the Trigger's own old version is not another edge", ab, []Chain{{"t1", "b", "a"}}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, c := range FindCycle(tc.first, tc.others) {
				got = append(got, c.Trigger)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("cycle %v, want %v", got, tc.want)
			}
		})
	}
	t.Run("the description names every Trigger and Scene in order", func(t *testing.T) {
		got := DescribeCycle(FindCycle(ca, []Chain{ab, bc}))
		want := "Trigger t3 (Scene c -> a), then Trigger t1 (Scene a -> b), then Trigger t2 (Scene b -> c)"
		if got != want {
			t.Fatalf("got %q\nwant %q", got, want)
		}
	})
}
