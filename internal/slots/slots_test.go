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

package slots

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// held is a Run's state before the Run under test asks: what it holds and waits for. A Run
// that waits while slots are free is woken and has them set aside, so the cases that test
// fair share fill the manager first and free slots through the asker's own units ending.
type held struct {
	key     Key
	usage   Usage
	waiting int
}

func key(ns, name string) Key { return Key{Namespace: ns, Name: name} }

func TestAGrantIsTheLeastTheLimitsAndTheFairShareLeave(t *testing.T) {
	limits := Limits{Total: 10, PerNamespace: 6, PerRun: 4}
	cases := []struct {
		name   string
		limits Limits
		before []held
		ask    Key
		usage  Usage
		want   int
		// wait is a part of the message that says which limit binds.
		wait string
	}{
		{"no limits grant without bound", Limits{}, nil, key("a", "r"), Usage{}, -1, ""},
		{"an idle manager grants up to the per-Run limit", limits, nil, key("a", "r"), Usage{}, 4,
			"the Run holds 4 of 4 (--max-step-pods-per-run)"},
		{"a Run at its own limit gets nothing", limits, nil, key("a", "r"), Usage{Active: 4}, 0, "the Run holds 4 of 4"},
		{"the namespace's other Runs count toward its limit", limits,
			[]held{{key("a", "other"), Usage{Active: 4}, 0}}, key("a", "r"), Usage{}, 2,
			"namespace a holds 6 of 6 (--max-step-pods-per-namespace)"},
		{"the total counts every namespace", limits,
			[]held{{key("b", "x"), Usage{Active: 4}, 0}, {key("c", "y"), Usage{Active: 4}, 0}}, key("a", "r"), Usage{}, 2,
			"the manager's Runs hold 10 of 10 (--max-step-pods); a slot that frees goes first"},
		{"a child Run's first unit uses its parent's slot", limits,
			[]held{{key("a", "parent"), Usage{Active: 4}, 0}, {key("b", "x"), Usage{Active: 4}, 0}, {key("c", "y"), Usage{Active: 2}, 0}},
			key("a", "child"), Usage{Inherits: true}, 1, "the manager's Runs hold 10 of 10"},
		{"a child Run holds one slot fewer than it runs", Limits{Total: 10, PerNamespace: 5, PerRun: 4},
			[]held{{key("a", "parent"), Usage{Active: 2}, 0}},
			key("a", "child"), Usage{Inherits: true, Active: 2}, 2, "the Run holds 4 of 4"},
		{"a namespace that holds more yields the free slots to one that holds fewer and waits",
			Limits{Total: 10, PerNamespace: 10, PerRun: 10},
			[]held{{key("a", "big"), Usage{Active: 10}, 50}, {key("b", "small"), Usage{}, 3}}, key("a", "big"), Usage{Active: 8}, 0,
			"the manager's Runs hold 10 of 10 (--max-step-pods)"},
		{"the free slots are shared to even the namespaces out",
			Limits{Total: 10, PerNamespace: 10, PerRun: 10},
			[]held{{key("a", "big"), Usage{Active: 8}, 0}, {key("b", "small"), Usage{Active: 2}, 10}}, key("a", "big"), Usage{Active: 2}, 3,
			"the manager's Runs hold 10 of 10"},
		{"a namespace that waits for no more than it needs leaves the rest",
			Limits{Total: 10, PerNamespace: 10, PerRun: 10},
			[]held{{key("a", "big"), Usage{Active: 10}, 0}, {key("b", "small"), Usage{}, 1}}, key("a", "big"), Usage{Active: 4}, 5,
			"the manager's Runs hold 10 of 10"},
		{"a namespace at its own limit is owed nothing",
			Limits{Total: 10, PerNamespace: 3, PerRun: 10},
			[]held{{key("b", "small"), Usage{Active: 3}, 5}}, key("a", "big"), Usage{}, 3, "namespace a holds 3 of 3"},
		{"a Run at its own limit is owed nothing",
			Limits{Total: 10, PerNamespace: 10, PerRun: 2},
			[]held{{key("b", "small"), Usage{Active: 2}, 5}}, key("a", "big"), Usage{}, 2, "the Run holds 2 of 2"},
		{"equal holdings split the free slots, the asker first", Limits{Total: 5, PerNamespace: 5, PerRun: 5},
			[]held{{key("a", "y"), Usage{Active: 4}, 0}, {key("b", "x"), Usage{Active: 1}, 5}}, key("a", "y"), Usage{Active: 1}, 2,
			"the manager's Runs hold 5 of 5"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := New(tc.limits, nil)
			for _, h := range tc.before {
				a.Acquire(h.key, h.usage)
				a.Settle(h.key, h.usage, h.waiting)
			}
			g := a.Acquire(tc.ask, tc.usage)
			if g.N != tc.want {
				t.Fatalf("granted %d, want %d (%s)", g.N, tc.want, g.Wait)
			}
			if !strings.Contains(g.Wait, tc.wait) {
				t.Fatalf("the wait says %q, want it to contain %q", g.Wait, tc.wait)
			}
		})
	}
}

