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

// Package expr compiles and evaluates the CEL expressions of Scenes and Triggers: a step's
// `when` condition, over params, steps and run, and a Trigger's param mappings, over the
// variables the Trigger offers (the webhook's body, the finished Run).
//
// Expressions compile at admission, where their errors name the field, and are evaluated in
// the controller under a cost limit, so an expression written to loop for hours stops with an
// error after a bounded amount of work.
package expr

import (
	"errors"
	"fmt"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/ext"
	"github.com/google/cel-go/interpreter"
)

// CostLimit bounds the work of one evaluation, in CEL's cost units (about one per operation,
// more for work proportional to string and list sizes). It is the per-expression limit the
// Kubernetes API server uses for CRD validation rules: far above what a condition needs, far
// below what would hold up the controller.
const CostLimit = 1_000_000

// Error is a problem with one expression: it does not compile, has the wrong type, reads
// data that will not be there, or fails to evaluate.
type Error struct {
	// Field is the path of the expression, for example spec.steps[3].when.
	Field string
	// Detail says what is wrong.
	Detail string
}

// Error returns "FIELD: DETAIL".
func (e *Error) Error() string {
	return e.Field + ": " + e.Detail
}

// Vars are the variables of a condition.
type Vars struct {
	// Params are the Run's params by name, secrets excluded.
	Params map[string]string
	// Steps are the finished steps by name. Each has the keys output (string), outputs (the
	// fields of a JSON output), decision (a gate's option) and phase.
	Steps map[string]map[string]any
	// Run describes the Run, for example name, namespace and uid.
	Run map[string]any
}

// conditionEnv declares the variables of conditions. An Env is safe for concurrent use and
// costly to build, so there is one.
var conditionEnv = mustEnv(
	cel.Variable("params", cel.MapType(cel.StringType, cel.StringType)),
	cel.Variable("steps", cel.MapType(cel.StringType, cel.DynType)),
	cel.Variable("run", cel.MapType(cel.StringType, cel.DynType)),
)

// mustEnv builds an environment with the language features every Ergon expression has:
// string functions, optional fields (steps.?review.decision.orValue("")), and numbers that
// compare across int and double, as JSON numbers arrive as doubles.
func mustEnv(opts ...cel.EnvOption) *cel.Env {
	env, err := cel.NewEnv(append([]cel.EnvOption{
		ext.Strings(),
		cel.OptionalTypes(),
		cel.CrossTypeNumericComparisons(true),
	}, opts...)...)
	if err != nil {
		// The options are constant: this fails in every test or never.
		panic(fmt.Sprintf("expr: building the CEL environment: %v", err))
	}
	return env
}

// Program is a compiled condition. It is safe for concurrent use.
type Program struct {
	field   string
	program cel.Program
	refs    []stepRef
	params  []string
}

// CompileCondition compiles src, the value of the field at the given path, as a condition:
// a CEL expression of type bool over params, steps and run.
func CompileCondition(field, src string) (*Program, error) {
	checked, err := compile(conditionEnv, field, src)
	if err != nil {
		return nil, err
	}
	if out := checked.OutputType(); !out.IsExactType(types.BoolType) && !out.IsExactType(types.DynType) {
		// Dyn passes here and is checked when evaluated: steps.x.outputs.ok may well be a bool.
		return nil, &Error{Field: field, Detail: "must be a boolean expression, got " + typeName(out.String())}
	}
	prg, err := program(conditionEnv, field, checked)
	if err != nil {
		return nil, err
	}
	refs, params := references(checked)
	return &Program{field: field, program: prg, refs: refs, params: params}, nil
}

// Field returns the path of the field the expression came from.
func (p *Program) Field() string {
	return p.field
}

// Eval evaluates the condition. A step the expression reads but vars lack is an error, not
// false, so a condition is never decided on data that is not there.
func (p *Program) Eval(vars Vars) (bool, error) {
	out, err := eval(p.program, p.field, map[string]any{
		"params": orEmpty(vars.Params),
		"steps":  orEmpty(vars.Steps),
		"run":    orEmpty(vars.Run),
	})
	if err != nil {
		return false, err
	}
	b, ok := out.(types.Bool)
	if !ok {
		return false, &Error{Field: p.field, Detail: "must evaluate to a boolean, got " + typeName(out.Type().TypeName())}
	}
	return bool(b), nil
}

// orEmpty gives CEL an empty map for a nil one, so that a lookup fails as "no such key".
func orEmpty[V any](m map[string]V) map[string]V {
	if m == nil {
		return map[string]V{}
	}
	return m
}

func compile(env *cel.Env, field, src string) (*cel.Ast, error) {
	checked, iss := env.Compile(src)
	if iss.Err() != nil {
		return nil, &Error{Field: field, Detail: "invalid expression: " + typeName(iss.Err().Error())}
	}
	return checked, nil
}

func program(env *cel.Env, field string, checked *cel.Ast) (cel.Program, error) {
	prg, err := env.Program(checked, cel.CostLimit(CostLimit))
	if err != nil {
		return nil, &Error{Field: field, Detail: "invalid expression: " + err.Error()}
	}
	return prg, nil
}

// eval runs a program and tells a cost limit apart from other failures, which need a
// different fix.
func eval(prg cel.Program, field string, vars map[string]any) (ref.Val, error) {
	out, _, err := prg.Eval(vars)
	if err != nil {
		if cancelled, ok := errors.AsType[interpreter.EvalCancelledError](err); ok &&
			cancelled.Cause == interpreter.CostLimitExceeded {
			return nil, &Error{Field: field, Detail: fmt.Sprintf(
				"expression exceeded its cost limit of %d; make it do less work", CostLimit)}
		}
		return nil, &Error{Field: field, Detail: "cannot evaluate expression: " + plain(err.Error())}
	}
	return out, nil
}
