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
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

// Names cannot be squatted. The names of what a Run creates are predictable, so anyone who
// may create objects in the namespace can take one first. Act does not read: when a create
// finds its name held, the pass writes no status, and the next pass's gather reads what holds
// the name and its alternates (naming.Alternate) into Facts.Names. The planner then creates
// the object under the name gather found (resolveNames), tells who held the name, and records
// the name used where the status records names.

// NameFacts is what gather found under a predictable name an earlier create found held.
type NameFacts struct {
	// Kind is what the name is of (pod, Run, Gate, ConfigMap), for people.
	Kind string
	// Use is the name to create the object under: the predictable name itself when it is free
	// again or the Run's own, else the first alternate that is free or the Run's; "" when
	// someone else's object holds every one.
	Use string
	// Exists says the Run's own object is there under Use already (made by a pass whose
	// status write was lost, or not in the cache yet): nothing is created.
	Exists bool
	// Taken describes the objects that hold the names before Use, for people.
	Taken []string
}

// nameFor says where the object the plan creates under predictable goes: the name to use
// and whether to create it.
func (p *planner) nameFor(predictable string) (use string, create bool) {
	nf, ok := p.f.Names[predictable]
	switch {
	case !ok:
		return predictable, true
	case nf.Use == "":
		return predictable, false
	}
	return nf.Use, !nf.Exists
}

// resolveNames moves the plan's creates whose predictable names are held (Facts.Names) to the
// names gather found. A name every alternate of which is held creates nothing: the status keeps
// the predictable name, which the next pass finds held by someone else, and fails its step with
// NameConflict.
//
// What the status records, and who held a name, come from every held name gather resolved,
// not only from this pass's creates: the pass that created an object under an alternate may
// have written no status (another of its creates found a name held), and the pass after it
// may create nothing, for the object is there.
func (p *planner) resolveNames(status *ergonv1alpha1.RunStatus) {
	if len(p.f.Names) == 0 {
		return
	}
	move := func(name, standsFor *string) bool {
		use, create := p.nameFor(*name)
		if use != *name {
			*standsFor, *name = *name, use
		}
		return create
	}
	p.plan.Pods = moveEach(p.plan.Pods, func(req *PodRequest) bool { return move(&req.Name, &req.StandsFor) })
	p.plan.ToolPods = moveEach(p.plan.ToolPods, func(req *ToolPodRequest) bool { return move(&req.Name, &req.StandsFor) })
	p.plan.Children = moveEach(p.plan.Children, func(req *ChildRequest) bool { return move(&req.Name, &req.StandsFor) })
	p.plan.Gates = moveEach(p.plan.Gates, func(req *GateRequest) bool {
		// A tool call's Gate keeps its name, which it shares with the call's pod or child Run.
		return req.ToolCall != "" || move(&req.Name, &req.StandsFor)
	})
	p.plan.Store = moveEach(p.plan.Store, func(req *StoreRequest) bool { return move(&req.ConfigMap, &req.StandsFor) })

	var notes []string
	for _, predictable := range slices.Sorted(maps.Keys(p.f.Names)) {
		nf := p.f.Names[predictable]
		if nf.Use == "" || nf.Use == predictable {
			continue
		}
		// A single attempt's pod, a child Run, a Gate and an output are found by the name the
		// status records; a unit's pod by its labels, a tool call's by the name it stands for.
		for i := range status.Steps {
			s := &status.Steps[i]
			for _, recorded := range []*string{&s.PodName, &s.ChildRun, &s.Gate} {
				if *recorded == predictable {
					*recorded = nf.Use
				}
			}
			for _, out := range []*ergonv1alpha1.OutputValue{s.Output, s.Transcript} {
				if out != nil && out.Ref != nil && out.Ref.ConfigMap == predictable {
					out.Ref.ConfigMap = nf.Use
				}
			}
		}
		notes = append(notes, fmt.Sprintf("%s holds the name of the %s %s; Ergon leaves it alone and uses %s",
			strings.Join(nf.Taken, "; "), nf.Kind, predictable, nf.Use))
	}
	for _, n := range notes {
		p.plan.Events = append(p.plan.Events, Event{Warning: true, Reason: ergonv1alpha1.ReasonNameSquatted,
			Action: "CreateUnderAlternateName", Message: n})
	}
	if len(notes) > 0 {
		meta.SetStatusCondition(&status.Conditions, metav1.Condition{Type: ergonv1alpha1.ConditionNameTaken,
			Status: metav1.ConditionTrue, Reason: ergonv1alpha1.ReasonNameSquatted, Message: notes[len(notes)-1],
			ObservedGeneration: p.f.Run.Generation, LastTransitionTime: metav1.NewTime(p.f.Now)})
	}
}

// moveEach moves each request (move), and keeps those it says to create.
func moveEach[R any](reqs []R, move func(*R) bool) []R {
	kept := reqs[:0]
	for _, req := range reqs {
		if move(&req) {
			kept = append(kept, req)
		}
	}
	return kept
}
