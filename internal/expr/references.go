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

package expr

import (
	"fmt"
	"slices"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/types"
)

// stepFields are the keys of steps.NAME.
var stepFields = []string{"output", "outputs", "decision", "phase"}

// stepRef is a step an expression reads and, when it selects one, the key of the step it
// reads.
type stepRef struct {
	step, field string
}

// Scope is what the condition of one step may read.
type Scope struct {
	// Params are the names of the Scene's params.
	Params []string
	// Steps are the names of all steps of the Scene.
	Steps []string
	// Upstream reports whether a step is one the condition's step depends on, directly or
	// through other steps: only those have ended when it is evaluated. Nil allows every step.
	Upstream func(step string) bool
}

// StepReferences returns the names of the steps the expression reads, as steps.NAME,
// steps['NAME'] or steps.?NAME, each once, in the order they appear. Steps picked by a key
// computed at run time cannot be told and are left out.
func (p *Program) StepReferences() []string {
	var names []string
	for _, r := range p.refs {
		if !slices.Contains(names, r.step) {
			names = append(names, r.step)
		}
	}
	return names
}

// ParamReferences returns the names of the params the expression reads, like StepReferences.
func (p *Program) ParamReferences() []string {
	return slices.Clone(p.params)
}

// Check reports the first thing the condition reads that cannot be there: an unknown param,
// step or step key, or a step its step does not depend on.
func (p *Program) Check(scope Scope) error {
	for _, name := range p.params {
		if !slices.Contains(scope.Params, name) {
			return &Error{Field: p.field, Detail: fmt.Sprintf(
				"expression references unknown param %q; declare it in spec.params", name)}
		}
	}
	for _, r := range p.refs {
		switch {
		case !slices.Contains(scope.Steps, r.step):
			return &Error{Field: p.field, Detail: fmt.Sprintf("expression references unknown step %q", r.step)}
		case scope.Upstream != nil && !scope.Upstream(r.step):
			return &Error{Field: p.field, Detail: fmt.Sprintf(
				"expression references step %q, which this step does not depend on; "+
					"add it to dependsOn, directly or through another step", r.step)}
		case r.field != "" && !slices.Contains(stepFields, r.field):
			return &Error{Field: p.field, Detail: fmt.Sprintf(
				"expression references unknown field %q of step %q; use output, outputs, decision or phase",
				r.field, r.step)}
		}
	}
	return nil
}

// references walks a checked expression for the steps and params it reads.
func references(checked *cel.Ast) ([]stepRef, []string) {
	w := &refWalker{}
	w.walk(checked.NativeRep().Expr(), nil)
	return w.steps, w.params
}

type refWalker struct {
	steps  []stepRef
	params []string
}

// walk visits e. shadowed names the comprehension variables in scope, which hide the
// variables of the same name: in [1].all(steps, steps > 0) steps is not the steps map.
func (w *refWalker) walk(e ast.Expr, shadowed []string) {
	if step, ok := member(e, "steps", shadowed); ok {
		w.addStep(stepRef{step: step})
		return
	}
	if param, ok := member(e, "params", shadowed); ok {
		if !slices.Contains(w.params, param) {
			w.params = append(w.params, param)
		}
		return
	}
	// steps.NAME.FIELD, in any of the ways to select a key.
	if operand, key, ok := selection(e); ok {
		if step, isStep := member(operand, "steps", shadowed); isStep {
			w.addStep(stepRef{step: step, field: key})
			return
		}
	}
	switch e.Kind() {
	case ast.SelectKind:
		w.walk(e.AsSelect().Operand(), shadowed)
	case ast.CallKind:
		call := e.AsCall()
		if call.IsMemberFunction() {
			w.walk(call.Target(), shadowed)
		}
		for _, a := range call.Args() {
			w.walk(a, shadowed)
		}
	case ast.ComprehensionKind:
		comp := e.AsComprehension()
		w.walk(comp.IterRange(), shadowed)
		w.walk(comp.AccuInit(), shadowed)
		inner := append(slices.Clip(shadowed), comp.IterVar(), comp.AccuVar())
		if comp.HasIterVar2() {
			inner = append(inner, comp.IterVar2())
		}
		w.walk(comp.LoopCondition(), inner)
		w.walk(comp.LoopStep(), inner)
		w.walk(comp.Result(), inner)
	case ast.ListKind:
		for _, el := range e.AsList().Elements() {
			w.walk(el, shadowed)
		}
	case ast.MapKind:
		for _, entry := range e.AsMap().Entries() {
			w.walk(entry.AsMapEntry().Key(), shadowed)
			w.walk(entry.AsMapEntry().Value(), shadowed)
		}
	case ast.StructKind:
		for _, f := range e.AsStruct().Fields() {
			w.walk(f.AsStructField().Value(), shadowed)
		}
	}
}

// member returns KEY when e selects a constant key of the variable: variable.KEY,
// variable['KEY'], variable.?KEY or variable[?'KEY'].
func member(e ast.Expr, variable string, shadowed []string) (string, bool) {
	operand, key, ok := selection(e)
	if !ok || operand.Kind() != ast.IdentKind || operand.AsIdent() != variable || slices.Contains(shadowed, variable) {
		return "", false
	}
	return key, true
}

// selection splits e into the operand and constant key it selects, when it selects one.
func selection(e ast.Expr) (ast.Expr, string, bool) {
	switch e.Kind() {
	case ast.SelectKind:
		sel := e.AsSelect()
		return sel.Operand(), sel.FieldName(), true
	case ast.CallKind:
		call := e.AsCall()
		switch call.FunctionName() {
		case operators.Index, operators.OptIndex, operators.OptSelect:
			if args := call.Args(); len(args) == 2 && args[1].Kind() == ast.LiteralKind {
				if key, ok := args[1].AsLiteral().(types.String); ok {
					return args[0], string(key), true
				}
			}
		}
	}
	return nil, "", false
}

func (w *refWalker) addStep(r stepRef) {
	if !slices.Contains(w.steps, r) {
		w.steps = append(w.steps, r)
	}
}
