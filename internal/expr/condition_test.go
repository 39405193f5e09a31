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
package expr

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

const when = "spec.steps[3].when"

// vars is a Run midway: fetch and draft have run, review has been decided.
func vars(decision string) Vars {
	return Vars{
		Params: map[string]string{"sprint": "42"},
		Steps: map[string]map[string]any{
			"fetch":  {"output": "OK: 13 issues", "phase": "Succeeded"},
			"draft":  {"output": "{}", "outputs": map[string]any{"score": 3.5, "count": float64(3)}, "phase": "Succeeded"},
			"review": {"decision": decision, "phase": "Succeeded"},
		},
		Run: map[string]any{"name": "weekly-report-x7k2", "namespace": "team-a"},
	}
}

func TestConditionEval(t *testing.T) {
	cases := []struct {
		name, src string
		vars      Vars
		want      bool
	}{
		{"an approved review satisfies the condition", "steps.review.decision == 'approve'", vars("approve"), true},
		{"a rejected review does not satisfy the condition", "steps.review.decision == 'approve'", vars("reject"), false},
		{"params are strings", "params.sprint == '42'", vars("approve"), true},
		{"a double from JSON compares with an int", "steps.draft.outputs.score > 3", vars("approve"), true},
		{"a whole double from JSON equals an int", "steps.draft.outputs.count == 3", vars("approve"), true},
		{"run fields are readable", "run.name.startsWith('weekly-')", vars("approve"), true},
		{"string extensions are available", "steps.fetch.output.lowerAscii().contains('ok')", vars("approve"), true},
		{"an optional step can default", "steps.?lint.decision.orValue('none') == 'none'", vars("approve"), true},
		{"has tells whether a step is there", "has(steps.review) && !has(steps.lint)", vars("approve"), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := CompileCondition(when, tc.src)
			if err != nil {
				t.Fatal(err)
			}
			got, err := p.Eval(tc.vars)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("Eval(%s) = %v, want %v", tc.src, got, tc.want)
			}
		})
	}
}

func TestCompileConditionErrors(t *testing.T) {
	cases := []struct {
		name, src string
		want      string // the error's start
		contains  string
	}{
		{"a string expression is rejected", "params.sprint", when + ": must be a boolean expression, got string", ""},
		{"an int expression is rejected", "1 + 2", when + ": must be a boolean expression, got int", ""},
		{"a syntax error keeps CEL's message and names the field", "steps.review.decision ==",
			when + ": invalid expression: ERROR: <input>:1:25: Syntax error: mismatched input '<EOF>'", ""},
		{"an undeclared variable is reported", "step.review.decision == 'approve'",
			when + ": invalid expression: ", "undeclared reference to 'step'"},
		{"a type error is reported", "params.sprint + 1 == 2", when + ": invalid expression: ", "found no matching overload"},
		{"null is named as CEL spells it", "null", when + ": must be a boolean expression, got null", ""},
		{"a duration is named as CEL spells it", "duration('1s') + 1 == 2", when + ": invalid expression: ", "'(duration, int)'"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := CompileCondition(when, tc.src)
			if err == nil {
				t.Fatalf("%s compiled", tc.src)
			}
			if !strings.HasPrefix(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.contains) {
				t.Errorf("error %q does not start with %q and contain %q", err, tc.want, tc.contains)
			}
			if _, ok := errors.AsType[*Error](err); !ok {
				t.Errorf("error is %T, want *expr.Error", err)
			}
		})
	}
}

func TestConditionEvalErrors(t *testing.T) {
	// A hundred to the fourth power iterations: hours without a limit.
	hundred := "[" + strings.TrimSuffix(strings.Repeat("0,", 100), ",") + "]"
	expensive := hundred + ".all(a, " + hundred + ".all(b, " + hundred + ".all(c, " + hundred + ".all(d, true))))"
	cases := []struct {
		name, src string
		vars      Vars
		want      string
	}{
		{"a step missing from the variables is an error, not false", "steps.review.decision == 'approve'",
			Vars{Params: map[string]string{}}, when + ": cannot evaluate expression: no such key: review"},
		{"a dynamic value that is not a boolean is an error", "steps.review.decision", vars("approve"),
			when + ": must evaluate to a boolean, got string"},
		{"a conversion error names the type as CEL spells it", "duration(steps.review.decision) > duration('1s')", vars("approve"),
			when + ": cannot evaluate expression: type conversion error from 'string' to 'duration'"},
		{"a JSON null is named null", "steps.review.outputs.missing", Vars{Steps: map[string]map[string]any{
			"review": {"outputs": map[string]any{"missing": nil}}}}, when + ": must evaluate to a boolean, got null"},
		{"a type mismatch at evaluation says what to do", "steps.review.outputs.n + 1 > 2", Vars{Steps: map[string]map[string]any{
			"review": {"outputs": map[string]any{"n": 1.5}}}}, when + ": cannot evaluate expression: no such overload: " +
			"an operator or function got a value of a type it does not take (outputs of JSON steps are strings, doubles, " +
			"bools, lists or maps; convert with string(), int() or double(), or compare like with like)"},
		{"an expensive expression stops at the cost limit", expensive, vars("approve"),
			when + ": expression exceeded its cost limit of 1000000; make it do less work"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := CompileCondition(when, tc.src)
			if err != nil {
				t.Fatal(err)
			}
			// The guard turns a hang into a failure with a message, rather than the test
			// binary's timeout; it measures nothing.
			done := make(chan error, 1)
			go func() {
				_, err := p.Eval(tc.vars)
				done <- err
			}()
			select {
			case err = <-done:
			case <-time.After(time.Minute):
				t.Fatal("Eval did not return within a minute")
			}
			if err == nil || err.Error() != tc.want {
				t.Errorf("error\n got %v\nwant %s", err, tc.want)
			}
		})
	}
}

