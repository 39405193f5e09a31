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

//nolint:goconst // test data reads best spelled out
package expr

import (
	"strings"
	"testing"
)

const mappingField = "spec.webhook.params.sprint"

func TestMappingEval(t *testing.T) {
	body := map[string]any{
		"sprint": float64(43),
		"name":   "Sprint 43",
		"ok":     true,
		"ratio":  0.5,
		"huge":   1e21,
		"items":  []any{"a", float64(1)},
		"obj":    map[string]any{"b": "x", "a": float64(1)},
		"none":   nil,
	}
	run := map[string]any{"outputs": map[string]any{"publish": map[string]any{"preview": "done"}}}
	cases := []struct {
		name, src, want string
	}{
		{"a whole number is written without a fraction or exponent", "body.sprint", "43"},
		{"a string is written as it is", "body.name", "Sprint 43"},
		{"a boolean is written as true or false", "body.ok", "true"},
		{"a fraction is written as JSON writes it", "body.ratio", "0.5"},
		{"a very large number keeps its exponent", "body.huge", "1e+21"},
		{"a list is written as JSON", "body.items", `["a",1]`},
		{"an object is written as JSON with sorted keys", "body.obj", `{"a":1,"b":"x"}`},
		{"null is written as empty", "body.none", ""},
		{"an int is written exactly", "9007199254740993", "9007199254740993"},
		{"a uint is written as a number", "1u", "1"},
		{"bytes are written in base64", "b'hi'", "aGk="},
		{"a map with int keys gets string keys", "{1: 'a'}", `{"1":"a"}`},
		{"a timestamp is written as RFC 3339", "timestamp('2026-01-02T03:04:05Z')", "2026-01-02T03:04:05Z"},
		{"a duration is written as CEL writes it", "duration('90m')", "5400s"},
		{"an absent optional is written as empty", "body.?missing", ""},
		{"a present optional is written as its value", "body.?name", "Sprint 43"},
		{"other variables are readable", "run.outputs.publish.preview", "done"},
		{"an expression combines values", "'sprint-' + string(int(body.sprint))", "sprint-43"},
		{"a nested whole double in JSON has no fraction", "[body.sprint, 2.0]", "[43,2]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, err := CompileMapping(mappingField, tc.src, "body", "run")
			if err != nil {
				t.Fatal(err)
			}
			got, err := m.Eval(map[string]any{"body": body, "run": run})
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("Eval(%s) = %q, want %q", tc.src, got, tc.want)
			}
		})
	}
}

func TestMappingErrors(t *testing.T) {
	cases := []struct {
		name, src string
		compiles  bool
		want      string
	}{
		{"a syntax error names the field", "body.", false, mappingField + ": invalid expression: ERROR: <input>:1:6: Syntax error:"},
		{"an undeclared variable is reported", "bdy.sprint", false, "undeclared reference to 'bdy'"},
		{"a missing key is an evaluation error", "body.nope", true, mappingField + ": cannot evaluate expression: no such key: nope"},
		{"a value JSON cannot hold is rejected", "0.0 / 0.0", true,
			mappingField + ": cannot use the value as a param: NaN is not a number JSON can hold"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, err := CompileMapping(mappingField, tc.src, "body")
			if (err == nil) != tc.compiles {
				t.Fatalf("CompileMapping error %v, want compiles %v", err, tc.compiles)
			}
			if tc.compiles {
				_, err = m.Eval(map[string]any{"body": map[string]any{}})
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v does not contain %q", err, tc.want)
			}
		})
	}
}
