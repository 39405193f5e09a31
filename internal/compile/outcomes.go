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

package compile

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/dag"
)

// GraphDependencies are the steps a step waits for: those of dependsOn, then those of after.
func GraphDependencies(s *ergonv1alpha1.Step) []string {
	if len(s.After) == 0 {
		return s.DependsOn
	}
	deps := slices.Clone(s.DependsOn)
	for _, a := range s.After {
		deps = append(deps, a.Step)
	}
	return deps
}

// Outcomes is every outcome an after entry may name.
var Outcomes = []string{
	string(ergonv1alpha1.StepSucceeded), string(ergonv1alpha1.StepFailed), string(ergonv1alpha1.StepSkipped),
}

// checkAfter checks what the graph does not: the outcomes of after entries, handles, and
// that no step names a dependency both in dependsOn and in after.
func (c *compiler) checkAfter() field.ErrorList {
	var errs field.ErrorList
	for i, s := range c.spec.Steps {
		for j, a := range s.After {
			p := c.path.Child("steps").Index(i).Child("after").Index(j)
			if slices.Contains(s.DependsOn, a.Step) {
				errs = append(errs, field.Duplicate(p.Child("step"), a.Step+
					": it is in dependsOn too; name it once, in after to choose the outcomes it needs"))
			}
			if len(a.Outcomes) == 0 {
				errs = append(errs, field.Required(p.Child("outcomes"),
					"list the outcomes of "+a.Step+" this step runs after, for example [Failed]"))
			}
			for k, o := range a.Outcomes {
				if !slices.Contains(Outcomes, string(o)) {
					errs = append(errs, field.NotSupported(p.Child("outcomes").Index(k), o, Outcomes))
				}
			}
			if a.Handles && !slices.Contains(a.Outcomes, ergonv1alpha1.StepOutcome(ergonv1alpha1.StepFailed)) {
				errs = append(errs, field.Invalid(p.Child("handles"), true,
					"handles applies to a failure: add Failed to outcomes, or remove handles"))
			}
		}
	}
	return errs
}

var depField = regexp.MustCompile(`^spec\.steps\[(\d+)\]\.dependsOn\[(\d+)\]$`)

// graphError locates a dag error at the field of steps (under spec.LIST) that causes it: an
// index past a step's dependsOn is one of its after entries.
func (c *compiler) graphError(err error, steps []ergonv1alpha1.Step, list string) *field.Error {
	var e *dag.Error
	if !errors.As(err, &e) {
		return field.Invalid(c.path.Child(list), nil, err.Error())
	}
	path := e.Field
	if m := depField.FindStringSubmatch(path); m != nil {
		i, _ := strconv.Atoi(m[1])
		j, _ := strconv.Atoi(m[2])
		if i < len(steps) && j >= len(steps[i].DependsOn) {
			path = fmt.Sprintf("spec.steps[%d].after[%d].step", i, j-len(steps[i].DependsOn))
		}
	}
	path = strings.Replace(path, "spec.steps[", "spec."+list+"[", 1)
	return field.Invalid(fieldPath(path), nil, e.Detail)
}

// compileFinally compiles the finally steps: their own graph, which may not reach into the
// main one, and their templates, which may read every step of the graph and the finally
// steps they depend on.
func (c *compiler) compileFinally(scene *Scene) {
	if len(c.spec.Finally) == 0 {
		return
	}
	main := map[string]bool{}
	for _, s := range c.spec.Steps {
		main[s.Name] = true
	}
	path := c.path.Child("finally")
	nodes := make([]dag.Node, len(c.spec.Finally))
	var errs field.ErrorList
	for i, s := range c.spec.Finally {
		p := path.Index(i)
		if main[s.Name] {
			errs = append(errs, field.Duplicate(p.Child("name"), s.Name+
				": a step of spec.steps has this name; finally steps need names of their own"))
		}
		for j, d := range s.DependsOn {
			if main[d] {
				errs = append(errs, field.Invalid(p.Child("dependsOn").Index(j), d,
					"finally steps run after the whole graph has ended and may depend only on other finally steps; remove "+d))
			}
		}
		if len(s.After) > 0 {
			errs = append(errs, field.Forbidden(p.Child("after"),
				"finally steps run whatever the outcome; read .run.phase, .run.failedSteps or .steps.NAME.phase in when instead"))
		}
		nodes[i] = dag.Node{Name: s.Name, DependsOn: s.DependsOn}
	}
	if len(errs) > 0 {
		c.errs = append(c.errs, errs...)
		return
	}
	graph, err := dag.Build(nodes)
	if err != nil {
		c.errs = append(c.errs, c.graphError(err, c.spec.Finally, "finally"))
		return
	}
	scene.Finally = graph
	for i := range c.spec.Finally {
		spec := &c.spec.Finally[i]
		ancestors := map[string]bool{}
		for _, a := range graph.Ancestors(spec.Name) {
			ancestors[a] = true
		}
		upstream := func(step string) bool { return main[step] || ancestors[step] }
		// Finally steps are indexed after the graph's, so that Index stays unique.
		scene.Steps[spec.Name] = c.compileStep(spec, len(c.spec.Steps)+i, path.Index(i), upstream)
	}
}

// IsFinally reports whether a step is a finally step.
func (s *Scene) IsFinally(name string) bool {
	if s.Finally == nil {
		return false
	}
	_, ok := s.Finally.Index(name)
	return ok
}

// Dependencies are the steps a step of the graph or a finally step waits for.
func (s *Scene) Dependencies(name string) []string {
	if s.IsFinally(name) {
		return s.Finally.Dependencies(name)
	}
	return s.Graph.Dependencies(name)
}

// Dependents are the steps that wait for a step of the graph or a finally step.
func (s *Scene) Dependents(name string) []string {
	if s.IsFinally(name) {
		return s.Finally.Dependents(name)
	}
	return s.Graph.Dependents(name)
}