func TestReferences(t *testing.T) {
	cases := []struct {
		name, src string
		steps     []string
		params    []string
	}{
		{"a selected step is referenced", "steps.review.decision == 'approve'", []string{"review"}, nil},
		{"an indexed and an optional step are referenced", "steps['review'].decision == 'x' || steps.?draft.hasValue()",
			[]string{"review", "draft"}, nil},
		{"has and optional index reference steps", "has(steps.fetch) || steps[?'lint'].hasValue()",
			[]string{"fetch", "lint"}, nil},
		{"each step is listed once", "steps.a.output == steps.b.output && steps.a.phase == 'Succeeded'",
			[]string{"a", "b"}, nil},
		{"a step inside a comprehension is referenced", "[1].exists(x, steps.inside.phase == 'Succeeded')",
			[]string{"inside"}, nil},
		{"a comprehension variable named steps is not the steps map",
			"[{'a': 1}].all(steps, steps.a == 1) && steps.real.phase == ''", []string{"real"}, nil},
		{"a step in a map literal is referenced", "{'k': steps.m.output}.k == ''", []string{"m"}, nil},
		{"a computed step name is not a reference, its source is", "steps[params.which].phase == 'x'",
			nil, []string{"which"}},
		{"params are referenced", "params.sprint == '1' && params['team'] != ''", nil, []string{"sprint", "team"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := CompileCondition(when, tc.src)
			if err != nil {
				t.Fatal(err)
			}
			if got := p.StepReferences(); !slices.Equal(got, tc.steps) {
				t.Errorf("StepReferences = %q, want %q", got, tc.steps)
			}
			if got := p.ParamReferences(); !slices.Equal(got, tc.params) {
				t.Errorf("ParamReferences = %q, want %q", got, tc.params)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	scope := Scope{
		Params:   []string{"sprint"},
		Steps:    []string{"fetch", "review", "publish"},
		Upstream: func(step string) bool { return step == "fetch" || step == "review" },
	}
	cases := []struct {
		name, src string
		scope     Scope
		want      string // empty for no error
	}{
		{"references in scope pass", "steps.review.decision == 'approve' && params.sprint != ''", scope, ""},
		{"an unknown step is reported", "steps.reviews.decision == 'approve'", scope,
			when + `: expression references unknown step "reviews"`},
		{"a step that is not upstream is reported", "steps.publish.phase == 'Succeeded'", scope,
			when + `: expression references step "publish", which this step does not depend on; ` +
				"add it to dependsOn, directly or through another step"},
		{"without an upstream test every known step passes", "steps.publish.phase == 'Succeeded'",
			Scope{Steps: scope.Steps}, ""},
		{"an unknown step field is reported", "steps.review.decided == 'approve'", scope,
			when + `: expression references unknown field "decided" of step "review"; use output, outputs, decision or phase`},
		{"an unknown param is reported", "params.sprnt == '1'", scope,
			when + `: expression references unknown param "sprnt"; declare it in spec.params`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := CompileCondition(when, tc.src)
			if err != nil {
				t.Fatal(err)
			}
			err = p.Check(tc.scope)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Check = %v, want nil", err)
			case tc.want != "" && (err == nil || err.Error() != tc.want):
				t.Errorf("Check\n got %v\nwant %s", err, tc.want)
			}
		})
	}
}

func BenchmarkConditionEval(b *testing.B) {
	p, err := CompileCondition(when, "steps.review.decision == 'approve' && params.sprint != ''")
	if err != nil {
		b.Fatal(err)
	}
	v := vars("approve")
	b.ReportAllocs()
	for b.Loop() {
		if ok, err := p.Eval(v); err != nil || !ok {
			b.Fatal(ok, err)
		}
	}
}
