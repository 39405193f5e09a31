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
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/template"
)

func run(name, command string, deps ...string) ergonv1alpha1.Step {
	return ergonv1alpha1.Step{Name: name, DependsOn: deps, Container: &ergonv1alpha1.ContainerStep{
		Image: "busybox", Command: []string{"sh", "-c", command},
	}}
}

func TestScenesThatCannotRunAreRefusedWithTheirFieldPath(t *testing.T) {
	secret := ergonv1alpha1.ParamSpec{Name: "token", ValueFrom: &ergonv1alpha1.ParamValueSource{
		SecretKeyRef: corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "k"}}}
	when := run("b", "x", "a")
	when.When = "steps.nope.decision == 'approve'"
	notBool := run("b", "x", "a")
	notBool.When = "'yes'"
	whenParam := run("a", "x")
	whenParam.When = "params.region == 'eu'"
	whenSecret := run("a", "x")
	whenSecret.When = "params.token != ''"
	agent := ergonv1alpha1.Step{Name: "a", Agent: &ergonv1alpha1.AgentStep{Prompt: "Review {{ .steps.draft.output }}"}}
	minute := &metav1.Duration{Duration: time.Minute}
	gateRetry := ergonv1alpha1.Step{Name: "a", Gate: &ergonv1alpha1.GateStep{Message: "ok?"}, Retry: &ergonv1alpha1.RetryPolicy{Limit: 1}}
	sceneTimeout := ergonv1alpha1.Step{Name: "a", Scene: &ergonv1alpha1.SceneCall{Name: "other"}, Timeout: minute, PendingTimeout: minute}
	forever := run("a", "x")
	forever.Timeout = &metav1.Duration{Duration: 1 << 62}
	cases := []struct {
		name   string
		params []ergonv1alpha1.ParamSpec
		steps  []ergonv1alpha1.Step
		want   []string
	}{
		{"a template naming an unknown param", nil, []ergonv1alpha1.Step{run("a", "{{ .params.sprint }}")},
			[]string{"spec.steps[0].container.command[2]", `unknown param "sprint"`}},
		{"a template reading a secret param", []ergonv1alpha1.ParamSpec{secret}, []ergonv1alpha1.Step{run("a", "{{ .params.token }}")},
			[]string{"spec.steps[0].container.command[2]", "comes from a Secret", "$ERGON_PARAM_token"}},
		{"a template reading a step that does not run before", nil,
			[]ergonv1alpha1.Step{run("a", "x"), run("b", "{{ .steps.a.output }}")},
			[]string{"spec.steps[1].container.command[2]", `step "a", which this step does not depend on`}},
		{"a template that does not parse", nil, []ergonv1alpha1.Step{run("a", "{{ .params.x ")},
			[]string{"spec.steps[0].container.command[2]"}},
		{"a template reading a step whose name has a '-'", nil,
			[]ergonv1alpha1.Step{run("fetch-data", "x"), run("b", "{{ .steps.fetch-data.outputs.title }}", "fetch-data")},
			[]string{"spec.steps[1].container.command[2]", `{{ index .steps "fetch-data" "outputs" "title" }}`}},
		{"a condition naming an unknown step", nil, []ergonv1alpha1.Step{run("a", "x"), when},
			[]string{"spec.steps[1].when", `unknown step "nope"`}},
		{"a condition that is not boolean", nil, []ergonv1alpha1.Step{run("a", "x"), notBool},
			[]string{"spec.steps[1].when", "boolean"}},
		{"a condition naming an unknown param", nil, []ergonv1alpha1.Step{whenParam},
			[]string{"spec.steps[0].when", `unknown param "region"`}},
		{"a condition reading a secret param", []ergonv1alpha1.ParamSpec{secret}, []ergonv1alpha1.Step{whenSecret},
			[]string{"spec.steps[0].when", "comes from a Secret"}},
		{"an agent prompt naming an unknown step", nil, []ergonv1alpha1.Step{agent},
			[]string{"spec.steps[0].agent.prompt", `unknown step "draft"`}},
		{"a template reading an unknown field of a step", nil,
			[]ergonv1alpha1.Step{run("a", "x"), run("b", "{{ .steps.a.outptu }}", "a")},
			[]string{"spec.steps[1].container.command[2]", `unknown field "outptu" of step "a"`}},
		{"a template reading an unknown field of the run", nil, []ergonv1alpha1.Step{run("a", "{{ .run.nme }}")},
			[]string{"spec.steps[0].container.command[2]", "unknown field .run.nme"}},
		{"an agent prompt reading a step that does not run before", nil,
			[]ergonv1alpha1.Step{run("a", "x"), {Name: "b", Agent: &ergonv1alpha1.AgentStep{Prompt: "{{ .steps.a.output }}"}}},
			[]string{"spec.steps[1].agent.prompt", `step "a", which this step does not depend on`}},
		{"an agent system prompt reading a secret param", []ergonv1alpha1.ParamSpec{secret},
			[]ergonv1alpha1.Step{{Name: "a", Agent: &ergonv1alpha1.AgentStep{System: "{{ .params.token }}", Prompt: "x"}}},
			[]string{"spec.steps[0].agent.system", "comes from a Secret"}},
		{"a cycle", nil, []ergonv1alpha1.Step{run("a", "x", "b"), run("b", "x", "a")},
			[]string{"a -> b -> a"}},
		{"a gate step with retry", nil, []ergonv1alpha1.Step{gateRetry},
			[]string{"spec.steps[0].retry", "gate.timeout"}},
		{"a scene step with timeouts", nil, []ergonv1alpha1.Step{sceneTimeout},
			[]string{"spec.steps[0].timeout", "spec.steps[0].pendingTimeout", "only container and agent steps"}},
		{"a timeout no pod can carry", nil, []ergonv1alpha1.Step{forever},
			[]string{"spec.steps[0].timeout", "activeDeadlineSeconds"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, errs := Compile(&ergonv1alpha1.SceneSpec{Params: tc.params, Steps: tc.steps})
			if len(errs) == 0 {
				t.Fatal("the Scene compiled")
			}
			msg := errs.ToAggregate().Error()
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not contain %q", msg, w)
				}
			}
		})
	}
}

