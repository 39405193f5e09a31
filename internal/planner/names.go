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

// nameFor says where the object the plan creates under predictable goes: the name to use,
// whether to create it, and who holds the names before it.
func (p *planner) nameFor(predictable string) (use string, create bool, taken []string) {
	nf, ok := p.f.Names[predictable]
	switch {
	case !ok:
		return predictable, true, nil
	case nf.Use == "":
		return predictable, false, nil
	}
	return nf.Use, !nf.Exists, nf.Taken
}

// resolveNames moves the plan's creates whose predictable names are held (Facts.Names) to the
// names gather found, and the status's records of them too. A name every alternate of which is
// held creates nothing: the status keeps the predictable name, which the next pass finds held
// by someone else, and fails its step with NameConflict.
func (p *planner) resolveNames(status *ergonv1alpha1.RunStatus) {
	if len(p.f.Names) == 0 {
		return
	}
	steps := map[string]*ergonv1alpha1.StepStatus{}
	for i := range status.Steps {
		steps[status.Steps[i].Name] = &status.Steps[i]
	}
	var notes []string
	// move moves *name to its alternate, telling who held it as what, and says whether to
	// create the object.
	move := func(name, standsFor *string, step, what string) bool {
		use, create, taken := p.nameFor(*name)
		if use != *name {
			notes = append(notes, fmt.Sprintf("Step %s: %s holds the name of its %s; Ergon leaves it alone and uses %s",
				step, strings.Join(taken, "; "), what, use))
			*standsFor, *name = *name, use
		}
		return create
	}
	// record points the status's record of a name at the name used.
	record := func(recorded *string, req, standsFor string) {
		if standsFor != "" && *recorded == standsFor {
			*recorded = req
		}
	}
	p.plan.Pods = moveEach(p.plan.Pods, func(req *PodRequest) bool {
		create := move(&req.Name, &req.StandsFor, req.Step.Name, fmt.Sprintf("pod for attempt %d", req.Attempt))
		// A unit's pod is found by its labels; a single attempt's by the name its status records.
		if s := steps[req.Step.Name]; s != nil && req.Unit == nil {
			record(&s.PodName, req.Name, req.StandsFor)
		}
		return create
	})
	p.plan.ToolPods = moveEach(p.plan.ToolPods, func(req *ToolPodRequest) bool {
		// Found again by the name it stands for (Facts.ToolPods); the status records none.
		return move(&req.Name, &req.StandsFor, req.Step.Name, fmt.Sprintf("pod of a call of its tool %s", req.Tool))
	})
	p.plan.Children = moveEach(p.plan.Children, func(req *ChildRequest) bool {
		create := move(&req.Name, &req.StandsFor, req.Step, "child Run")
		// A unit's child is found by its labels and its AnnotationStandsFor.
		if s := steps[req.Step]; s != nil {
			record(&s.ChildRun, req.Name, req.StandsFor)
		}
		return create
	})
	p.plan.Gates = moveEach(p.plan.Gates, func(req *GateRequest) bool {
		if req.ToolCall != "" {
			return true // a tool call's Gate keeps its name, which it shares with the call's pod or child Run
		}
		create := move(&req.Name, &req.StandsFor, req.Step.Name, "Gate")
		if s := steps[req.Step.Name]; s != nil {
			record(&s.Gate, req.Name, req.StandsFor)
		}
		return create
	})
	p.plan.Store = moveEach(p.plan.Store, func(req *StoreRequest) bool {
		create := move(&req.ConfigMap, &req.StandsFor, req.Step, "output ConfigMap")
		for i := range status.Steps {
			for _, out := range []*ergonv1alpha1.OutputValue{status.Steps[i].Output, status.Steps[i].Transcript} {
				if out != nil && out.Ref != nil {
					record(&out.Ref.ConfigMap, req.ConfigMap, req.StandsFor)
				}
			}
		}
		return create
	})
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
