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

// Package slots shares the manager's step pod slots between Runs and namespaces. A slot is
// what one running unit holds: a step's pod, or a child Run a scene step started. Three
// limits bound them: in total (per manager), per namespace and per Run. When slots are
// scarce, the namespaces that wait are served by max-min fairness: a free slot goes to the
// waiting namespace that holds the fewest, so a tenant with thousands of queued units cannot
// starve a small Run in another namespace.
//
// The Allocator is pure bookkeeping with no client: the Run controller tells it what each
// Run holds (Acquire, before planning) and what it started and still waits for (Settle,
// after), and it answers how many units a Run may start now. Slots granted by Acquire are
// reserved until Settle, so concurrent reconciles never grant the same slot twice. When slots
// free, it wakes the waiting Runs that the free slots belong to, in fair order.
package slots

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sync"
)

// Flags that set the limits, named in the messages of work that waits.
const (
	FlagTotal        = "--max-step-pods"
	FlagPerNamespace = "--max-step-pods-per-namespace"
	FlagPerRun       = "--max-step-pods-per-run"
)

// Limits bound the slots; zero means no limit.
type Limits struct {
	// Total bounds the slots of all the Runs this manager (its shard) reconciles.
	Total int
	// PerNamespace bounds the slots of the Runs of one namespace together.
	PerNamespace int
	// PerRun bounds the units of one Run running at once (its child Runs hold their own).
	PerRun int
}

// Unlimited reports whether no limit is set.
func (l Limits) Unlimited() bool {
	return l.Total <= 0 && l.PerNamespace <= 0 && l.PerRun <= 0
}

// Key names a Run.
type Key struct{ Namespace, Name string }

// String is namespace/name.
func (k Key) String() string { return k.Namespace + "/" + k.Name }

// Usage is what one Run holds.
type Usage struct {
	// Active is the Run's running units: its step pods and the child Runs its scene steps
	// started.
	Active int
	// Inherits is set for a child Run: its parent holds a slot for it, which the child's
	// first unit uses, so that nested Runs do not hold a slot per level (a parent waiting on
	// its child would otherwise hold the slot the child needs).
	Inherits bool
}

// held is how many slots the Run holds toward the namespace and total limits.
func (u Usage) held() int {
	if u.Inherits && u.Active > 0 {
		return u.Active - 1
	}
	return u.Active
}

// Grant is the answer to Acquire.
type Grant struct {
	// N is how many more units the Run may start now; negative means no limit applies.
	N int
	// Wait says, once N units are started, which limit keeps the rest waiting: its value,
	// what holds it and the flag that raises it. Empty when N is unlimited.
	Wait string
}

// entry is what the allocator knows of one Run.
type entry struct {
	usage Usage
	// reserved are slots granted by Acquire that Settle has not accounted for yet.
	reserved int
	// waiting are the units the Run's last pass could not start for want of a slot;
	// since orders waiting Runs first come, first served within a namespace.
	waiting int
	since   uint64
	// woken is set when the Run was woken for a free slot and has not asked for it yet;
	// claim is how many slots it may then take, set aside for it meanwhile.
	woken bool
	claim int
	// inPass is set from Acquire to Settle, while the Run's pass plans with its grant.
	inPass bool
}

// held is what an entry counts against the limits: the units it holds, the slots reserved
// for its pass and the slots set aside for it when woken.
func (e *entry) held() int { return e.usage.held() + e.reserved + e.claim }

// namespaceCount is what the Runs of one namespace hold and wait for together, and how many
// Runs it counts: a Run may hold nothing and still be counted (a child Run that inherits its
// parent's slot, a Run granted nothing in its pass), so the count is dropped only with its
// last Run.
type namespaceCount struct {
	held, waiting, runs int
}

// Allocator hands out step pod slots. It is safe for concurrent use.
type Allocator struct {
	limits Limits
	// wake is called, outside the lock, with the Runs to reconcile again because slots they
	// wait for are free.
	wake func([]Key)

	mu         sync.Mutex
	runs       map[Key]*entry
	namespaces map[string]*namespaceCount
	totalHeld  int
	seq        uint64
}

// New makes an Allocator for limits; wake is told which waiting Runs to reconcile again
// when slots free, and may be nil.
func New(limits Limits, wake func([]Key)) *Allocator {
	return &Allocator{limits: limits, wake: wake, runs: map[Key]*entry{}, namespaces: map[string]*namespaceCount{}}
}

// Limits are the limits in effect.
func (a *Allocator) Limits() Limits { return a.limits }

// Rebuild records what Runs hold, as read from their status: after a restart, before the first
// Acquire, so that the counts stay right across restarts. A Run already known keeps what it
// told the allocator since.
func (a *Allocator) Rebuild(usages map[Key]Usage) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for k, u := range usages {
		if _, known := a.runs[k]; known {
			continue
		}
		a.put(k, &entry{usage: u})
	}
}

