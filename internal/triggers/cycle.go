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
	"fmt"
	"slices"
	"strings"
)

// Chain is a runCompleted Trigger seen as an edge between Scenes: when a Run of From ends,
// the Trigger starts a Run of To.
type Chain struct {
	Trigger, From, To string
}

func (c Chain) String() string {
	return fmt.Sprintf("Trigger %s (Scene %s -> %s)", c.Trigger, c.From, c.To)
}

// FindCycle returns the shortest cycle of chains that first closes, in order and starting with
// first: the chains that lead from first.To back to first.From. Such a cycle starts Runs
// without end, each Run's end starting the next. It returns nil when first closes no cycle.
func FindCycle(first Chain, others []Chain) []Chain {
	if first.From == first.To {
		return []Chain{first}
	}
	from := map[string][]Chain{}
	for _, c := range others {
		if c.Trigger != first.Trigger {
			from[c.From] = append(from[c.From], c)
		}
	}
	for _, cs := range from {
		slices.SortFunc(cs, func(a, b Chain) int { return strings.Compare(a.Trigger, b.Trigger) })
	}
	// Breadth first from the Scene first starts, so the cycle named is a shortest one.
	via := map[string]Chain{} // Scene -> the chain that first reached it
	queue := []string{first.To}
	seen := map[string]bool{first.To: true}
	for len(queue) > 0 {
		scene := queue[0]
		queue = queue[1:]
		for _, c := range from[scene] {
			if seen[c.To] {
				continue
			}
			seen[c.To], via[c.To] = true, c
			if c.To != first.From {
				queue = append(queue, c.To)
				continue
			}
			path := []Chain{}
			for at := first.From; at != first.To; at = via[at].From {
				path = append(path, via[at])
			}
			slices.Reverse(path)
			return append([]Chain{first}, path...)
		}
	}
	return nil
}

// DescribeCycle names the Triggers of a cycle in order, for an admission error.
func DescribeCycle(cycle []Chain) string {
	parts := make([]string, len(cycle))
	for i, c := range cycle {
		parts[i] = c.String()
	}
	return strings.Join(parts, ", then ")
}
