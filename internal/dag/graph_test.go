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
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// n builds a node: n("b", "a") is step b depending on a.
func n(name string, dependsOn ...string) Node {
	return Node{Name: name, DependsOn: dependsOn}
}

func TestBuildRejectsInvalidGraphs(t *testing.T) {
	cases := []struct {
		name  string
		nodes []Node
		want  string
	}{
		{
			name:  "a duplicate name is reported at the second declaration",
			nodes: []Node{n("a"), n("b"), n("a")},
			want: `spec.steps[2].name: duplicate step name "a", already used by spec.steps[0].name; ` +
				`step names must be unique`,
		},
		{
			name:  "an empty name is reported",
			nodes: []Node{n("a"), n("")},
			want:  "spec.steps[1].name: step name must not be empty",
		},
		{
			name:  "an unknown dependency is reported at its dependsOn entry",
			nodes: []Node{n("a"), n("b", "a", "nope")},
			want:  `spec.steps[1].dependsOn[1]: step "b" depends on unknown step "nope"`,
		},
		{
			name:  "a self dependency is reported at its dependsOn entry",
			nodes: []Node{n("a"), n("b", "a", "b")},
			want:  `spec.steps[1].dependsOn[1]: step "b" depends on itself; remove "b" from its dependsOn`,
		},
		{
			name:  "a cycle is reported with its path",
			nodes: []Node{n("a", "b"), n("b", "c"), n("c", "a")},
			want: "spec.steps[0].dependsOn[0]: steps form a cycle: a -> b -> c -> a " +
				"(each step depends on the next); remove one of these dependencies",
		},
		{
			name:  "a cycle is named from its earliest declared step whatever step leads to it",
			nodes: []Node{n("x", "c"), n("a", "c"), n("b", "a"), n("c", "b")},
			want: "spec.steps[1].dependsOn[0]: steps form a cycle: a -> c -> b -> a " +
				"(each step depends on the next); remove one of these dependencies",
		},
		{
			name:  "a two step cycle points at the dependsOn entry that starts it",
			nodes: []Node{n("root"), n("a", "root", "b"), n("b", "a")},
			want: "spec.steps[1].dependsOn[1]: steps form a cycle: a -> b -> a " +
				"(each step depends on the next); remove one of these dependencies",
		},
		{
			name:  "of two cycles the one declared first is reported",
			nodes: []Node{n("p", "q"), n("q", "p"), n("a", "b"), n("b", "a")},
			want: "spec.steps[0].dependsOn[0]: steps form a cycle: p -> q -> p " +
				"(each step depends on the next); remove one of these dependencies",
		},
		{
			name:  "a cycle is reported after the problems of any step",
			nodes: []Node{n("a", "b"), n("b", "a"), n("c", "gone")},
			want:  `spec.steps[2].dependsOn[0]: step "c" depends on unknown step "gone"`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g, err := Build(tc.nodes)
			if err == nil {
				t.Fatalf("Build succeeded with %v, want error %q", g.Names(), tc.want)
			}
			if err.Error() != tc.want {
				t.Errorf("error\n got %q\nwant %q", err.Error(), tc.want)
			}
			if _, ok := errors.AsType[*Error](err); !ok {
				t.Errorf("error is %T, want *dag.Error", err)
			}
		})
	}
}

func TestBuildAllReportsEveryProblemInStepOrder(t *testing.T) {
	t.Run("every problem is reported, ordered by step, the cycle last", func(t *testing.T) {
		errs := BuildAll([]Node{
			n("a", "b", "missing"),
			n("b", "a"),
			n("a"),
			n("c", "c", "other"),
		})
		got := make([]string, 0, len(errs))
		for _, e := range errs {
			got = append(got, e.Field)
		}
		want := []string{
			"spec.steps[0].dependsOn[1]",
			"spec.steps[2].name",
			"spec.steps[3].dependsOn[0]",
			"spec.steps[3].dependsOn[1]",
			"spec.steps[0].dependsOn[0]",
		}
		if !slices.Equal(got, want) {
			t.Fatalf("fields\n got %q\nwant %q", got, want)
		}
		if !strings.Contains(errs[4].Detail, "a -> b -> a") {
			t.Errorf("last error %q does not name the cycle a -> b -> a", errs[4].Detail)
		}
	})
	t.Run("a valid graph has no problems", func(t *testing.T) {
		if errs := BuildAll([]Node{n("a"), n("b", "a")}); errs != nil {
			t.Fatalf("BuildAll = %v, want nil", errs)
		}
	})
}

