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
	"errors"
	"strings"
	"testing"
)

const field = "spec.steps[2].container.command[2]"

// data is a Run midway: fetch and draft have run, review has been decided.
func data() Data {
	return Data{
		Params: map[string]string{"sprint": "42", "empty": "", "quoted": `say "it's"`, "lines": "a\nb"},
		Steps: map[string]StepData{
			"fetch": {Output: `{"title":"Sprint 42","points":13}`, Phase: "Succeeded"},
			"draft": {
				Output: "...",
				Outputs: map[string]any{
					"title":  "Sprint <42> & more",
					"tags":   []any{"infra", "ml"},
					"count":  float64(1000000),
					"ratio":  0.25,
					"scores": []any{float64(1), 2.5},
					"meta":   map[string]any{"author": "ada"},
				},
				Phase: "Succeeded",
			},
			"review": {Decision: "approve", Phase: "Succeeded"},
		},
		Run: RunData{Name: "weekly-report-x7k2", Namespace: "team-a", UID: "1234-abcd"},
	}
}

func render(t *testing.T, text string, d Data) (string, error) {
	t.Helper()
	tmpl, err := Compile(field, text)
	if err != nil {
		return "", err
	}
	return tmpl.Execute(d)
}

func TestExecuteRendersTheData(t *testing.T) {
	cases := []struct {
		name, text, want string
	}{
		{"text without actions renders as itself", "curl -s $TRACKER/sprint", "curl -s $TRACKER/sprint"},
		{"a param renders", "sprint {{ .params.sprint }}", "sprint 42"},
		{"a step's output renders", "{{ .steps.fetch.output }}", `{"title":"Sprint 42","points":13}`},
		{"a field of a step's JSON output renders", "{{ .steps.draft.outputs.title }}", "Sprint <42> & more"},
		{"a nested field of a step's JSON output renders", "{{ .steps.draft.outputs.meta.author }}", "ada"},
		{"a gate's decision renders", "{{ .steps.review.decision }}", "approve"},
		{"a step's phase renders", "{{ .steps.fetch.phase }}", "Succeeded"},
		{"the run renders", "{{ .run.name }}/{{ .run.namespace }}/{{ .run.uid }}", "weekly-report-x7k2/team-a/1234-abcd"},
		{"a whole number from JSON renders without an exponent", "{{ .steps.draft.outputs.count }}", "1000000"},
		{"a fraction from JSON renders as written", "{{ .steps.draft.outputs.ratio }}", "0.25"},
		{"a range over a list from JSON renders each element",
			"{{ range $i, $t := .steps.draft.outputs.tags }}{{ if $i }},{{ end }}{{ $t }}{{ end }}", "infra,ml"},
		{"index with constant keys reads a step", `{{ index .steps "fetch" "phase" }}`, "Succeeded"},
		{"if compares a decision", `{{ if eq .steps.review.decision "approve" }}go{{ else }}stop{{ end }}`, "go"},
		{"a single range beside another is allowed",
			"{{ range .steps.draft.outputs.tags }}{{ . }}{{ end }}{{ range .steps.draft.outputs.scores }}{{ . }}{{ end }}",
			"inframl12.5"},
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

func TestTemplateErrorsNameTheField(t *testing.T) {
	big := strings.Repeat("x", 1<<20)
	bigData := data()
	bigData.Steps["big"] = StepData{Output: big, Outputs: map[string]any{"items": []any{1.0, 2.0, 3.0, 4.0, 5.0}}}
	cases := []struct {
		name, text string
		d          Data
		want       string
	}{
		{"a missing param fails rather than rendering <no value>", "{{ .params.nope }}", data(),
			field + `: cannot render template: line 1, column 10: at <.params.nope>: map has no entry for key "nope"`},
		{"a missing step fails", "x {{ .steps.later.output }}", data(),
			field + `: cannot render template: line 1, column 11: at <.steps.later.output>: map has no entry for key "later"`},
		{"a missing key of a JSON output fails", "{{ .steps.fetch.outputs.title }}", data(),
			field + `: cannot render template: line 1, column 9: at <.steps.fetch.outputs.title>: ` +
				`map has no entry for key "title"`},
		{"a syntax error is reported with its line", "a\n{{ .params.sprint ", data(),
			field + `: invalid template: line 2: unclosed action`},
		{"there is no function to read the environment", `{{ env "HOME" }}`, data(),
			field + `: invalid template: line 1: function "env" not defined`},
		{"there is no function to read files", `{{ readFile "/etc/passwd" }}`, data(),
			field + `: invalid template: line 1: function "readFile" not defined`},
		{"define is rejected", `{{ define "x" }}a{{ end }}b`, data(),
			field + `: invalid template: {{define "x"}} and {{block}} are not supported; write the text in place`},
		{"block is rejected", `{{ block "x" . }}a{{ end }}`, data(),
			field + `: invalid template: {{define "x"}} and {{block}} are not supported; write the text in place`},
		{"a nested range is rejected",
			`{{ range .steps.draft.outputs.tags }}{{ range $.steps.draft.outputs.tags }}{{ end }}{{ end }}`, data(),
			field + `: invalid template: nested {{range}} is not supported; use join or toJson inside one {{range}}`},
		{"a range over a number is rejected", `{{ range 1000000000 }}{{ end }}`, data(),
			field + `: invalid template: {{range}} over a number or a variable is not supported; range over the data itself`},
		{"a range over a length is rejected", `{{ range (len .steps.fetch.output) }}{{ end }}`, data(),
			field + `: invalid template: {{range}} over a number or a variable is not supported; range over the data itself`},
		{"a range over a variable is rejected", `{{ $n := 1000000000 }}{{ range $n }}{{ end }}`, data(),
			field + `: invalid template: {{range}} over a number or a variable is not supported; range over the data itself`},
		{"output past the limit stops the template", "{{ range .steps.big.outputs.items }}{{ $.steps.big.output }}{{ end }}",
			bigData, field + `: template renders more than 4194304 bytes`},
		{"a function cannot build a string past the limit",
			`{{ $x := replace "x" "xxxxxxxxxx" .steps.big.output }}`, bigData,
			field + `: cannot render template: line 1, column 9: at <replace "x" "xxxxxxxxxx" .steps.big.output>: ` +
				`error calling replace: would build a string of more than 4194304 bytes`},
		{"printf cannot pad past its bound", `{{ printf "%999999d" 1 }}`, data(),
			field + `: cannot render template: line 1, column 3: at <printf "%999999d" 1>: ` +
				`error calling printf: printf: width or precision 999999 is more than 1000`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := render(t, tc.text, tc.d)
			if err == nil {
				t.Fatalf("rendered %d bytes, want error %q", len(got), tc.want)
			}
			if err.Error() != tc.want {
				t.Errorf("error\n got %s\nwant %s", err, tc.want)
			}
			if _, ok := errors.AsType[*Error](err); !ok {
				t.Errorf("error is %T, want *template.Error", err)
			}
		})
	}
}

func TestPlainTextTakesTheFastPath(t *testing.T) {
	cases := []string{"", "echo hello", "a } b }} c", "{ {not an action} }"}
	for _, text := range cases {
		t.Run("text without {{ is kept as it is: "+text, func(t *testing.T) {
			tmpl, err := Compile(field, text)
			if err != nil {
				t.Fatal(err)
			}
			if tmpl.tmpl != nil {
				t.Error("plain text was parsed as a template")
			}
			d := data()
			var got string
			allocs := testing.AllocsPerRun(10, func() { got, err = tmpl.Execute(d) })
			if err != nil || got != text {
				t.Errorf("Execute = %q, %v, want %q", got, err, text)
			}
			if allocs != 0 {
				t.Errorf("Execute of plain text allocates %v times, want 0", allocs)
			}
		})
	}
	t.Run("plain text renders with no data at all", func(t *testing.T) {
		tmpl, err := Compile(field, "echo")
		if err != nil {
			t.Fatal(err)
		}
		if got, err := tmpl.Execute(Data{}); err != nil || got != "echo" {
			t.Errorf("Execute = %q, %v", got, err)
		}
	})
}

func TestMap(t *testing.T) {
	t.Run("a step without JSON outputs has an empty outputs map", func(t *testing.T) {
		got, err := render(t, "{{ toJson .steps.review.outputs }}", data())
		if err != nil || got != "{}" {
			t.Errorf("got %q, %v, want {}", got, err)
		}
	})
	t.Run("numbers in nested outputs are written without exponent", func(t *testing.T) {
		d := Data{Steps: map[string]StepData{"s": {Outputs: map[string]any{
			"list": []any{map[string]any{"n": float64(12345678)}},
		}}}}
		got, err := render(t, "{{ toJson .steps.s.outputs }}", d)
		if want := `{"list":[{"n":12345678}]}`; err != nil || got != want {
			t.Errorf("got %q, %v, want %q", got, err, want)
		}
	})
	t.Run("the caller's outputs are not changed", func(t *testing.T) {
		d := data()
		_ = d.Map()
		outputs := d.Steps["draft"].Outputs.(map[string]any)
		if _, ok := outputs["count"].(float64); !ok {
			t.Errorf("outputs count became %T", outputs["count"])
		}
	})
}

func BenchmarkExecutePrompt(b *testing.B) {
	tmpl, err := Compile(field, `Summarise sprint {{ .params.sprint }}: {{ .steps.fetch.output }} ({{ .steps.draft.outputs.title }})`)
	if err != nil {
		b.Fatal(err)
	}
	d := data().Map()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tmpl.ExecuteMap(d); err != nil {
			b.Fatal(err)
		}
	}
}
