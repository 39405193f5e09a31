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

package planner

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/naming"
)

// TestHeldNamesMoveTheCreatesThatWantThem: a create that found its name held wrote no status;
// the next pass plans the same create again, now with what gather found under the name.
func TestHeldNamesMoveTheCreatesThatWantThem(t *testing.T) {
	const squatter = "pod x (uid u-1, created 2026-01-01T00:00:00Z, no controller)"
	cases := []struct {
		name string
		// held makes the facts of the held name from the predictable one.
		held func(predictable string) NameFacts
		// create says the create is still planned; want is the name the status records.
		create bool
		want   func(predictable string) string
		told   bool
	}{
		{name: "the first free alternate is used, and who held the name is told",
			held:   func(p string) NameFacts { return NameFacts{Use: p + "-alt", Taken: []string{squatter}} },
			create: true, want: func(p string) string { return p + "-alt" }, told: true},
		{name: "the Run's own object under an alternate is not created twice",
			held:   func(p string) NameFacts { return NameFacts{Use: p + "-alt", Exists: true, Taken: []string{squatter}} },
			create: false, want: func(p string) string { return p + "-alt" }, told: true},
		{name: "the Run's own object under the name, not yet in the cache, is not created twice",
			held:   func(p string) NameFacts { return NameFacts{Use: p, Exists: true} },
			create: false, want: func(p string) string { return p }},
		{name: "a name free again is used",
			held:   func(p string) NameFacts { return NameFacts{Use: p} },
			create: true, want: func(p string) string { return p }},
		{name: "every name held creates nothing, and the status keeps the name for the next pass to fail",
			held:   func(p string) NameFacts { return NameFacts{Taken: []string{squatter, squatter}} },
			create: false, want: func(p string) string { return p }},
	}
	kinds := []struct {
		kind string
		step ergonv1alpha1.Step
		// name is the predictable name the plan creates, recorded is the name the status records.
		name     func(p *Plan) []string
		recorded func(s ergonv1alpha1.StepStatus) string
	}{
		{kind: "pod", step: step("a"),
			name: func(p *Plan) []string {
				var names []string
				for _, r := range p.Pods {
					names = append(names, r.Name+"/"+r.StandsFor)
				}
				return names
			},
			recorded: func(s ergonv1alpha1.StepStatus) string { return s.PodName }},
		{kind: "child Run", step: sceneStep("a"),
			name: func(p *Plan) []string {
				var names []string
				for _, r := range p.Children {
					names = append(names, r.Name+"/"+r.StandsFor)
				}
				return names
			},
			recorded: func(s ergonv1alpha1.StepStatus) string { return s.ChildRun }},
		{kind: "Gate", step: gateStep("a"),
			name: func(p *Plan) []string {
				var names []string
				for _, r := range p.Gates {
					names = append(names, r.Name+"/"+r.StandsFor)
				}
				return names
			},
			recorded: func(s ergonv1alpha1.StepStatus) string { return s.Gate }},
	}
	for _, k := range kinds {
		for _, tc := range cases {
			t.Run(k.kind+": "+tc.name, func(t *testing.T) {
				w := newWorld(t, ergonv1alpha1.SceneSpec{Steps: []ergonv1alpha1.Step{k.step}}, succeed)
				first := Decide(&Facts{Now: w.now, Run: w.run, Scene: w.scene, Pods: w.pods, Outputs: w.outputs,
					Children: map[string]ChildState{}, Gates: map[string]GateState{}, PodBudget: -1, MaxDepth: 5})
				names := k.name(first)
				if len(names) != 1 {
					t.Fatalf("first plan creates %v, want one %s", names, k.kind)
				}
				predictable := strings.TrimSuffix(names[0], "/")
				held := tc.held(predictable)
				// The first pass wrote no status: the second plans from the same Run.
				p := Decide(&Facts{Now: w.now, Run: w.run, Scene: w.scene, Pods: w.pods, Outputs: w.outputs,
					Children: map[string]ChildState{}, Gates: map[string]GateState{}, PodBudget: -1, MaxDepth: 5,
					Names: map[string]NameFacts{predictable: held}})
				created := k.name(p)
				want := tc.want(predictable)
				switch {
				case !tc.create && len(created) != 0:
					t.Errorf("creates %v, want nothing", created)
				case tc.create && want != predictable && (len(created) != 1 || created[0] != want+"/"+predictable):
					t.Errorf("creates %v, want %s standing for %s", created, want, predictable)
				case tc.create && want == predictable && (len(created) != 1 || created[0] != predictable+"/"):
					t.Errorf("creates %v, want %s", created, predictable)
				}
				if got := k.recorded(p.Status.Steps[0]); got != want {
					t.Errorf("status records %q, want %q", got, want)
				}
				taken := meta.FindStatusCondition(p.Status.Conditions, ergonv1alpha1.ConditionNameTaken)
				var warned []string
				for _, e := range p.Events {
					if e.Reason == ergonv1alpha1.ReasonNameSquatted {
						warned = append(warned, e.Message)
					}
				}
				if !tc.told {
					if taken != nil || len(warned) > 0 {
						t.Errorf("told %v, %v; want nothing", taken, warned)
					}
					return
				}
				if taken == nil || !strings.Contains(taken.Message, squatter) || !strings.Contains(taken.Message, want) {
					t.Errorf("NameTaken = %+v, want it to name %s and %s", taken, squatter, want)
				}
				if len(warned) != 1 || warned[0] != taken.Message {
					t.Errorf("events %v, want one telling %v", warned, taken)
				}
			})
		}
	}
}

