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

package humaninput

import (
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// release is a schema with every kind of field.
const release = `{
  "type": "object",
  "title": "Release",
  "required": ["version", "channel"],
  "additionalProperties": false,
  "properties": {
    "version": {"type": "string", "title": "Version", "pattern": "^v[0-9]+\\.[0-9]+$"},
    "channel": {"type": "string", "enum": ["stable", "beta"], "default": "beta"},
    "replicas": {"type": "integer", "minimum": 1, "maximum": 10, "default": 2},
    "ratio": {"type": "number", "maximum": 1},
    "notify": {"type": "boolean", "default": false},
    "when": {"type": "string", "format": "date"},
    "owner": {"type": "string", "format": "email"},
    "notes": {"type": "string", "format": "multiline", "maxLength": 10},
    "reviewers": {"type": "array", "minItems": 1, "maxItems": 3, "items": {"type": "string", "minLength": 2}},
    "limits": {"type": "object", "properties": {
      "cpu": {"type": "string", "default": "500m"},
      "memory": {"type": "string"}
    }}
  }
}`

func TestParse(t *testing.T) {
	path := field.NewPath("spec", "input")
	f, errs := Parse([]byte(release), path)
	if len(errs) > 0 {
		t.Fatalf("Parse(release) = %v", errs)
	}
	if f.Type != TypeObject || len(f.Properties) != 10 || f.Properties["reviewers"].Items.Type != TypeString ||
		f.Properties["limits"].Properties["cpu"].Default != "500m" || !f.Properties["notify"].HasDefault {
		t.Fatalf("Parse(release) = %+v", f)
	}

	for _, tc := range []struct {
		name, schema string
		// want are substrings of the errors, each its own error.
		want []string
	}{
		{"not JSON", `{`, []string{"spec.input: Invalid value && not JSON"}},
		{"top not an object", `{"type": "string"}`, []string{`spec.input.type: Invalid value: "string"`}},
		{"no type", `{"type": "object", "properties": {"a": {}}}`, []string{"spec.input.properties[a].type: Required value"}},
		{"unknown type", `{"type": "object", "properties": {"a": {"type": "file"}}}`,
			[]string{`spec.input.properties[a].type: Unsupported value: "file"`}},
		{"unknown keyword", `{"type": "object", "properties": {"a": {"type": "string", "oneOf": []}}}`,
			[]string{`spec.input.properties[a].oneOf: Unsupported value: "oneOf"`}},
		{"object without properties", `{"type": "object"}`, []string{"spec.input.properties: Required value"}},
		{"array without items", `{"type": "object", "properties": {"a": {"type": "array"}}}`,
			[]string{"spec.input.properties[a].items: Required value"}},
		{"bound of another type", `{"type": "object", "properties": {"a": {"type": "string", "minimum": 1}}}`,
			[]string{"spec.input.properties[a].minimum: Invalid value && not string"}},
		{"bad pattern", `{"type": "object", "properties": {"a": {"type": "string", "pattern": "("}}}`,
			[]string{"spec.input.properties[a].pattern: Invalid value"}},
		{"unknown format", `{"type": "object", "properties": {"a": {"type": "string", "format": "color"}}}`,
			[]string{`spec.input.properties[a].format: Unsupported value: "color"`}},
		{"default of the wrong type", `{"type": "object", "properties": {"a": {"type": "integer", "default": "x"}}}`,
			[]string{"spec.input.properties[a].default: Invalid value && must be an integer"}},
		{"default outside the enum", `{"type": "object", "properties": {"a": {"type": "string", "enum": ["x"], "default": "y"}}}`,
			[]string{`spec.input.properties[a].default: Unsupported value: "y"`}},
		{"enum of the wrong type", `{"type": "object", "properties": {"a": {"type": "integer", "enum": [1, "two"]}}}`,
			[]string{"spec.input.properties[a].enum[1]: Invalid value"}},
		{"required names no field", `{"type": "object", "required": ["b"], "properties": {"a": {"type": "string"}}}`,
			[]string{`spec.input.required[0]: Not found: "b"`}},
		{"open additionalProperties", `{"type": "object", "additionalProperties": true, "properties": {"a": {"type": "string"}}}`,
			[]string{"spec.input.additionalProperties: Invalid value"}},
		{"a name templates cannot read", `{"type": "object", "properties": {"a-b": {"type": "string"}}}`,
			[]string{"spec.input.properties[a-b]: Invalid value"}},
		{"too deep", `{"type": "object", "properties": {"a": {"type": "object", "properties": {"b": {"type": "object", "properties": {
			"c": {"type": "object", "properties": {"d": {"type": "object", "properties": {"e": {"type": "object", "properties": {
			"f": {"type": "string"}}}}}}}}}}}}}`, []string{"nest at most 4 deep"}},
		{"too many fields", `{"type": "object", "properties": {` + manyFields(MaxFields+1) + `}}`,
			[]string{"spec.input.properties: Too many: 65: must have at most 64 items"}},
		{"too long", `{"type": "object", "description": "` + strings.Repeat("x", MaxSchemaBytes) + `"}`,
			[]string{"spec.input: Too long"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errs := Parse([]byte(tc.schema), path)
			if len(errs) != len(tc.want) {
				t.Fatalf("Parse = %v, want %d errors", errs, len(tc.want))
			}
			for i, want := range tc.want {
				if !containsAll(errs[i].Error(), want) {
					t.Errorf("error %d = %q, want it to contain %q", i, errs[i].Error(), want)
				}
			}
		})
	}
}

// containsAll reports whether s contains each of the " && "-separated parts of want.
func containsAll(s, want string) bool {
	for part := range strings.SplitSeq(want, " && ") {
		if !strings.Contains(s, part) {
			return false
		}
	}
	return true
}

func manyFields(n int) string {
	fields := make([]string, n)
	for i := range fields {
		fields[i] = `"f` + strconv.Itoa(i) + `": {"type": "string"}`
	}
	return strings.Join(fields, ",")
}

func mustParse(t *testing.T, schema string) *Field {
	t.Helper()
	f, errs := Parse([]byte(schema), field.NewPath("input"))
	if len(errs) > 0 {
		t.Fatalf("Parse: %v", errs)
	}
	return f
}

func TestValidate(t *testing.T) {
	f := mustParse(t, release)
	path := field.NewPath("spec", "decision", "values")
	for _, tc := range []struct {
		name, values string
		want         []string
	}{
		{"right", `{"version": "v1.2", "channel": "stable", "replicas": 3, "ratio": 0.5, "notify": true, "when": "2026-12-03",
			"owner": "ada@example.com", "notes": "ok", "reviewers": ["al", "bo"], "limits": {"cpu": "1"}}`, nil},
		{"an integer written 3.0", `{"version": "v1.2", "channel": "beta", "replicas": 3.0}`, nil},
		{"missing required", `{"channel": "beta"}`, []string{"spec.decision.values.version: Required value: Version is required"}},
		{"not an object", `["v1.2"]`, []string{"spec.decision.values: Invalid value && must be an object"}},
		{"undeclared field", `{"version": "v1.2", "channel": "beta", "extra": 1}`,
			[]string{`spec.decision.values.extra: Unsupported value: "extra"`}},
		{"pattern", `{"version": "1.2", "channel": "beta"}`, []string{`spec.decision.values.version: Invalid value: "1.2": must match`}},
		{"enum", `{"version": "v1.2", "channel": "nightly"}`,
			[]string{`spec.decision.values.channel: Unsupported value: "nightly": supported values: "stable", "beta"`}},
		{"not an integer", `{"version": "v1.2", "channel": "beta", "replicas": 2.5}`,
			[]string{"spec.decision.values.replicas: Invalid value && must be an integer"}},
		{"below the minimum", `{"version": "v1.2", "channel": "beta", "replicas": 0}`,
			[]string{"spec.decision.values.replicas: Invalid value: 0: must be at least 1"}},
		{"above the maximum", `{"version": "v1.2", "channel": "beta", "ratio": 1.5}`,
			[]string{"spec.decision.values.ratio: Invalid value: 1.5: must be at most 1"}},
		{"a string for a boolean", `{"version": "v1.2", "channel": "beta", "notify": "yes"}`,
			[]string{"spec.decision.values.notify: Invalid value && must be a boolean"}},
		{"null", `{"version": null, "channel": "beta"}`, []string{"spec.decision.values.version: Invalid value: null"}},
		{"date", `{"version": "v1.2", "channel": "beta", "when": "tomorrow"}`,
			[]string{"spec.decision.values.when: Invalid value && must be a date"}},
		{"email", `{"version": "v1.2", "channel": "beta", "owner": "Ada <ada@example.com>"}`,
			[]string{"spec.decision.values.owner: Invalid value && email address"}},
		{"maxLength counts characters", `{"version": "v1.2", "channel": "beta", "notes": "ééééééééééé"}`,
			[]string{"spec.decision.values.notes: Too long: may not be more than 10 bytes"}},
		{"an item too short", `{"version": "v1.2", "channel": "beta", "reviewers": ["al", "b"]}`,
			[]string{"spec.decision.values.reviewers[1]: Invalid value && at least 2 characters"}},
		{"too few items", `{"version": "v1.2", "channel": "beta", "reviewers": []}`,
			[]string{"spec.decision.values.reviewers: Invalid value: 0: needs at least 1 items"}},
		{"too many items", `{"version": "v1.2", "channel": "beta", "reviewers": ["aa", "bb", "cc", "dd"]}`,
			[]string{"spec.decision.values.reviewers: Too many: 4"}},
		{"nested undeclared", `{"version": "v1.2", "channel": "beta", "limits": {"gpu": "1"}}`,
			[]string{`spec.decision.values.limits.gpu: Unsupported value: "gpu"`}},
		{"several at once", `{"channel": 3, "replicas": "two"}`, []string{
			"spec.decision.values.version: Required value",
			"spec.decision.values.channel: Invalid value",
			"spec.decision.values.replicas: Invalid value"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := DecodeValues([]byte(tc.values))
			if err != nil {
				t.Fatal(err)
			}
			errs := f.Validate(v, path)
			if len(errs) != len(tc.want) {
				t.Fatalf("Validate = %v, want %d errors", errs, len(tc.want))
			}
			for i, want := range tc.want {
				if !containsAll(errs[i].Error(), want) {
					t.Errorf("error %d = %q, want it to contain %q", i, errs[i].Error(), want)
				}
			}
		})
	}
}

func TestCompleteAndDefaults(t *testing.T) {
	f := mustParse(t, release)
	v, _ := DecodeValues([]byte(`{"version": "v1.2", "limits": {"memory": "1Gi"}, "replicas": 5}`))
	got, err := Canonical(f.Complete(v))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"channel":"beta","limits":{"cpu":"500m","memory":"1Gi"},"notify":false,"replicas":5,"version":"v1.2"}`
	if got != want {
		t.Errorf("Complete = %s, want %s", got, want)
	}

	// A timeout cannot take defaults the schema lacks: version has none.
	_, errs := f.Defaults(field.NewPath("spec", "gate", "input"))
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "spec.gate.input.version: Required value: required, with no default") {
		t.Errorf("Defaults = %v, want one error naming version", errs)
	}
	all := mustParse(t, `{"type": "object", "required": ["a"], "properties": {"a": {"type": "integer", "default": 3},
		"b": {"type": "object", "default": {}, "properties": {"c": {"type": "boolean", "default": true}}}}}`)
	values, errs := all.Defaults(field.NewPath("input"))
	got, _ = Canonical(values)
	if len(errs) > 0 || got != `{"a":3,"b":{"c":true}}` {
		t.Errorf("Defaults = %s, %v", got, errs)
	}
}

func TestCanonical(t *testing.T) {
	for _, tc := range []struct{ a, b string }{
		{`{"b": 1, "a": [1.0, "x"]}`, `{"a": [1, "x"], "b": 1e0}`},
		{`{"n": 0.50}`, `{"n": 0.5}`},
	} {
		va, _ := DecodeValues([]byte(tc.a))
		vb, _ := DecodeValues([]byte(tc.b))
		ca, _ := Canonical(va)
		cb, _ := Canonical(vb)
		if ca != cb {
			t.Errorf("Canonical(%s) = %s, Canonical(%s) = %s; want them equal", tc.a, ca, tc.b, cb)
		}
	}
	va, _ := DecodeValues([]byte(`{"a": "x"}`))
	vb, _ := DecodeValues([]byte(`{"a": "y"}`))
	if ca, cb := must(Canonical(va)), must(Canonical(vb)); ca == cb {
		t.Errorf("Canonical of different values = %s for both", ca)
	}
}

func must(s string, err error) string {
	if err != nil {
		panic(err)
	}
	return s
}
