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
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
)

// graphOf makes nodes from a list of dependencies per step.
func graphOf(deps [][]int, kind func(i int) string) []GraphNode {
	nodes := make([]GraphNode, len(deps))
	for i, d := range deps {
		nodes[i] = GraphNode{Name: fmt.Sprintf("s%d", i), Kind: kind(i), Deps: d}
	}
	return nodes
}

func container(int) string { return "container" }

// fanOut is one step, n in parallel after it, and one after them all.
func fanOut(n int) [][]int {
	deps := [][]int{nil}
	var all []int
	for i := 1; i <= n; i++ {
		deps = append(deps, []int{0})
		all = append(all, i)
	}
	return append(deps, all)
}

func chain(n int) [][]int {
	deps := [][]int{nil}
	for i := 1; i < n; i++ {
		deps = append(deps, []int{i - 1})
	}
	return deps
}

func TestGroupGraph(t *testing.T) {
	ladder := func(n int) [][]int { // two chains with a rung between each pair: no fan-out, no chain
		deps := [][]int{nil, nil}
		for i := 2; i < 2*n; i += 2 {
			deps = append(deps, []int{i - 2, i - 1}, []int{i - 2, i - 1})
		}
		return deps
	}
	cases := []struct {
		name   string
		deps   [][]int
		kind   func(int) string
		groups []GraphGroup
		// member is, for some steps, the group they are drawn in (0: on their own).
		member map[int]int
	}{
		{"a graph of GroupAbove steps is drawn as it is", fanOut(GroupAbove - 2), container, nil, map[int]int{1: 0}},
		{"a fan-out's branches are one group, its first and last steps on their own", fanOut(998), container,
			[]GraphGroup{{GroupFanOut, 998}}, map[int]int{0: 0, 1: 1, 998: 1, 999: 0}},
		{"branches of other kinds are other groups", fanOut(100), func(i int) string {
			if i > 0 && i <= 50 {
				return "agent"
			}
			return "container"
		}, []GraphGroup{{GroupFanOut, 50}, {GroupFanOut, 50}}, map[int]int{1: 1, 51: 2, 101: 0}},
		{"a chain is one group", chain(1000), container, []GraphGroup{{GroupChain, 1000}}, map[int]int{0: 1, 999: 1}},
		{"a chain that starts after a fan-out's join is a group of its own", append(fanOut(50), []int{51}, []int{52}, []int{53}), container,
			[]GraphGroup{{GroupFanOut, 50}, {GroupChain, 4}}, map[int]int{0: 0, 1: 1, 51: 2, 54: 2}},
		{"a graph neither groups enough is grouped by depth, in at most MaxTopLevel groups", ladder(100), container,
			nil, map[int]int{0: 1, 1: 1, 2: 2, 3: 2}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			nodes := graphOf(tc.deps, tc.kind)
			groups := groupGraph(nodes)
			if tc.groups != nil && !reflect.DeepEqual(groups, tc.groups) {
				t.Errorf("groups %+v, want %+v", groups, tc.groups)
			}
			for i, g := range tc.member {
				if nodes[i].Group != g {
					t.Errorf("step %d is in group %d, want %d", i, nodes[i].Group, g)
				}
			}
			checkGroups(t, nodes, groups)
		})
	}
}

// checkGroups checks what holds for every graph: at most MaxTopLevel things to draw, sizes
// that count the members, and groups only above GroupAbove steps.
func checkGroups(t *testing.T, nodes []GraphNode, groups []GraphGroup) {
	t.Helper()
	size := make([]int, len(groups))
	top := len(groups)
	for _, n := range nodes {
		if n.Group == 0 {
			top++
			continue
		}
		if n.Group > len(groups) {
			t.Fatalf("step %s names group %d of %d", n.Name, n.Group, len(groups))
		}
		size[n.Group-1]++
	}
	for i, g := range groups {
		if g.Size != size[i] || g.Size == 0 {
			t.Errorf("group %d says %d steps, has %d", i+1, g.Size, size[i])
		}
	}
	if len(nodes) > GroupAbove && top > MaxTopLevel {
		t.Errorf("%d things to draw, more than %d", top, MaxTopLevel)
	}
	if len(nodes) <= GroupAbove && len(groups) > 0 {
		t.Errorf("a graph of %d steps has groups", len(nodes))
	}
}

// TestGroupGraphBounds draws random graphs: whatever their shape, a page never has more than
// MaxTopLevel things to lay out.
func TestGroupGraphBounds(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		n := 1 + r.IntN(1000)
		deps := make([][]int, n)
		for i := 1; i < n; i++ {
			for range r.IntN(4) {
				deps[i] = append(deps[i], r.IntN(i))
			}
		}
		nodes := graphOf(deps, func(i int) string { return []string{"container", "agent"}[r.IntN(2)] })
		checkGroups(t, nodes, groupGraph(nodes))
	}
}