// TestAnOutputConfigMapHeldKeepsTheOutputUnderItsAlternate: the status points at the alternate
// that holds the output, not at the ConfigMap someone else holds.
func TestAnOutputConfigMapHeldKeepsTheOutputUnderItsAlternate(t *testing.T) {
	w := newWorld(t, ergonv1alpha1.SceneSpec{Steps: []ergonv1alpha1.Step{step("a")}}, succeed)
	w.plan()
	name := w.status("a").PodName
	w.pods["a"][0].Phase = PodSucceeded
	w.outputs[name] = Output{Value: strings.Repeat("x", 64<<10)}
	facts := func(names map[string]NameFacts) *Facts {
		return &Facts{Now: w.now, Run: w.run, Scene: w.scene, Pods: w.pods, Outputs: w.outputs,
			Children: map[string]ChildState{}, Gates: map[string]GateState{}, PodBudget: -1, MaxDepth: 5, Names: names}
	}
	first := Decide(facts(nil))
	if len(first.Store) != 1 {
		t.Fatalf("stores %v, want the step's output", first.Store)
	}
	cm := first.Store[0].ConfigMap
	p := Decide(facts(map[string]NameFacts{cm: {Use: cm + "-alt", Taken: []string{"ConfigMap " + cm}}}))
	if len(p.Store) != 1 || p.Store[0].ConfigMap != cm+"-alt" || p.Store[0].StandsFor != cm {
		t.Fatalf("stores %+v, want %s-alt standing for %s", p.Store, cm, cm)
	}
	if ref := p.Status.Steps[0].Output.Ref; ref == nil || ref.ConfigMap != cm+"-alt" {
		t.Fatalf("output ref = %+v, want the alternate", ref)
	}
}

// TestAToolCallPodHeldRunsUnderItsAlternate: a container tool call's pod whose name is held runs
// under an alternate, is found again by the call's name, and is the pod a cancel stops.
func TestAToolCallPodHeldRunsUnderItsAlternate(t *testing.T) {
	w := newContainerWorld(t, nil, false)
	w.plan()
	w.handOver(lintCall)
	name := naming.ToolCallName("r", "work", "call_9")
	facts := func(names map[string]NameFacts) *Facts {
		return &Facts{Now: w.now, Run: w.run, Scene: w.scene, Pods: map[string][]PodState{"work": w.pods},
			Outputs: map[string]Output{}, Children: w.children, Gates: w.gates, PodBudget: -1, MaxDepth: 3,
			ToolCalls: map[string]ToolCallFacts{"work": w.calls}, ToolPods: w.toolPods, Names: names}
	}
	p := Decide(facts(map[string]NameFacts{name: {Kind: "pod", Use: name + "-alt", Taken: []string{"pod " + name}}}))
	if len(p.ToolPods) != 1 || p.ToolPods[0].Name != name+"-alt" || p.ToolPods[0].StandsFor != name {
		t.Fatalf("tool pods %+v, want %s-alt standing for %s", p.ToolPods, name, name)
	}
	if len(p.Events) == 0 || !strings.Contains(p.Events[len(p.Events)-1].Message, "the pod "+name+"; Ergon leaves it alone and uses "+name+"-alt") {
		t.Fatalf("events %+v, want who held the name told", p.Events)
	}
	w.run.Status = p.Status
	// Gather finds it again by the call's name.
	w.toolPods[name] = ToolPodState{Pod: PodState{Name: name + "-alt", UID: "u", Phase: PodRunning}}
	w.run.Spec.Cancel = true
	p = Decide(facts(nil))
	if len(p.ToolPods) != 0 || !slices.Contains(p.DeletePods, name+"-alt") || slices.Contains(p.DeletePods, name) {
		t.Fatalf("tool pods %v, deletes %v; want the alternate stopped, and the name's holder left alone", p.ToolPods, p.DeletePods)
	}
}

// TestAHeldNameIsToldAndRecordedInThePassThatWritesTheStatus: the pass that created an object
// under its alternate may have written no status (another create found its name held); the next
// pass creates nothing, for the object is there, and still records the alternate and tells who
// held the name.
func TestAHeldNameIsToldAndRecordedInThePassThatWritesTheStatus(t *testing.T) {
	w := newWorld(t, ergonv1alpha1.SceneSpec{Steps: []ergonv1alpha1.Step{step("a")}}, succeed)
	predictable := Decide(&Facts{Now: w.now, Run: w.run, Scene: w.scene, Pods: w.pods, Outputs: w.outputs,
		Children: map[string]ChildState{}, Gates: map[string]GateState{}, PodBudget: -1, MaxDepth: 5}).Pods[0].Name
	// The alternate runs, and the cache shows it: gather finds it by its labels.
	w.pods["a"] = []PodState{{Name: predictable + "-alt", Attempt: 1, Phase: PodRunning}}
	p := Decide(&Facts{Now: w.now, Run: w.run, Scene: w.scene, Pods: w.pods, Outputs: w.outputs,
		Children: map[string]ChildState{}, Gates: map[string]GateState{}, PodBudget: -1, MaxDepth: 5,
		Names: map[string]NameFacts{predictable: {Kind: "pod", Use: predictable + "-alt", Exists: true, Taken: []string{"pod x"}}}})
	if len(p.Pods) != 0 {
		t.Fatalf("creates %v, want nothing", p.Pods)
	}
	if got := p.Status.Steps[0].PodName; got != predictable+"-alt" {
		t.Errorf("status records %q, want the alternate", got)
	}
	if taken := meta.FindStatusCondition(p.Status.Conditions, ergonv1alpha1.ConditionNameTaken); taken == nil ||
		!strings.Contains(taken.Message, "pod x") {
		t.Errorf("NameTaken = %+v, want it to name the holder", taken)
	}
}