//nolint:goconst // expectations read best with the step names spelled out
func TestGraphAnswersQuestionsAboutSteps(t *testing.T) {
	// fetch -> draft -> review -> publish, and lint beside draft; cleanup stands alone.
	g, err := Build([]Node{
		n("fetch"),
		n("draft", "fetch"),
		n("lint", "fetch"),
		n("review", "draft", "lint"),
		n("publish", "review"),
		n("cleanup"),
	})
	if err != nil {
		t.Fatal(err)
	}
	declared := []string{"fetch", "draft", "lint", "review", "publish", "cleanup"}
	cases := []struct {
		name string
		got  []string
		want []string
	}{
		{"names keep declaration order", g.Names(), declared},
		{"dependencies keep dependsOn order", g.Dependencies("review"), []string{"draft", "lint"}},
		{"dependents are in declaration order", g.Dependents("fetch"), []string{"draft", "lint"}},
		{"a step nothing depends on has no dependents", g.Dependents("publish"), nil},
		{"roots are the steps without dependencies", g.Roots(), []string{"fetch", "cleanup"}},
		{"sinks are the steps nothing depends on", g.Sinks(), []string{"publish", "cleanup"}},
		{"ancestors are every transitive dependency in declaration order", g.Ancestors("publish"),
			[]string{"fetch", "draft", "lint", "review"}},
		{"a root has no ancestors", g.Ancestors("fetch"), nil},
		{"an unknown step has no dependencies", g.Dependencies("nope"), nil},
		{"an unknown step has no dependents", g.Dependents("nope"), nil},
		{"an unknown step has no ancestors", g.Ancestors("nope"), nil},
		{"descendants are every transitive dependent in declaration order", g.Descendants("draft"),
			[]string{"review", "publish"}},
		{"a root's descendants reach through every branch", g.Descendants("fetch"),
			[]string{"draft", "lint", "review", "publish"}},
		{"a sink has no descendants", g.Descendants("publish"), nil},
		{"an unknown step has no descendants", g.Descendants("nope"), nil},
		{"a graph declared in a valid order keeps it", g.TopologicalOrder(), declared},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if !slices.Equal(tc.got, tc.want) {
				t.Errorf("got %q, want %q", tc.got, tc.want)
			}
		})
	}
	t.Run("length counts every step", func(t *testing.T) {
		if g.Len() != 6 {
			t.Errorf("Len = %d, want 6", g.Len())
		}
	})
	t.Run("index is the declaration position", func(t *testing.T) {
		if i, ok := g.Index("review"); !ok || i != 3 {
			t.Errorf("Index(review) = %d, %v, want 3, true", i, ok)
		}
		if _, ok := g.Index("nope"); ok {
			t.Error("Index(nope) found a step")
		}
	})
	t.Run("changing returned names does not change the graph", func(t *testing.T) {
		names := g.Names()
		names[0] = "changed"
		if g.Names()[0] != "fetch" {
			t.Errorf("Names()[0] = %q after changing a copy", g.Names()[0])
		}
	})
}

