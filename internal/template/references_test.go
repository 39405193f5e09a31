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
	"slices"
	"testing"
)

func TestReferences(t *testing.T) {
	param := func(name string) Ref { return Ref{Kind: KindParams, Name: name} }
	step := func(name, field, key string) Ref { return Ref{Kind: KindSteps, Name: name, Field: field, Key: key} }
	cases := []struct {
		name, text string
		want       []Ref
	}{
		{"plain text reads nothing", "echo hi", nil},
		{"a param is read", "{{ .params.sprint }}", []Ref{param("sprint")}},
		{"a step's output is read", "{{ .steps.fetch.output }}", []Ref{step("fetch", "output", "")}},
		{"a key of a step's outputs is read", "{{ .steps.draft.outputs.title.text }}",
			[]Ref{step("draft", "outputs", "title")}},
		{"a run field is read", "{{ .run.uid }}", []Ref{{Kind: KindRun, Name: "uid"}}},
		{"an unknown top-level name is reported as its own kind", "{{ .parms.x }}", []Ref{{Kind: "parms", Name: "x"}}},
		{"each reference is listed once in first-appearance order",
			"{{ .params.b }}{{ .params.a }}{{ .params.b }}", []Ref{param("b"), param("a")}},
		{"function arguments and piped values are read",
			`{{ .params.a | default .params.b | printf "%s%s" .params.c }}`,
			[]Ref{param("a"), param("b"), param("c")}},
		{"nested parenthesized pipelines are read",
			`{{ upper (printf "%s-%s" .params.a (lower .run.name)) }}`,
			[]Ref{param("a"), {Kind: KindRun, Name: "name"}}},
		{"if conditions and both branches are read",
			`{{ if eq .steps.review.decision "approve" }}{{ .params.yes }}{{ else }}{{ .params.no }}{{ end }}`,
			[]Ref{step("review", "decision", ""), param("yes"), param("no")}},
		{"with moves dot to what it reads",
			"{{ with .steps.draft.outputs }}{{ .title }}{{ end }}",
			[]Ref{step("draft", "outputs", ""), step("draft", "outputs", "title")}},
		{"else with is read",
			"{{ with .params.a }}{{ . }}{{ else with .params.b }}{{ . }}{{ end }}",
			[]Ref{param("a"), param("b")}},
		{"range reads its list, and $ reaches the root inside it",
			"{{ range .steps.draft.outputs.tags }}{{ .name }}{{ $.params.sep }}{{ end }}",
			[]Ref{step("draft", "outputs", "tags"), param("sep")}},
		{"variables carry where they were taken from",
			"{{ $s := .steps }}{{ $s.fetch.output }}{{ with $d := .steps.draft }}{{ $d.phase }}{{ end }}",
			[]Ref{{Kind: KindSteps}, step("fetch", "output", ""), step("draft", "", ""), step("draft", "phase", "")}},
		{"index with constant keys is followed", `{{ index .steps "fetch" "output" }}`,
			[]Ref{step("fetch", "output", "")}},
		{"index into outputs keeps a key that is not an identifier", `{{ index .steps.draft.outputs "the title" }}`,
			[]Ref{step("draft", "outputs", "the title")}},
		{"index with a computed key reads the whole map and the key's source",
			`{{ index .steps .params.which "output" }}`,
			[]Ref{{Kind: KindSteps}, param("which")}},
		{"a field of a parenthesized index is followed",
			`{{ (index .steps "draft").outputs.title }}`,
			[]Ref{step("draft", "", ""), step("draft", "outputs", "title")}},
		{"the whole data read as dot is no reference", "{{ toJson . }}", nil},
		{"comments read nothing", "{{/* .params.secret */}}x", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tmpl, err := Compile(field, tc.text)
			if err != nil {
				t.Fatal(err)
			}
			if got := tmpl.References(); !slices.Equal(got, tc.want) {
				t.Errorf("References\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	upstreamOfPublish := func(step string) bool { return slices.Contains([]string{"fetch", "draft", "review"}, step) }
	scope := Scope{
		Params:   []string{"sprint"},
		Steps:    []string{"fetch", "draft", "review", "publish"},
		Upstream: upstreamOfPublish,
	}
	cases := []struct {
		name  string
		text  string
		scope Scope
		want  string // empty for no error
	}{
		{"references in scope pass", "{{ .params.sprint }} {{ .steps.draft.outputs.title }} {{ .run.name }} " +
			"{{ .steps.review.decision }} {{ .steps.fetch.phase }}", scope, ""},
		{"a computed step name cannot be checked and passes", `{{ index .steps .params.sprint "output" }}`, scope, ""},
		{"plain text passes", "echo", scope, ""},
		{"an unknown param is reported", "{{ .params.sprnt }}", scope,
			field + `: template references unknown param "sprnt"; declare it in spec.params`},
		{"an unknown step is reported", "{{ .steps.fecth.output }}", scope,
			field + `: template references unknown step "fecth"`},
		{"a step that is not upstream is reported", "{{ .steps.publish.output }}", scope,
			field + `: template references step "publish", which this step does not depend on; ` +
				`add it to dependsOn, directly or through another step`},
		{"without an upstream test every known step passes", "{{ .steps.publish.output }}",
			Scope{Steps: scope.Steps}, ""},
		{"an unknown step field is reported", "{{ .steps.fetch.result }}", scope,
			field + `: template references unknown field "result" of step "fetch"; use output, outputs, decision or phase`},
		{"an unknown run field is reported", "{{ .run.labels }}", scope,
			field + `: template references unknown field .run.labels; use .run.name, .run.namespace, .run.uid, .run.phase or .run.failedSteps`},
		{"an unknown top-level name is reported", "{{ .param.sprint }}", scope,
			field + `: template references unknown data .param; use .params, .steps or .run`},
		{"the first problem in the text is reported", "{{ .params.sprint }}{{ .steps.nope.output }}{{ .params.nope }}",
			scope, field + `: template references unknown step "nope"`},
		{"a reference through index is checked", `{{ index .steps "fecth" "output" }}`, scope,
			field + `: template references unknown step "fecth"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tmpl, err := Compile(field, tc.text)
			if err != nil {
				t.Fatal(err)
			}
			err = tmpl.Check(tc.scope)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Check = %v, want nil", err)
			case tc.want != "" && (err == nil || err.Error() != tc.want):
				t.Errorf("Check\n got %v\nwant %s", err, tc.want)
			}
		})
	}
}