// Acquire records what a Run holds now (from the status it is planned from) and reserves the
// slots it may use for units it starts in this pass, until Settle.
func (a *Allocator) Acquire(k Key, u Usage) Grant {
	if a.limits.Unlimited() {
		return Grant{N: -1}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	e := a.take(k)
	e.usage, e.reserved, e.woken, e.claim, e.inPass = u, 0, false, 0, true
	g := a.grant(k, e)
	e.reserved = max(g.N, 0)
	a.put(k, e)
	return g
}

// Settle records what a Run holds after its pass (the units it started included) and how many
// units still wait for a slot; the slots reserved and not used return to the pool, and Runs
// that wait for them are woken. A Run that finished holds nothing: Settle with a zero Usage
// and no waiting forgets it.
func (a *Allocator) Settle(k Key, u Usage, waiting int) {
	if a.limits.Unlimited() {
		return
	}
	if woken := a.settle(k, u, waiting); len(woken) > 0 && a.wake != nil {
		a.wake(woken) // outside the lock
	}
}

// settle is Settle's work under the lock, released however it ends, and returns the Runs to
// wake.
func (a *Allocator) settle(k Key, u Usage, waiting int) []Key {
	a.mu.Lock()
	defer a.mu.Unlock()
	e := a.take(k)
	e.usage, e.reserved, e.woken, e.claim, e.inPass = u, 0, false, 0, false
	switch {
	case waiting <= 0:
		e.waiting, e.since = 0, 0
	case e.waiting == 0:
		a.seq++
		e.waiting, e.since = waiting, a.seq
	default:
		e.waiting = waiting
	}
	if u.Active > 0 || e.waiting > 0 {
		a.put(k, e)
	}
	return a.wakeable()
}

// Forget drops a Run that finished or is gone; its slots return to the pool.
func (a *Allocator) Forget(k Key) {
	a.Settle(k, Usage{}, 0)
}

// take removes a Run's entry from the counts, to be changed and put back.
func (a *Allocator) take(k Key) *entry {
	e, ok := a.runs[k]
	if !ok {
		return &entry{}
	}
	n := a.namespaces[k.Namespace]
	n.held -= e.held()
	n.waiting -= e.waiting
	n.runs--
	a.totalHeld -= e.held()
	delete(a.runs, k)
	if n.runs == 0 {
		delete(a.namespaces, k.Namespace)
	}
	return e
}

// put adds a Run's entry to the counts.
func (a *Allocator) put(k Key, e *entry) {
	n := a.namespaces[k.Namespace]
	if n == nil {
		n = &namespaceCount{}
		a.namespaces[k.Namespace] = n
	}
	n.held += e.held()
	n.waiting += e.waiting
	n.runs++
	a.totalHeld += e.held()
	a.runs[k] = e
}

// The limits a grant may stop at, in the order they are named when equal.
const (
	byRun = iota
	byNamespace
	byTotal
	byFairShare
)

// unbounded stands for a limit that is not set.
const unbounded = math.MaxInt32

// room is what a limit leaves: unbounded when it is not set.
func room(limit, used int) int {
	if limit <= 0 {
		return unbounded
	}
	return max(limit-used, 0)
}

// grant decides how many units a Run (taken out of the counts) may start: the least that the
// per-Run, per-namespace and total limits leave, and, when other namespaces wait, no more than
// its namespace's max-min fair share of the free slots.
func (a *Allocator) grant(k Key, e *entry) Grant {
	l := a.limits
	// A child Run's first unit uses the slot its parent holds for it.
	inherited := 0
	if e.usage.Inherits && e.usage.Active == 0 {
		inherited = 1
	}
	nsHeld := e.usage.held()
	if n := a.namespaces[k.Namespace]; n != nil {
		nsHeld += n.held
	}
	total := a.totalHeld + e.usage.held()
	rooms := []int{room(l.PerRun, e.usage.Active), room(l.PerNamespace, nsHeld) + inherited, room(l.Total, total) + inherited}
	limit := byRun
	for i, r := range rooms {
		if r < rooms[limit] {
			limit = i
		}
	}
	n := rooms[limit]
	if l.Total > 0 && n > inherited {
		if share := a.fairShare(k.Namespace, nsHeld, n-inherited, room(l.Total, total)) + inherited; share < n {
			limit, n = byFairShare, share
		}
	}
	if n >= unbounded {
		return Grant{N: -1}
	}
	return Grant{N: n, Wait: waitMessage(limit, k.Namespace, l)}
}

// waitMessage says which limit keeps a Run's further units waiting once its grant is used,
// with the limit's value and flag. It names no count that moves while the Run waits: the
// message lands in the Run's status, and one that changed with every unit ending anywhere
// would write the status of every waiting Run again and again. The total and the fair share
// read alike for the same reason: which of the two binds changes from one moment to the next.
func waitMessage(limit int, namespace string, l Limits) string {
	switch limit {
	case byRun:
		return fmt.Sprintf("the Run holds %d of %d (%s)", l.PerRun, l.PerRun, FlagPerRun)
	case byNamespace:
		return fmt.Sprintf("namespace %s holds %d of %d (%s)", namespace, l.PerNamespace, l.PerNamespace, FlagPerNamespace)
	}
	return fmt.Sprintf("the manager's Runs hold %d of %d (%s); a slot that frees goes first to the waiting namespace "+
		"that holds the fewest", l.Total, l.Total, FlagTotal)
}

// fairShare is how many of free slots the namespace ns, holding held and wanting demand, gets
// when they are shared by max-min fairness with the other namespaces that wait: slots go one
// at a time to the namespace that holds the fewest, ns first among equals (it asks now).
func (a *Allocator) fairShare(ns string, held, demand, free int) int {
	type claimant struct{ held, demand int }
	var others []claimant
	for name, d := range a.demands(ns) {
		n := a.namespaces[name]
		if d = min(d, room(a.limits.PerNamespace, n.held)); d > 0 {
			others = append(others, claimant{n.held, d})
		}
	}
	if len(others) == 0 || free <= 0 {
		return min(demand, free)
	}
	all := append(others, claimant{held, demand})
	// given is what a claimant gets when every holding is raised toward level, within its
	// demand; the highest level whose shares all fit in free is found by bisection.
	given := func(c claimant, level int) int { return min(max(level-c.held, 0), c.demand) }
	sum := func(level int) int {
		s := 0
		for _, c := range all {
			s += given(c, level)
		}
		return s
	}
	lo, hi := 0, 0
	for _, c := range all {
		hi = max(hi, c.held+c.demand)
	}
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if sum(mid) <= free {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	mine := given(all[len(all)-1], lo)
	// What is left is less than one more level for all; ns, first among equals, takes one.
	if sum(lo) < free && given(all[len(all)-1], lo+1) > mine {
		mine++
	}
	return mine
}

// demands are how many slots the waiting Runs of each namespace but except could use now:
// each Run's waiting units not already set aside for it, within what the per-Run limit leaves.
func (a *Allocator) demands(except string) map[string]int {
	others := false
	for name, n := range a.namespaces {
		if name != except && n.waiting > 0 {
			others = true
			break
		}
	}
	if !others {
		return nil
	}
	d := map[string]int{}
	for k, e := range a.runs {
		if k.Namespace != except && e.waiting > e.claim {
			d[k.Namespace] += min(e.waiting-e.claim, room(a.limits.PerRun, e.usage.Active+e.reserved+e.claim))
		}
	}
	return d
}

// wakeable picks the waiting Runs to wake for the free slots, in fair order: Runs of the
// namespaces that hold the fewest first, first come first within one. A woken Run has slots
// set aside for it until it asks (Acquire), so that the same slots wake no one else. A Run in
// the middle of its pass is not woken: its Settle tells what it still waits for.
func (a *Allocator) wakeable() []Key {
	free := room(a.limits.Total, a.totalHeld)
	if free == 0 {
		return nil
	}
	var waiting []Key
	for k, e := range a.runs {
		if e.waiting > 0 && !e.woken && !e.inPass {
			waiting = append(waiting, k)
		}
	}
	slices.SortFunc(waiting, func(x, y Key) int {
		if d := a.namespaces[x.Namespace].held - a.namespaces[y.Namespace].held; d != 0 {
			return d
		}
		return cmp.Compare(a.runs[x].since, a.runs[y].since)
	})
	var woken []Key
	for _, k := range waiting {
		if free == 0 {
			break
		}
		e := a.runs[k]
		claim := min(e.waiting, room(a.limits.PerRun, e.usage.Active), room(a.limits.PerNamespace, a.namespaces[k.Namespace].held), free)
		if claim <= 0 {
			continue
		}
		a.take(k)
		e.woken, e.claim = true, claim
		a.put(k, e)
		if free < unbounded {
			free -= claim
		}
		woken = append(woken, k)
	}
	return woken
}

// NamespaceUsage is what one namespace's Runs hold and wait for, for metrics.
type NamespaceUsage struct {
	Namespace string
	// Held are the slots its Runs hold (and those reserved or set aside for them).
	Held int
	// Waiting are the units its Runs could not start for want of a slot.
	Waiting int
}

// Usage lists, per namespace, the slots held and the units waiting, by namespace name.
func (a *Allocator) Usage() []NamespaceUsage {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]NamespaceUsage, 0, len(a.namespaces))
	for name, n := range a.namespaces {
		out = append(out, NamespaceUsage{Namespace: name, Held: n.held, Waiting: n.waiting})
	}
	slices.SortFunc(out, func(x, y NamespaceUsage) int {
		if x.Namespace < y.Namespace {
			return -1
		}
		if x.Namespace > y.Namespace {
			return 1
		}
		return 0
	})
	return out
}
