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

package compile

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/template"
)

func TestCheckProgramsRefusesTemplatesThatCouldRewriteAProgram(t *testing.T) {
	cases := []struct {
		name          string
		command, args []string
		field, want   string // want is empty when the step is accepted
	}{
		{"a script reading params from the environment", []string{"sh", "-c", `curl "$U/$ERGON_PARAM_sprint"`}, nil, "", ""},
		{"a script with shquote", []string{"sh", "-c", `echo {{ .params.who | shquote }}`}, nil, "", ""},
		{"a script pasting a param", []string{"sh", "-c", `echo "{{ .params.who }}"`}, nil,
			"spec.steps[0].container.command[2]", "shquote"},
		{"a script in args", []string{"/bin/bash"}, []string{"-euc", `echo {{ .params.who }}`},
			"spec.steps[0].container.args[1]", "unquoted"},
		{"-o takes a name before -c", []string{"bash", "-o", "pipefail", "-c", `echo {{ .params.who }}`}, nil,
			"spec.steps[0].container.command[4]", "unquoted"},
		{"after -- the script", []string{"sh", "-c", "--", `echo {{ .params.who }}`}, nil,
			"spec.steps[0].container.command[3]", "unquoted"},
		{"through env and busybox", []string{"env", "-i", "A=b", "busybox", "sh", "-c", `echo {{ .params.who }}`}, nil,
			"spec.steps[0].container.command[6]", "unquoted"},
		{"the arguments after the script are data", []string{"sh", "-c", `echo "$1"`, "sh", "{{ .params.who }}"}, nil, "", ""},
		{"a script file's arguments are data", []string{"sh", "/scripts/run.sh", "{{ .params.who }}"}, nil, "", ""},
		{"a program's arguments are data", []string{"curl", "-s", "https://tracker/{{ .params.sprint }}"}, nil, "", ""},
		{"a program from a template", []string{"{{ .params.tool }}", "x"}, nil, "spec.steps[0].container.command[0]", "program"},
		{"a shell option from a template", []string{"sh", "{{ .params.flag }}", "echo hi"}, nil,
			"spec.steps[0].container.command[1]", "options"},
		{"python -c with a template", []string{"python3", "-c", `print("{{ .params.who }}")`}, nil,
			"spec.steps[0].container.command[2]", "environment"},
		{"perl -e with a template", []string{"perl", "-e", `print "{{ .params.who }}"`}, nil,
			"spec.steps[0].container.command[2]", "environment"},
		{"a shell started by timeout", []string{"timeout", "30", "sh", "-c", `echo {{ .params.who }} > "$ERGON_OUTPUT"`}, nil,
			"spec.steps[0].container.command[4]", "unquoted"},
		{"a shell started by nice, in args", []string{"nice"}, []string{"-n", "5", "bash", "-ec", `echo {{ .params.who }}`},
			"spec.steps[0].container.args[4]", "unquoted"},
		{"a shell started by xargs", []string{"xargs", "-n1", "sh", "-c", `echo {{ .params.who }} "$0"`}, nil,
			"spec.steps[0].container.command[4]", "unquoted"},
		{"python started by timeout", []string{"timeout", "5", "python3", "-c", `print("{{ .params.who }}")`}, nil,
			"spec.steps[0].container.command[4]", "environment"},
		{"a word sh given to grep is data", []string{"grep", "-r", "sh", "{{ .params.dir }}"}, nil, "", ""},
		{"a shell started by timeout, quoted", []string{"timeout", "30", "sh", "-c", `echo {{ .params.who | shquote }}`}, nil, "", ""},
		{"an awk program with a template", []string{"awk", "-F", ",", `BEGIN { system("echo {{ .params.who }}") }`}, nil,
			"spec.steps[0].container.command[3]", "ENVIRON"},
		{"awk started by xargs", []string{"xargs", "awk", `{ print "{{ .params.who }}" }`}, nil,
			"spec.steps[0].container.command[2]", "ENVIRON"},
		{"awk with a value passed by -v", []string{"awk", "-v", "who={{ .params.who }}", `BEGIN { print who }`}, nil, "", ""},
		{"python -c reading the environment", []string{"python3", "-c", `import os; print(os.environ["ERGON_PARAM_who"])`}, nil, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := &ergonv1alpha1.SceneSpec{Steps: []ergonv1alpha1.Step{{Name: "a", Container: &ergonv1alpha1.ContainerStep{
				Image: "x", Command: tc.command, Args: tc.args}}}}
			errs := CheckPrograms(spec)
			if tc.want == "" {
				if len(errs) > 0 {
					t.Fatalf("want no error, got %v", errs)
				}
				return
			}
			if len(errs) != 1 {
				t.Fatalf("want one error, got %v", errs)
			}
			if errs[0].Field != tc.field || !strings.Contains(errs[0].Detail, tc.want) {
				t.Fatalf("want %s: ...%s..., got %s: %s", tc.field, tc.want, errs[0].Field, errs[0].Detail)
			}
		})
	}
}

