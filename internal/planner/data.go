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
	"encoding/json"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/expr"
	"github.com/ergon-dev/ergon/internal/template"
)

// ResolveParams returns the Run's params with the Scene's defaults filled in. Params taken
// from Secrets are not among them: they exist only inside pods.
func ResolveParams(scene *ergonv1alpha1.SceneSpec, given map[string]string) map[string]string {
	params := map[string]string{}
	for _, p := range scene.Params {
		if v, ok := given[p.Name]; ok {
			params[p.Name] = v
		} else if p.Default != nil {
			params[p.Name] = *p.Default
		}
	}
	return params
}

// templateData is what step templates see: params, the steps recorded so far and the Run.
// It is built once per pass and kept current as steps end, so rendering many steps costs
// one conversion, not one per step.
func (p *planner) templateData() map[string]any {
	if p.data != nil {
		return p.data
	}
	d := template.Data{
		Params: p.params,
		Steps:  map[string]template.StepData{},
		Run: template.RunData{Name: p.f.Run.Name, Namespace: p.f.Run.Namespace, UID: string(p.f.Run.UID),
			Phase: string(ergonv1alpha1.RunRunning), FailedSteps: p.failedSteps()},
	}
	for name, s := range p.steps {
		d.Steps[name] = p.stepData(name, s)
	}
	p.data = d.Map()
	p.vars = expr.Vars{Params: p.params, Steps: map[string]map[string]any{}, Run: p.data[template.KindRun].(map[string]any)}
	for name, v := range p.data[template.KindSteps].(map[string]any) {
		p.vars.Steps[name] = v.(map[string]any)
	}
	return p.data
}

// exprVars is what `when` conditions see: the same data as templates.
func (p *planner) exprVars() expr.Vars {
	p.templateData()
	return p.vars
}

// refresh updates the data templates and conditions see after a step changed.
func (p *planner) refresh(name string) {
	if p.data == nil {
		return
	}
	one := template.Data{Steps: map[string]template.StepData{name: p.stepData(name, p.steps[name])}}.Map()
	entry := one[template.KindSteps].(map[string]any)[name].(map[string]any)
	p.data[template.KindSteps].(map[string]any)[name] = entry
	p.vars.Steps[name] = entry
}

func (p *planner) stepData(name string, s *ergonv1alpha1.StepStatus) template.StepData {
	value := p.value(name, s)
	return template.StepData{Output: value, Outputs: jsonFields(value), Decision: s.Decision, Phase: string(s.Phase)}
}

// value is a step's whole output: collected this pass (a pod's, a child Run's, a Gate's
// answer), kept in a ConfigMap, or the preview.
func (p *planner) value(name string, s *ergonv1alpha1.StepStatus) string {
	if v, ok := p.f.Values[name]; ok {
		return v
	}
	if s.PodName != "" {
		if out, ok := p.f.Outputs[s.PodName]; ok && out.Err == "" {
			return out.Value
		}
	}
	if c, ok := p.f.Children[s.ChildRun]; ok && s.ChildRun != "" {
		return c.Value
	}
	if g, ok := p.f.Gates[s.Gate]; ok && s.Gate != "" && g.Values != "" {
		return g.Values
	}
	if s.Output != nil {
		return s.Output.Preview
	}
	return ""
}

// jsonFields parses an output that is a JSON object into its fields, or a JSON array (a
// fan-out's) into its items; nil otherwise.
func jsonFields(value string) any {
	if len(value) > 0 && value[0] == '[' {
		var items []any
		if json.Unmarshal([]byte(value), &items) != nil {
			return nil
		}
		return items
	}
	if len(value) == 0 || value[0] != '{' {
		return nil
	}
	var fields map[string]any
	if json.Unmarshal([]byte(value), &fields) != nil {
		return nil
	}
	return fields
}
