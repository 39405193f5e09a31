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

//nolint:goconst // step names and phases read best spelled out in test data
package template

import (
	"strings"
	"testing"
)

func TestFunctions(t *testing.T) {
	cases := []struct {
		name, text, want string
	}{
		{"default replaces an empty value", `{{ .params.empty | default "none" }}`, "none"},
		{"default keeps a set value", `{{ .params.sprint | default "none" }}`, "42"},
		{"default replaces a zero number", `{{ default 7 0 }}`, "7"},
		{"quote writes a Go string literal", `{{ quote .params.quoted }}`, `"say \"it's\""`},
		{"quote writes each argument", `{{ quote "a" "b" }}`, `"a" "b"`},
		{"squote keeps a value one shell word", `{{ squote .params.quoted }}`, `'say "it'\''s"'`},
		{"trim removes surrounding space", `[{{ trim "  x y \n" }}]`, "[x y]"},
		{"upper upper-cases", `{{ upper .steps.review.decision }}`, "APPROVE"},
		{"lower lower-cases", `{{ lower "MiXeD" }}`, "mixed"},
		{"replace reads old, new, then the value", `{{ .run.name | replace "-" "_" }}`, "weekly_report_x7k2"},
		{"join joins a list from JSON", `{{ .steps.draft.outputs.tags | join ", " }}`, "infra, ml"},
		{"join writes numbers as written", `{{ join "+" .steps.draft.outputs.scores }}`, "1+2.5"},
		{"join writes a single value as it is", `{{ join "," .params.sprint }}`, "42"},
		{"toJson encodes compactly without HTML escapes", `{{ toJson .steps.draft.outputs.meta }}`, `{"author":"ada"}`},
		{"toJson keeps numbers and markup as they are", `{{ toJson .steps.draft.outputs.title }} {{ toJson .steps.draft.outputs.count }}`,
			`"Sprint <42> & more" 1000000`},
		{"toJson quotes a param", `{{ toJson .params.quoted }}`, `"say \"it's\""`},
		{"fromJson decodes a step's output", `{{ (fromJson .steps.fetch.output).title }}`, "Sprint 42"},
		{"fromJson keeps numbers as written", `{{ (fromJson .steps.fetch.output).points }}`, "13"},
		{"indent pads every line", `{{ indent 2 .params.lines }}`, "  a\n  b"},
		{"b64enc encodes base64", `{{ b64enc .params.sprint }}`, "NDI="},
		{"printf formats", `{{ printf "%s-%03d" .params.sprint 7 }}`, "42-007"},
		{"printf allows a modest width", `[{{ printf "%5s" "ab" }}]`, "[   ab]"},
		{"builtins still work", `{{ len .params.sprint }} {{ and true .params.sprint }} {{ index .params "sprint" }}`, "2 42 42"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := render(t, tc.text, data())
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestFunctionErrors(t *testing.T) {
	cases := []struct {
		name, text, want string
	}{
		{"fromJson rejects invalid JSON", `{{ fromJson "{nope" }}`, "error calling fromJson: invalid JSON"},
		{"fromJson rejects trailing values", `{{ fromJson "1 2" }}`, "invalid JSON: more than one value"},
		{"indent rejects a negative width", `{{ indent -1 "x" }}`, "indent width -1 is outside 0 to 1000"},
		{"indent rejects a huge width", `{{ indent 100000 "x" }}`, "indent width 100000 is outside 0 to 1000"},
		{"printf rejects star widths", `{{ printf "%*d" 100000000 1 }}`, "printf: * widths are not supported"},
		{"printf rejects huge precisions", `{{ printf "%.5000f" 1.0 }}`, "width or precision 5000 is more than 1000"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := render(t, tc.text, data())
			if err == nil {
				t.Fatalf("rendered %q, want an error containing %q", got, tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not contain %q", err, tc.want)
			}
		})
	}
}

func TestCheckFormat(t *testing.T) {
	cases := []struct {
		format string
		ok     bool
	}{
		{"%s", true},
		{"%%d %1000d", true},
		{"%-8.3f", true},
		{"%[2]s %[1]s", true},
		{"%1001d", false},
		{"%.1001f", false},
		{"%*d", false},
		{"%99999999999999999999d", false},
	}
	for _, tc := range cases {
		t.Run("format "+tc.format, func(t *testing.T) {
			if err := checkFormat(tc.format); (err == nil) != tc.ok {
				t.Errorf("checkFormat(%q) = %v, want ok %v", tc.format, err, tc.ok)
			}
		})
	}
}
