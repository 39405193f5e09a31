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

package dag

import (
	"fmt"
	"slices"
	"strings"
)

// stepsPath is the field path of the steps list in a Scene, the root of every error's Field.
const stepsPath = "spec.steps"

// maxCycleShown bounds how many steps a cycle message lists, so a cycle through a thousand
// steps still makes a message a person can read.
const maxCycleShown = 10

// Node is one step as the graph sees it: its name and the names of the steps it depends on.
type Node struct {
	Name      string
	DependsOn []string
}

// Error is one problem with the graph, located by the field path of the Scene that causes it,
// so the admission webhook can report it the way the API server reports schema errors.
type Error struct {
	// Field is the path of the offending field, for example spec.steps[3].dependsOn[1].
	Field string
	// Detail says what is wrong and, where it can, what to do.
	Detail string
}

// Error returns "FIELD: DETAIL".
func (e *Error) Error() string {
	return e.Field + ": " + e.Detail
}

// Graph is a checked, acyclic step graph. It never changes after Build, so one Graph can
// serve concurrent readers. Steps are identified by name; their index is their position in
// declaration order.
type Graph struct {
	names      []string
	index      map[string]int
	deps       [][]int // deps[i]: the steps i depends on, in the order of its dependsOn
	dependents [][]int // dependents[i]: the steps that depend on i, in declaration order
	order      []int   // a topological order, computed once by Build
}

// Build checks the nodes and returns their graph, or the first problem found: an empty or
// duplicate name, a dependency on an unknown step or on the step itself, or a cycle.
// Problems are ordered by step, and a cycle comes last because it is only looked for in what
// the other checks leave. Repeated entries in one dependsOn count once.
func Build(nodes []Node) (*Graph, error) {
	g, errs := build(nodes)
	if len(errs) > 0 {
		return nil, errs[0]
	}
	return g, nil
}

