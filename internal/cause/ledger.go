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
	"sync"
	"time"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

// Window is the span the Runs a Trigger started are counted over, and how long a Ledger
// remembers a Run it was told of: far longer than the manager's cache takes to see it.
const Window = time.Minute

// Ledger keys, one space per thing counted: the child Runs of a Run, the Runs caused by a
// root, the Runs a Trigger started.
func ChildrenKey(run *ergonv1alpha1.Run) string { return "children/" + RootKey(run) }

// RootLedgerKey is the key of the Runs caused by root.
func RootLedgerKey(root string) string { return "root/" + root }

// TriggerKey is the key of the Runs a Trigger started.
func TriggerKey(trigger *ergonv1alpha1.Trigger) string { return "trigger/" + string(trigger.UID) }

// StartedWithin returns the names of the runs created within Window before now (or a little
// after it: the API server's clock may be ahead), and when the oldest of them leaves the
// window (zero when none is in it).
func StartedWithin(runs []*ergonv1alpha1.Run, now time.Time) ([]string, time.Time) {
	var names []string
	var frees time.Time
	for _, run := range runs {
		created := run.CreationTimestamp.Time
		if !created.After(now.Add(-Window)) || created.After(now.Add(Window)) {
			continue
		}
		names = append(names, run.Name)
		if at := created.Add(Window); frees.IsZero() || at.Before(frees) {
			frees = at
		}
	}
	return names, frees
}

// Ledger remembers the Runs this manager created a moment ago, by key (a cause root, a parent
// Run, a Trigger), so a count taken from a cache that has not seen them yet still includes
// them: a burst of creations cannot slip past a limit between a create and its watch event.
// It holds only what was recorded in the last Window. Safe for concurrent use.
type Ledger struct {
	mu   sync.Mutex
	keys map[string]map[string]time.Time // key -> Run name -> when recorded
}

// Record remembers that the Run name was created under key at now.
func (l *Ledger) Record(key, name string, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.record(key, name, now)
}

func (l *Ledger) record(key, name string, now time.Time) {
	if l.keys == nil {
		l.keys = map[string]map[string]time.Time{}
	}
	names := l.keys[key]
	if names == nil {
		names = map[string]time.Time{}
		l.keys[key] = names
	}
	names[name] = now
}

// Forget drops a Run recorded under key that was not created after all.
func (l *Ledger) Forget(key, name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.keys[key], name)
	if len(l.keys[key]) == 0 {
		delete(l.keys, key)
	}
}

// Count is how many distinct Runs there are under key: those seen (by name, from the cache)
// and those recorded in the last Window before now.
func (l *Ledger) Count(key string, seen []string, now time.Time) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.count(key, seen, now)
}

func (l *Ledger) count(key string, seen []string, now time.Time) int {
	n := len(seen)
	names := l.keys[key]
	if len(names) == 0 {
		return n
	}
	in := make(map[string]bool, len(seen))
	for _, s := range seen {
		in[s] = true
	}
	for name, at := range names {
		if now.Sub(at) >= Window || at.After(now.Add(Window)) {
			delete(names, name) // old enough for any cache to hold it, or from a clock set back
			continue
		}
		if !in[name] {
			n++
		}
	}
	if len(names) == 0 {
		delete(l.keys, key)
	}
	return n
}

// Reserve counts as Count does and, when the count is below limit, records name under key at
// once, so concurrent callers cannot all pass the same last place. It returns the count before
// the reservation and whether it was made; a caller that then creates nothing calls Forget.
func (l *Ledger) Reserve(key string, seen []string, name string, limit int, now time.Time) (int, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := l.count(key, seen, now)
	if n >= limit {
		return n, false
	}
	l.record(key, name, now)
	return n, true
}
