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
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
)

// Mapping is a compiled expression that computes a param value, such as a webhook Trigger's
// body.sprint. It is safe for concurrent use.
type Mapping struct {
	field   string
	program cel.Program
}

// CompileMapping compiles src, the value of the field at the given path, as an expression
// over the named variables, each of any type: CompileMapping(f, "body.sprint", "body").
func CompileMapping(field, src string, vars ...string) (*Mapping, error) {
	opts := make([]cel.EnvOption, 0, len(vars))
	for _, v := range vars {
		opts = append(opts, cel.Variable(v, cel.DynType))
	}
	// Each set of variables needs its own environment; Triggers have a few fixed sets, and
	// admission compiles each mapping once.
	env := mustEnv(opts...)
	checked, err := compile(env, field, src)
	if err != nil {
		return nil, err
	}
	prg, err := program(env, field, checked)
	if err != nil {
		return nil, err
	}
	return &Mapping{field: field, program: prg}, nil
}

// Field returns the path of the field the expression came from.
func (m *Mapping) Field() string {
	return m.field
}

// Eval evaluates the mapping over vars and returns its value as a param: strings as they are,
// whole numbers without an exponent, other numbers as JSON writes them, booleans as true or
// false, null as empty, bytes in base64, and lists and maps as JSON.
func (m *Mapping) Eval(vars map[string]any) (string, error) {
	out, err := eval(m.program, m.field, vars)
	if err != nil {
		return "", err
	}
	s, err := stringify(out)
	if err != nil {
		return "", &Error{Field: m.field, Detail: "cannot use the value as a param: " + err.Error()}
	}
	return s, nil
}

// stringify writes a CEL value as a param value.
func stringify(v ref.Val) (string, error) {
	native, err := toNative(v)
	if err != nil {
		return "", err
	}
	switch n := native.(type) {
	case nil:
		return "", nil
	case string:
		return n, nil
	case []byte:
		return base64.StdEncoding.EncodeToString(n), nil
	case []any, map[string]any:
		b, err := json.Marshal(n)
		if err != nil {
			return "", err
		}
		return string(b), nil
	default:
		return formatScalar(n), nil
	}
}

// formatScalar writes a bool or number as toNative converted it, for people: 43, not 4.3e+01.
func formatScalar(v any) string {
	if f, ok := v.(float64); ok {
		// Only fractions and very large numbers get here, and never NaN or infinities, which
		// toNative rejects: JSON writes them the usual way.
		b, _ := json.Marshal(f)
		return string(b)
	}
	return fmt.Sprint(v)
}

// toNative converts a CEL value to what encoding/json writes: integers stay exact, whole
// doubles are written without an exponent, map keys become strings.
func toNative(v ref.Val) (any, error) {
	switch v := v.(type) {
	case types.String:
		return string(v), nil
	case types.Bool:
		return bool(v), nil
	case types.Int:
		return int64(v), nil
	case types.Uint:
		return uint64(v), nil
	case types.Double:
		f := float64(v)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("%v is not a number JSON can hold", f)
		}
		if f == math.Trunc(f) && math.Abs(f) < 1e21 {
			return json.Number(strconv.FormatFloat(f, 'f', -1, 64)), nil
		}
		return f, nil
	case types.Bytes:
		return []byte(v), nil
	case types.Null:
		return nil, nil
	case *types.Optional:
		if !v.HasValue() {
			return nil, nil
		}
		return toNative(v.GetValue())
	case traits.Lister:
		size, _ := v.Size().(types.Int)
		out := make([]any, 0, int(size))
		for it := v.Iterator(); it.HasNext() == types.True; {
			e, err := toNative(it.Next())
			if err != nil {
				return nil, err
			}
			out = append(out, e)
		}
		return out, nil
	case traits.Mapper:
		out := map[string]any{}
		for it := v.Iterator(); it.HasNext() == types.True; {
			k := it.Next()
			key, err := stringify(k)
			if err != nil {
				return nil, err
			}
			e, err := toNative(v.Get(k))
			if err != nil {
				return nil, err
			}
			out[key] = e
		}
		return out, nil
	}
	// Timestamps, durations and types: what CEL's string() makes of them.
	if s, ok := v.ConvertToType(types.StringType).(types.String); ok {
		return string(s), nil
	}
	return nil, fmt.Errorf("a value of type %s cannot be written as a param", typeName(v.Type().TypeName()))
}