func TestACompiledStepRendersItsTemplates(t *testing.T) {
	spec := &ergonv1alpha1.SceneSpec{
		Params: []ergonv1alpha1.ParamSpec{{Name: "who"}},
		Steps: []ergonv1alpha1.Step{
			run("a", "hi {{ .params.who }}"),
			{Name: "b", DependsOn: []string{"a"}, Scene: &ergonv1alpha1.SceneCall{Name: "s",
				Params: map[string]string{"text": "{{ .steps.a.output }}!"}}},
			{Name: "c", DependsOn: []string{"a"}, Agent: &ergonv1alpha1.AgentStep{
				System: "You help {{ .params.who }}.", Prompt: "Summarise: {{ .steps.a.output }}"}},
		},
	}
	scene, errs := Compile(spec)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	data := template.Data{Params: map[string]string{"who": "you"},
		Steps: map[string]template.StepData{"a": {Output: "hi you"}}}.Map()
	r, err := scene.Steps["a"].Render(data)
	if err != nil || r.Command[2] != "hi you" {
		t.Fatalf("step a: %v, %v", r, err)
	}
	r, err = scene.Steps["b"].Render(data)
	if err != nil || r.SceneParams["text"] != "hi you!" {
		t.Fatalf("step b: %v, %v", r, err)
	}
	r, err = scene.Steps["c"].Render(data)
	if err != nil || r.AgentSystem != "You help you." || r.AgentPrompt != "Summarise: hi you" {
		t.Fatalf("step c: %+v, %v", r, err)
	}
}