func TestSecretParamsReachOnlyTheStepsThatNameThem(t *testing.T) {
	secret := func(name string) ergonv1alpha1.ParamSpec {
		return ergonv1alpha1.ParamSpec{Name: name, ValueFrom: &ergonv1alpha1.ParamValueSource{
			SecretKeyRef: corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: name}}}
	}
	withEnv := run("e", "true")
	withEnv.Container.Env = []corev1.EnvVar{{Name: "TOKEN", Value: "$(ERGON_PARAM_token)"}}
	spec := &ergonv1alpha1.SceneSpec{
		Params: []ergonv1alpha1.ParamSpec{secret("token"), secret("token2"), {Name: "who"}},
		Steps: []ergonv1alpha1.Step{
			run("a", `curl -H "Authorization: $ERGON_PARAM_token" x`),
			run("b", `echo {{ .params.who | shquote }}`),
			run("c", `echo ${ERGON_PARAM_token2}`),
			run("d", `echo $ERGON_PARAM_token2x $XERGON_PARAM_token`),
			withEnv,
			{Name: "f", Agent: &ergonv1alpha1.AgentStep{Prompt: "use $ERGON_PARAM_token"}},
		},
	}
	scene, errs := Compile(spec)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	want := map[string][]string{"a": {"token"}, "b": nil, "c": {"token2"}, "d": nil, "e": {"token"}, "f": nil}
	for step, names := range want {
		var got []string
		for _, p := range scene.Steps[step].SecretParams {
			got = append(got, p.Name)
		}
		if !slices.Equal(got, names) {
			t.Errorf("step %s gets secret params %v, want %v", step, got, names)
		}
	}
}

func TestContainerStepsGetParamsAsEnvironmentAndValuesCannotExpand(t *testing.T) {
	spec := &ergonv1alpha1.SceneSpec{
		Params: []ergonv1alpha1.ParamSpec{{Name: "sprint"}, {Name: "unset"}},
		Steps:  []ergonv1alpha1.Step{run("a", `echo "$ERGON_PARAM_sprint" {{ .params.sprint | shquote }}`)},
	}
	scene, errs := Compile(spec)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	value := `"; printenv $(ERGON_PARAM_token); "`
	r, err := scene.Steps["a"].Render(template.Data{Params: map[string]string{"sprint": value}}.Map())
	if err != nil {
		t.Fatal(err)
	}
	escaped := strings.ReplaceAll(value, "$", "$$")
	if len(r.ParamEnv) != 1 || r.ParamEnv[0].Name != "ERGON_PARAM_sprint" || r.ParamEnv[0].Value != escaped {
		t.Fatalf("param env %+v", r.ParamEnv)
	}
	if want := `echo "$ERGON_PARAM_sprint" '` + escaped + `'`; r.Command[2] != want {
		t.Fatalf("command %q, want %q", r.Command[2], want)
	}
}
