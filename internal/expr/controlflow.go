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
	"encoding/json"
	"reflect"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
)

// untilEnv declares the variables of a loop's until condition: those of conditions, and the
// iteration's output, its JSON value, its number, the previous iteration's output and, in a
// fan-out, the item. (loop is a reserved word of CEL: templates say .loop.iteration, CEL
// iteration.)
var untilEnv = mustEnv(
	cel.Variable("params", cel.MapType(cel.StringType, cel.StringType)),
	cel.Variable("steps", cel.MapType(cel.StringType, cel.DynType)),
	cel.Variable("run", cel.MapType(cel.StringType, cel.DynType)),
	cel.Variable("output", cel.StringType),
	cel.Variable("outputs", cel.DynType),
	cel.Variable("iteration", cel.IntType),
	cel.Variable("previous", cel.StringType),
	cel.Variable("item", cel.DynType),
)

// CompileList compiles src, a forEach expression: a CEL expression over params, steps and run
// that yields a list.
func CompileList(field, src string) (*Program, error) {
	checked, err := compile(conditionEnv, field, src)
	if err != nil {
		return nil, err
	}
	out := checked.OutputType()
	if out.Kind() != types.ListKind && !out.IsExactType(types.DynType) {
		return nil, &Error{Field: field, Detail: "must be an expression that yields a list, got " + typeName(out.String()) +
			"; for example steps.plan.outputs.files or params.names.split(',')"}
	}
	prg, err := program(conditionEnv, field, checked)
	if err != nil {
		return nil, err
	}
	refs, params := references(checked)
	return &Program{field: field, program: prg, refs: refs, params: params}, nil
}

// EvalList evaluates a forEach expression into its items, as encoding/json would decode them.
func (p *Program) EvalList(vars Vars) ([]any, error) {
	out, err := eval(p.program, p.field, baseVars(vars))
	if err != nil {
		return nil, err
	}
	if out.Type() != types.ListType {
		return nil, &Error{Field: p.field, Detail: "must evaluate to a list, got " + typeName(out.Type().TypeName())}
	}
	native, err := out.ConvertToNative(reflect.TypeFor[*structpb.Value]())
	if err != nil {
		return nil, &Error{Field: p.field, Detail: "the list cannot be turned into JSON: " + plain(err.Error())}
	}
	raw, err := protojson.Marshal(native.(*structpb.Value))
	if err != nil {
		return nil, &Error{Field: p.field, Detail: "the list cannot be turned into JSON: " + err.Error()}
	}
	var items []any
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, &Error{Field: p.field, Detail: "the list cannot be turned into JSON: " + err.Error()}
	}
	return items, nil
}

// CompileUntil compiles src, a loop's until condition: a boolean CEL expression over params,
// steps, run, output, outputs, iteration, previous and item.
func CompileUntil(field, src string) (*Program, error) {
	checked, err := compile(untilEnv, field, src)
	if err != nil {
		return nil, err
	}
	if out := checked.OutputType(); !out.IsExactType(types.BoolType) && !out.IsExactType(types.DynType) {
		return nil, &Error{Field: field, Detail: "must be a boolean expression, got " + typeName(out.String()) +
			"; for example outputs.verdict == 'pass'"}
	}
	prg, err := program(untilEnv, field, checked)
	if err != nil {
		return nil, err
	}
	refs, params := references(checked)
	return &Program{field: field, program: prg, refs: refs, params: params}, nil
}

// Iteration is what an until condition sees of the iteration that just ended.
type Iteration struct {
	// Output is the iteration's output; Outputs its JSON value, nil when it is not JSON.
	Output  string
	Outputs any
	// Iteration is the iteration's number, from 1; Previous the output of the one before.
	Iteration int64
	Previous  string
	// Item is the fan-out instance's item.
	Item any
}

// EvalUntil evaluates an until condition after an iteration.
func (p *Program) EvalUntil(vars Vars, it Iteration) (bool, error) {
	outputs := it.Outputs
	if outputs == nil {
		outputs = map[string]any{}
	}
	all := baseVars(vars)
	all["output"], all["outputs"], all["iteration"], all["previous"], all["item"] = it.Output, outputs, it.Iteration, it.Previous, it.Item
	out, err := eval(p.program, p.field, all)
	if err != nil {
		return false, err
	}
	b, ok := out.(types.Bool)
	if !ok {
		return false, &Error{Field: p.field, Detail: "must evaluate to a boolean, got " + typeName(out.Type().TypeName())}
	}
	return bool(b), nil
}

// baseVars are the variables every Scene expression sees.
func baseVars(vars Vars) map[string]any {
	return map[string]any{"params": orEmpty(vars.Params), "steps": orEmpty(vars.Steps), "run": orEmpty(vars.Run)}
}
