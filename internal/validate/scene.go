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

package validate

import (
	"fmt"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/agentspec"
	"github.com/ergon-dev/ergon/internal/closure"
	"github.com/ergon-dev/ergon/internal/compile"
	"github.com/ergon-dev/ergon/internal/schemacheck"
)

// Scene checks what one Scene spec decides alone: its graph, templates and
// conditions (compiled as the Run engine compiles them), that no param or output can rewrite
// a container step's program (compile.CheckPrograms), the models its agent steps name, and the
// tools they may use, for every step wherever it is (spec.steps and spec.finally).
func Scene(spec *ergonv1alpha1.SceneSpec) field.ErrorList {
	_, errs := compile.Compile(spec)
	errs = append(errs, compile.CheckPrograms(spec)...)
	errs = append(errs, validateModels(spec)...)
	errs = append(errs, validateMemory(spec)...)
	errs = append(errs, validateContainers(spec)...)
	for path, s := range closure.Steps(spec) {
		if s.Agent == nil {
			continue
		}
		agent := path.Child("agent")
		model := s.Agent.Model
		if model == "" {
			model = "default"
		}
		if _, ok := spec.Models[model]; !ok {
			errs = append(errs, field.Invalid(agent.Child("model"), model,
				fmt.Sprintf("no model %q in spec.models; define it there or name another", model)))
		}
		errs = append(errs, validateOutputContract(agent.Child("output"), s.Agent.Output)...)
		errs = append(errs, validateTools(agent.Child("tools"), spec, s.Agent.Tools)...)
		errs = append(errs, validateConversation(agent, s.Agent)...)
	}
	return errs
}

// validateOutputContract refuses formats the agent runtime does not know and schemas that do
// not compile, which would otherwise fail every attempt of the step.
func validateOutputContract(path *field.Path, o *ergonv1alpha1.OutputContract) field.ErrorList {
	if o == nil {
		return nil
	}
	var errs field.ErrorList
	check := func(p *field.Path, format string, schema *apiextensionsv1.JSON) {
		if format != "" && !slices.Contains(agentspec.Formats, format) {
			errs = append(errs, field.NotSupported(p.Child("format"), format, agentspec.Formats))
		}
		if schema != nil {
			if _, err := schemacheck.Compile(schema.Raw); err != nil {
				errs = append(errs, field.Invalid(p.Child("schema"), string(schema.Raw), err.Error()+"; fix the JSON Schema"))
			}
		}
	}
	check(path, o.Format, o.Schema)
	for i, n := range o.Outputs {
		check(path.Child("outputs").Index(i), n.Format, n.Schema)
	}
	return errs
}

// SceneCallsIn refuses a Scene whose calls, through other Scenes of its namespace, come
// back to a Scene already on the chain (A calls B calls A), naming the cycle; calls are
// sub-scene steps and Scene tools, in spec.steps and spec.finally. Scenes it calls that do not
// exist yet only give warnings: GitOps applies objects in any order.
func SceneCallsIn(scene *ergonv1alpha1.Scene, namespace []ergonv1alpha1.Scene) (field.ErrorList, []string) {
	// Objects never fails, and the walk never asks it for the Scene itself.
	c, _ := closure.Walk(scene.Name, &scene.Spec, closure.Objects(namespace, nil))
	return SceneCalls(c)
}

// SceneCalls words what a walk found of a Scene's calls: its call cycle, as an error at
// the field where the chain starts, and the Scenes it calls that do not exist yet, as
// warnings.
func SceneCalls(c closure.Closure) (field.ErrorList, []string) {
	var errs field.ErrorList
	if cy := c.Cycle; cy != nil {
		errs = append(errs, field.Invalid(cy.Path, cy.Scenes[1], fmt.Sprintf(
			"Scenes call each other in a cycle: %s; a Run of it would never end", strings.Join(cy.Scenes, " -> "))))
	}
	var warnings []string
	for _, m := range closure.OfKind(c.Missing, closure.KindScene) {
		warnings = append(warnings, fmt.Sprintf("%s: Scene %q does not exist yet%s; Runs of this Scene wait for it", m.Path, m.Name, m.Where()))
	}
	return errs, warnings
}