func TestSlotsGrantedAreHeldUntilSettled(t *testing.T) {
	a := New(Limits{Total: 5}, nil)
	if g := a.Acquire(key("a", "r"), Usage{}); g.N != 5 {
		t.Fatalf("first grant %d, want 5", g.N)
	}
	if g := a.Acquire(key("b", "r"), Usage{}); g.N != 0 {
		t.Fatalf("a grant while the first is reserved: %d, want 0", g.N)
	}
	a.Settle(key("a", "r"), Usage{Active: 2}, 0)
	if g := a.Acquire(key("b", "r"), Usage{}); g.N != 3 {
		t.Fatalf("after the first Run used 2: %d, want 3", g.N)
	}
}

// Passes of many Runs at once never grant more than the total; the Runs granted nothing wait,
// are woken as slots free (and set aside for them), and ask again, as their reconciles do, until
// the total is in use.
func TestConcurrentPassesNeverGrantMoreThanTheTotal(t *testing.T) {
	const total = 7
	var mu sync.Mutex
	var woken []Key
	a := New(Limits{Total: total}, func(ks []Key) {
		mu.Lock()
		woken = append(woken, ks...)
		mu.Unlock()
	})
	var granted atomic.Int32
	pass := func(k Key) {
		g := a.Acquire(k, Usage{})
		use := min(g.N, 1)
		a.Settle(k, Usage{Active: use}, 1-use)
		granted.Add(int32(use))
	}
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Go(func() { pass(key("ns"+string(rune('a'+i%5)), "r"+string(rune('a'+i)))) })
	}
	wg.Wait()
	if n := granted.Load(); n > total {
		t.Fatalf("%d units started at once, more than the total %d", n, total)
	}
	for {
		mu.Lock()
		if len(woken) == 0 {
			mu.Unlock()
			break
		}
		k := woken[0]
		woken = woken[1:]
		mu.Unlock()
		pass(k)
	}
	if n := granted.Load(); n != total {
		t.Fatalf("%d units started once the woken Runs asked again, want exactly the total %d", n, total)
	}
}