func TestTopologicalOrder(t *testing.T) {
	cases := []struct {
		name  string
		nodes []Node
		want  []string
	}{
		{
			name:  "a step comes after the steps it depends on though declared before them",
			nodes: []Node{n("b", "a"), n("a")},
			want:  []string{"a", "b"},
		},
		{
			name:  "the earliest declared ready step goes first, not the longest waiting",
			nodes: []Node{n("c"), n("a", "c"), n("b")},
			want:  []string{"c", "a", "b"},
		},
		{
			name:  "a diamond joins after both branches",
			nodes: []Node{n("join", "left", "right"), n("right", "top"), n("left", "top"), n("top")},
			want:  []string{"top", "right", "left", "join"},
		},
		{
			name:  "repeated dependsOn entries count once",
			nodes: []Node{n("a"), n("b", "a", "a")},
			want:  []string{"a", "b"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g, err := Build(tc.nodes)
			if err != nil {
				t.Fatal(err)
			}
			if got := g.TopologicalOrder(); !slices.Equal(got, tc.want) {
				t.Errorf("TopologicalOrder = %q, want %q", got, tc.want)
			}
		})
	}
	t.Run("repeated dependsOn entries make one edge", func(t *testing.T) {
		g, err := Build([]Node{n("a"), n("b", "a", "a")})
		if err != nil {
			t.Fatal(err)
		}
		if got := g.Dependents("a"); !slices.Equal(got, []string{"b"}) {
			t.Errorf("Dependents(a) = %q, want [b]", got)
		}
	})
}

func TestLargeGraphs(t *testing.T) {
	t.Run("a chain of a thousand steps is ordered from its root", func(t *testing.T) {
		nodes := chain(1000)
		slices.Reverse(nodes)
		g, err := Build(nodes)
		if err != nil {
			t.Fatal(err)
		}
		order := g.TopologicalOrder()
		if len(order) != 1000 || order[0] != "s0" || order[999] != "s999" {
			t.Errorf("order has %d steps from %q to %q, want 1000 from s0 to s999",
				len(order), order[0], order[len(order)-1])
		}
		if got := len(g.Ancestors("s999")); got != 999 {
			t.Errorf("s999 has %d ancestors, want 999", got)
		}
	})
	t.Run("a cycle through a thousand steps is shortened in its message", func(t *testing.T) {
		nodes := chain(1000)
		nodes[0].DependsOn = []string{"s999"}
		_, err := Build(nodes)
		want := "spec.steps[0].dependsOn[0]: steps form a cycle: " +
			"s0 -> s999 -> s998 -> s997 -> s996 -> s995 -> s994 -> s993 -> s992 -> s991 -> " +
			"... (990 more) -> s0 (each step depends on the next); remove one of these dependencies"
		if err == nil || err.Error() != want {
			t.Errorf("error\n got %v\nwant %s", err, want)
		}
	})
	t.Run("a fan-out of a thousand steps has one root and 999 sinks", func(t *testing.T) {
		g, err := Build(fanOut(1000))
		if err != nil {
			t.Fatal(err)
		}
		if len(g.Roots()) != 1 || len(g.Sinks()) != 999 || len(g.Dependents("root")) != 999 {
			t.Errorf("roots %d, sinks %d, dependents of root %d; want 1, 999, 999",
				len(g.Roots()), len(g.Sinks()), len(g.Dependents("root")))
		}
	})
}

// chain returns s0 <- s1 <- ... <- s(n-1), each step depending on the one before.
func chain(size int) []Node {
	nodes := make([]Node, size)
	for i := range nodes {
		nodes[i].Name = fmt.Sprintf("s%d", i)
		if i > 0 {
			nodes[i].DependsOn = []string{nodes[i-1].Name}
		}
	}
	return nodes
}

// fanOut returns one root and size-1 leaves depending on it.
func fanOut(size int) []Node {
	nodes := make([]Node, size)
	nodes[0].Name = "root"
	for i := 1; i < size; i++ {
		nodes[i] = Node{Name: fmt.Sprintf("leaf-%d", i), DependsOn: []string{"root"}}
	}
	return nodes
}

func BenchmarkBuild1000FanOut(b *testing.B) {
	nodes := fanOut(1000)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Build(nodes); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBuildChain1000(b *testing.B) {
	nodes := chain(1000)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Build(nodes); err != nil {
			b.Fatal(err)
		}
	}
}

// BuildAll returns every problem Build would find, in the same order, so a webhook can report
// them all at once. It reports at most one cycle: the one starting at the earliest declared
// step that lies on a cycle. Nil means Build succeeds.
func BuildAll(nodes []Node) []*Error {
	_, errs := build(nodes)
	return errs
}
