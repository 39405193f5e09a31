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

package console

import (
	"slices"
	"strconv"
	"strings"
)

const (
	// GroupAbove is the number of steps above which a graph is drawn in groups: laying out a
	// graph costs the browser more than linear time, and a thousand boxes say less than one
	// box that says "998 steps, 412 succeeded".
	GroupAbove = 40
	// MaxTopLevel bounds what a grouped graph draws: groups and the steps left on their own.
	MaxTopLevel = 100
	// minGroup is the fewest steps a fan-out or chain group holds.
	minGroup = 3
)

// Kinds of GraphGroup.
const (
	// GroupFanOut is steps of one kind and condition with the same dependencies and the same
	// dependents: the branches of a fan-out.
	GroupFanOut = "fan-out"
	// GroupChain is steps one after another, each the only dependent of the one before and
	// depending on nothing else.
	GroupChain = "chain"
	// GroupLevel is the steps at a range of depths, when fan-outs and chains leave more than
	// MaxTopLevel things to draw.
	GroupLevel = "level"
)

// GraphGroup is steps drawn as one node until the viewer opens it; its members are the
// nodes whose Group names it.
type GraphGroup struct {
	Kind string `json:"kind"`
	Size int    `json:"size"`
}

// groupGraph groups a graph of more than GroupAbove steps, setting each member's Group:
// first fan-outs, then chains among the steps left; when that still leaves more than
// MaxTopLevel things to draw, every step by its depth instead. The same graph always gets the
// same groups, so a page that reloads draws what it drew.
func groupGraph(nodes []GraphNode) []GraphGroup {
	if len(nodes) <= GroupAbove {
		return nil
	}
	deps := make([][]int, len(nodes))
	dependents := make([][]int, len(nodes))
	for i := range nodes {
		deps[i] = slices.Compact(slices.Sorted(slices.Values(nodes[i].Deps)))
		for _, d := range deps[i] {
			dependents[d] = append(dependents[d], i)
		}
	}
	var groups []GraphGroup
	assign := func(members []int, kind string) {
		groups = append(groups, GraphGroup{Kind: kind, Size: len(members)})
		for _, m := range members {
			nodes[m].Group = len(groups)
		}
	}

	// Fan-outs: the same kind, condition, dependencies and dependents.
	var keys []string
	siblings := map[string][]int{}
	for i := range nodes {
		key := nodes[i].Kind + "\x00" + nodes[i].When + "\x00" + joinInts(deps[i]) + "\x00" + joinInts(dependents[i])
		if _, ok := siblings[key]; !ok {
			keys = append(keys, key)
		}
		siblings[key] = append(siblings[key], i)
	}
	for _, k := range keys {
		if len(siblings[k]) >= minGroup {
			assign(siblings[k], GroupFanOut)
		}
	}

	// Chains among the steps left: each link the only dependent of the one before it, and
	// depending on it alone.
	next := func(i int) int {
		if len(dependents[i]) != 1 {
			return -1
		}
		if j := dependents[i][0]; nodes[j].Group == 0 && len(deps[j]) == 1 {
			return j
		}
		return -1
	}
	for i := range nodes {
		if nodes[i].Group != 0 || (len(deps[i]) == 1 && nodes[deps[i][0]].Group == 0 && next(deps[i][0]) == i) {
			continue // grouped, or inside a chain that starts earlier
		}
		chain := []int{i}
		for j := next(i); j >= 0 && nodes[j].Group == 0; j = next(j) {
			chain = append(chain, j)
		}
		if len(chain) >= minGroup {
			assign(chain, GroupChain)
		}
	}

	top := len(groups)
	for i := range nodes {
		if nodes[i].Group == 0 {
			top++
		}
	}
	if top <= MaxTopLevel {
		return groups
	}

	// Too many still: every step by its depth, in at most MaxTopLevel ranges of depths.
	depth := depths(deps)
	levels := slices.Max(depth) + 1
	width := (levels + MaxTopLevel - 1) / MaxTopLevel
	groups = nil
	byRange := map[int][]int{}
	for i := range nodes {
		byRange[depth[i]/width] = append(byRange[depth[i]/width], i)
	}
	for r := 0; r*width < levels; r++ {
		if len(byRange[r]) > 0 {
			assign(byRange[r], GroupLevel)
		}
	}
	return groups
}

// depths is the length of the longest path from a step without dependencies to each step. A
// cycle (which admission refuses) is cut where it is met.
func depths(deps [][]int) []int {
	const unseen, visiting = -1, -2
	depth := make([]int, len(deps))
	for i := range depth {
		depth[i] = unseen
	}
	var visit func(i int) int
	visit = func(i int) int {
		switch depth[i] {
		case visiting:
			return -1
		case unseen:
			depth[i] = visiting
			d := 0
			for _, p := range deps[i] {
				d = max(d, visit(p)+1)
			}
			depth[i] = d
		}
		return depth[i]
	}
	for i := range deps {
		visit(i)
	}
	return depth
}

func joinInts(v []int) string {
	var b strings.Builder
	for i, x := range v {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(x))
	}
	return b.String()
}