func TestFreedSlotsWakeTheWaitingNamespaceThatHoldsFewest(t *testing.T) {
	var woken [][]Key
	a := New(Limits{Total: 4, PerNamespace: 4, PerRun: 4}, func(k []Key) { woken = append(woken, k) })
	big, other, small := key("a", "big"), key("a", "other"), key("b", "small")
	a.Acquire(big, Usage{})
	a.Settle(big, Usage{Active: 4}, 100)
	a.Acquire(other, Usage{})
	a.Settle(other, Usage{}, 3)
	a.Acquire(small, Usage{})
	a.Settle(small, Usage{}, 1)
	if len(woken) != 0 {
		t.Fatalf("woken with no slot free: %v", woken)
	}
	// One of big's units ends: the slot is namespace b's, which holds none.
	a.Acquire(big, Usage{Active: 3})
	a.Settle(big, Usage{Active: 3}, 100)
	if len(woken) != 1 || !slices.Equal(woken[0], []Key{small}) {
		t.Fatalf("woken %v, want only %v", woken, small)
	}
	// Set aside for small: big asks again and gets nothing.
	if g := a.Acquire(big, Usage{Active: 3}); g.N != 0 {
		t.Fatalf("big was granted %d of the slot set aside for small", g.N)
	}
	a.Settle(big, Usage{Active: 3}, 100)
	if g := a.Acquire(small, Usage{}); g.N != 1 {
		t.Fatalf("small was granted %d, want 1", g.N)
	}
	a.Settle(small, Usage{Active: 1}, 0)
	usage := a.Usage()
	want := []NamespaceUsage{{"a", 3, 103}, {"b", 1, 0}}
	if !slices.Equal(usage, want) {
		t.Fatalf("usage %v, want %v", usage, want)
	}
}

func TestAForgottenRunFreesItsSlotsAndRebuildCountsWhatStatusesHold(t *testing.T) {
	var woken []Key
	a := New(Limits{Total: 3}, func(k []Key) { woken = append(woken, k...) })
	a.Rebuild(map[Key]Usage{key("a", "old"): {Active: 3}})
	if g := a.Acquire(key("b", "new"), Usage{}); g.N != 0 {
		t.Fatalf("granted %d while a rebuilt Run holds every slot", g.N)
	}
	a.Settle(key("b", "new"), Usage{}, 2)
	a.Forget(key("a", "old"))
	if !slices.Equal(woken, []Key{key("b", "new")}) {
		t.Fatalf("woken %v, want b/new", woken)
	}
	if g := a.Acquire(key("b", "new"), Usage{}); g.N != 3 {
		t.Fatalf("granted %d after the old Run was forgotten, want 3", g.N)
	}
}

func TestTheWaitMessageDoesNotMoveWithTheCounts(t *testing.T) {
	limits := Limits{Total: 10, PerNamespace: 10, PerRun: 10}
	waitWith := func(busy int) string {
		a := New(limits, nil)
		a.Acquire(key("b", "x"), Usage{})
		a.Settle(key("b", "x"), Usage{Active: busy}, 5)
		a.Acquire(key("a", "r"), Usage{Active: 10 - busy})
		a.Settle(key("a", "r"), Usage{Active: 10 - busy}, 3)
		return a.Acquire(key("a", "r"), Usage{Active: 9 - busy}).Wait
	}
	// One namespace holds 2, then 6: the total, then the fair share binds; a waiting Run's
	// status must not be written again for that.
	if x, y := waitWith(2), waitWith(6); x != y || x == "" {
		t.Fatalf("the wait reads %q, then %q", x, y)
	}
}

// A child Run that inherits its parent's slot holds nothing of its namespace's count; the
// parent settling to nothing must not drop the count the child is still in.
func TestARunThatHoldsNothingKeepsItsNamespaceCounted(t *testing.T) {
	a := New(Limits{Total: 10, PerNamespace: 5}, nil)
	parent, child := key("ns", "writer-1"), key("ns", "writer-1-write")
	a.Acquire(parent, Usage{Active: 1})
	a.Settle(parent, Usage{Active: 1}, 0)
	a.Acquire(child, Usage{Active: 1, Inherits: true})
	a.Settle(child, Usage{Active: 1, Inherits: true}, 0)
	a.Forget(parent) // the namespace now holds nothing, but counts the child
	g := a.Acquire(child, Usage{Active: 1, Inherits: true})
	a.Settle(child, Usage{}, 0)
	if g.N != 5 {
		t.Errorf("granted %d to the child, want 5 (the namespace's limit, nothing else held)", g.N)
	}
	if u := a.Usage(); len(u) != 0 {
		t.Errorf("usage %+v after every Run settled to nothing, want none", u)
	}
}