func build(nodes []Node) (*Graph, []*Error) {
	g := &Graph{
		names: make([]string, 0, len(nodes)),
		index: make(map[string]int, len(nodes)),
	}
	// pos maps a graph index to the node's position in the input, for field paths. The two
	// differ once a step with an empty or duplicate name has been left out.
	pos := make([]int, 0, len(nodes))
	nameErrs := map[int]*Error{}
	for i, n := range nodes {
		if n.Name == "" {
			nameErrs[i] = &Error{Field: nameField(i), Detail: "step name must not be empty"}
			continue
		}
		if first, dup := g.index[n.Name]; dup {
			nameErrs[i] = &Error{
				Field: nameField(i),
				Detail: fmt.Sprintf("duplicate step name %q, already used by %s; step names must be unique",
					n.Name, nameField(pos[first])),
			}
			continue
		}
		g.index[n.Name] = len(g.names)
		g.names = append(g.names, n.Name)
		pos = append(pos, i)
	}

	var errs []*Error
	// The edges of all steps share one backing array: a thousand-step Scene then costs a
	// handful of allocations rather than one per step.
	edges := 0
	for _, n := range nodes {
		edges += len(n.DependsOn)
	}
	buf := make([]int, 0, edges)
	g.deps = make([][]int, len(g.names))
	// seen[d] == gi+1 when step gi already lists d; it dedupes dependsOn in O(1) per entry.
	seen := make([]int, len(g.names))
	for i, n := range nodes {
		gi, inGraph := -1, nameErrs[i] == nil
		if inGraph {
			gi = g.index[n.Name]
			g.deps[gi] = buf[len(buf) : len(buf) : len(buf)+len(n.DependsOn)]
		} else {
			errs = append(errs, nameErrs[i])
		}
		for j, d := range n.DependsOn {
			di, known := g.index[d]
			switch {
			case d == n.Name:
				errs = append(errs, &Error{
					Field:  dependsOnField(i, j),
					Detail: fmt.Sprintf("step %q depends on itself; remove %q from its dependsOn", n.Name, d),
				})
			case !known:
				errs = append(errs, &Error{
					Field:  dependsOnField(i, j),
					Detail: fmt.Sprintf("step %q depends on unknown step %q", n.Name, d),
				})
			case !inGraph || seen[di] == gi+1:
				// Edges of a step left out of the graph, and repeated entries, add nothing.
			default:
				seen[di] = gi + 1
				g.deps[gi] = append(g.deps[gi], di)
			}
		}
		if inGraph {
			buf = buf[:len(buf)+len(g.deps[gi])]
		}
	}
	g.dependents = invert(g.deps, len(buf))

	g.order = g.topologicalOrder()
	if len(g.order) < len(g.names) {
		errs = append(errs, g.cycleError(nodes, pos))
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return g, nil
}

// invert returns, for each step, the steps that depend on it in declaration order, sharing
// one backing array of the given number of edges.
func invert(deps [][]int, edges int) [][]int {
	count := make([]int, len(deps))
	for _, ds := range deps {
		for _, d := range ds {
			count[d]++
		}
	}
	buf := make([]int, edges)
	dependents := make([][]int, len(deps))
	off := 0
	for i, c := range count {
		dependents[i] = buf[off : off : off+c]
		off += c
	}
	for i, ds := range deps {
		for _, d := range ds {
			dependents[d] = append(dependents[d], i)
		}
	}
	return dependents
}

// topologicalOrder is Kahn's algorithm that always takes the earliest declared ready step, so
// a Scene declared in a valid order keeps it. The heap makes it O(V log V + E). Steps on or
// behind a cycle never become ready and are missing from the result.
func (g *Graph) topologicalOrder() []int {
	pending := make([]int, len(g.names))
	ready := make(minHeap, 0, len(g.names))
	for i, deps := range g.deps {
		pending[i] = len(deps)
		if len(deps) == 0 {
			// Indices arrive in increasing order, which already is a valid heap.
			ready = append(ready, i)
		}
	}
	order := make([]int, 0, len(g.names))
	for len(ready) > 0 {
		i := ready.pop()
		order = append(order, i)
		for _, d := range g.dependents[i] {
			pending[d]--
			if pending[d] == 0 {
				ready.push(d)
			}
		}
	}
	return order
}

// cycleError finds a cycle by depth-first search along dependsOn, starting from the steps in
// declaration order, and reports it starting at its earliest declared step, so the same
// Scene always gets the same message.
func (g *Graph) cycleError(nodes []Node, pos []int) *Error {
	cycle := g.findCycle()
	start := 0
	for k := range cycle {
		if cycle[k] < cycle[start] {
			start = k
		}
	}
	cycle = append(cycle[start:], cycle[:start]...)

	var b strings.Builder
	b.WriteString("steps form a cycle: ")
	for k, i := range cycle {
		if k == maxCycleShown {
			fmt.Fprintf(&b, "... (%d more) -> ", len(cycle)-maxCycleShown)
			break
		}
		b.WriteString(g.names[i])
		b.WriteString(" -> ")
	}
	b.WriteString(g.names[cycle[0]])
	b.WriteString(" (each step depends on the next); remove one of these dependencies")

	from, to := cycle[0], cycle[1%len(cycle)]
	return &Error{
		Field:  dependsOnField(pos[from], slices.Index(nodes[pos[from]].DependsOn, g.names[to])),
		Detail: b.String(),
	}
}

// findCycle returns the steps of one cycle, each depending on the next and the last on the
// first. It must only be called when the graph has a cycle. It is iterative so that a chain
// of thousands of steps cannot exhaust the stack.
func (g *Graph) findCycle() []int {
	const (
		unvisited = iota
		onStack
		done
	)
	state := make([]int, len(g.names))
	type frame struct{ node, next int }
	var stack []frame
	for root := range g.names {
		if state[root] != unvisited {
			continue
		}
		stack = append(stack[:0], frame{node: root})
		state[root] = onStack
		for len(stack) > 0 {
			top := &stack[len(stack)-1]
			if top.next == len(g.deps[top.node]) {
				state[top.node] = done
				stack = stack[:len(stack)-1]
				continue
			}
			d := g.deps[top.node][top.next]
			top.next++
			switch state[d] {
			case unvisited:
				state[d] = onStack
				stack = append(stack, frame{node: d})
			case onStack:
				// A dependency still on the stack closes a cycle: the stack from it to the top.
				var cycle []int
				for _, f := range slices.Backward(stack) {
					cycle = append(cycle, f.node)
					if f.node == d {
						break
					}
				}
				slices.Reverse(cycle)
				return cycle
			}
		}
	}
	return nil
}

// Len returns the number of steps.
func (g *Graph) Len() int {
	return len(g.names)
}

// Names returns the step names in declaration order.
func (g *Graph) Names() []string {
	return slices.Clone(g.names)
}

// Index returns the position of the named step in declaration order.
func (g *Graph) Index(name string) (int, bool) {
	i, ok := g.index[name]
	return i, ok
}

// Dependencies returns the steps the named step depends on, in the order of its dependsOn.
// It returns nil for an unknown step.
func (g *Graph) Dependencies(name string) []string {
	i, ok := g.index[name]
	if !ok {
		return nil
	}
	return g.namesOf(g.deps[i])
}

// Dependents returns the steps that depend on the named step, in declaration order. It
// returns nil for an unknown step.
func (g *Graph) Dependents(name string) []string {
	i, ok := g.index[name]
	if !ok {
		return nil
	}
	return g.namesOf(g.dependents[i])
}

// Ancestors returns every step the named step depends on, directly or through other steps, in
// declaration order. These are the steps whose outputs its templates and conditions may read.
// It returns nil for an unknown step.
func (g *Graph) Ancestors(name string) []string {
	return g.reach(name, g.deps)
}

// Descendants returns every step that depends on the named step, directly or through other
// steps, in declaration order: the steps a new output of it may change. It returns nil for an
// unknown step.
func (g *Graph) Descendants(name string) []string {
	return g.reach(name, g.dependents)
}

// reach returns the names of the steps reachable from the named one along edges, without it.
func (g *Graph) reach(name string, edges [][]int) []string {
	i, ok := g.index[name]
	if !ok {
		return nil
	}
	reached := make([]bool, len(g.names))
	queue := slices.Clone(edges[i])
	for _, d := range queue {
		reached[d] = true
	}
	for k := 0; k < len(queue); k++ {
		for _, d := range edges[queue[k]] {
			if !reached[d] {
				reached[d] = true
				queue = append(queue, d)
			}
		}
	}
	var out []string
	for j, r := range reached {
		if r {
			out = append(out, g.names[j])
		}
	}
	return out
}

// Roots returns the steps that depend on no other step, in declaration order: where a Run
// starts.
func (g *Graph) Roots() []string {
	var out []string
	for i, deps := range g.deps {
		if len(deps) == 0 {
			out = append(out, g.names[i])
		}
	}
	return out
}

// Sinks returns the steps no other step depends on, in declaration order. Their outputs are
// the outputs of a Run.
func (g *Graph) Sinks() []string {
	var out []string
	for i, dependents := range g.dependents {
		if len(dependents) == 0 {
			out = append(out, g.names[i])
		}
	}
	return out
}

// TopologicalOrder returns every step after all the steps it depends on. Among steps whose
// dependencies are all placed, the earliest declared comes first, so the order is stable and
// a Scene declared in a valid order keeps it.
func (g *Graph) TopologicalOrder() []string {
	return g.namesOf(g.order)
}

func (g *Graph) namesOf(indices []int) []string {
	if len(indices) == 0 {
		return nil
	}
	out := make([]string, len(indices))
	for k, i := range indices {
		out[k] = g.names[i]
	}
	return out
}

func nameField(i int) string {
	return fmt.Sprintf("%s[%d].name", stepsPath, i)
}

func dependsOnField(i, j int) string {
	return fmt.Sprintf("%s[%d].dependsOn[%d]", stepsPath, i, j)
}

// minHeap is a binary min-heap of step indices. It is written out rather than built on
// container/heap to avoid boxing every index in an interface.
type minHeap []int

func (h *minHeap) push(x int) {
	*h = append(*h, x)
	s := *h
	for i := len(s) - 1; i > 0; {
		parent := (i - 1) / 2
		if s[parent] <= s[i] {
			break
		}
		s[parent], s[i] = s[i], s[parent]
		i = parent
	}
}

func (h *minHeap) pop() int {
	s := *h
	top := s[0]
	last := len(s) - 1
	s[0] = s[last]
	s = s[:last]
	for i := 0; ; {
		smallest, left, right := i, 2*i+1, 2*i+2
		if left < len(s) && s[left] < s[smallest] {
			smallest = left
		}
		if right < len(s) && s[right] < s[smallest] {
			smallest = right
		}
		if smallest == i {
			break
		}
		s[i], s[smallest] = s[smallest], s[i]
		i = smallest
	}
	*h = s
	return top
}
