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

package validate

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

func agentStep(name string, tools ...string) ergonv1alpha1.Step {
	return ergonv1alpha1.Step{Name: name, Agent: &ergonv1alpha1.AgentStep{Prompt: "hi", Tools: builtins(tools...)}}
}

func callStep(name, scene string) ergonv1alpha1.Step {
	return ergonv1alpha1.Step{Name: name, Scene: &ergonv1alpha1.SceneCall{Name: ergonv1alpha1.SceneName(scene)}}
}

func scene(name string, steps ...ergonv1alpha1.Step) ergonv1alpha1.Scene {
	s := ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: name}}
	s.Spec.Steps = steps
	return s
}

func TestSceneSpecsThatCannotRunAreRefused(t *testing.T) {
	model := map[string]ergonv1alpha1.ModelSpec{"default": {BaseURL: "http://llm/v1", Model: "m"}}
	cases := []struct {
		name string
		spec ergonv1alpha1.SceneSpec
		want []string // substrings of the aggregated errors; none means valid
	}{
		{"an agent step naming no model needs a default one",
			ergonv1alpha1.SceneSpec{Steps: []ergonv1alpha1.Step{agentStep("think")}},
			[]string{`spec.steps[0].agent.model`, `no model "default" in spec.models`}},
		{"a file tool without a Workspace",
			ergonv1alpha1.SceneSpec{Models: model, Steps: []ergonv1alpha1.Step{
				agentStep("edit", ergonv1alpha1.ToolHTTPFetch, ergonv1alpha1.ToolShell)}},
			[]string{`spec.steps[0].agent.tools[1]`, "set spec.workspace"}},
		{"a file tool with a Workspace is fine",
			ergonv1alpha1.SceneSpec{Models: model, Workspace: &corev1.LocalObjectReference{Name: "alice"},
				Steps: []ergonv1alpha1.Step{agentStep("edit", ergonv1alpha1.ToolShell)}},
			nil},
		{"an output format the runtime does not know, and a schema that does not compile",
			ergonv1alpha1.SceneSpec{Models: model, Steps: []ergonv1alpha1.Step{{Name: "a", Agent: &ergonv1alpha1.AgentStep{
				Prompt: "hi", Output: &ergonv1alpha1.OutputContract{Format: "toml",
					Outputs: []ergonv1alpha1.NamedOutput{{Name: "s", Format: "json",
						Schema: &apiextensionsv1.JSON{Raw: []byte(`{"type": 7}`)}}}}}}}},
			[]string{`spec.steps[0].agent.output.format: Unsupported value: "toml"`,
				`spec.steps[0].agent.output.outputs[0].schema`, "fix the JSON Schema"}},
		{"a valid output contract is fine",
			ergonv1alpha1.SceneSpec{Models: model, Steps: []ergonv1alpha1.Step{{Name: "a", Agent: &ergonv1alpha1.AgentStep{
				Prompt: "hi", Output: &ergonv1alpha1.OutputContract{Format: "json",
					Schema: &apiextensionsv1.JSON{Raw: []byte(`{"type": "object", "required": ["title"]}`)}}}}}},
			nil},
		{"an agent finally step is checked as a step is: its model, its tools and its output",
			ergonv1alpha1.SceneSpec{Steps: []ergonv1alpha1.Step{{Name: "g", Gate: &ergonv1alpha1.GateStep{}}},
				Finally: []ergonv1alpha1.Step{{Name: "a", Agent: &ergonv1alpha1.AgentStep{Model: "large", Prompt: "hi",
					Tools:  []ergonv1alpha1.AgentTool{{Name: ergonv1alpha1.ToolShell}, {Name: ergonv1alpha1.ToolRemember}},
					Output: &ergonv1alpha1.OutputContract{Format: "toml"}}}}},
			[]string{`spec.finally[0].agent.model`, `no model "large"`, `spec.finally[0].agent.tools[0]`, "set spec.workspace",
				`spec.finally[0].agent.tools[1]`, "set spec.memory", `spec.finally[0].agent.output.format: Unsupported value: "toml"`}},
		{"the graph's cycle is named",
			ergonv1alpha1.SceneSpec{Steps: []ergonv1alpha1.Step{
				{Name: "a", DependsOn: []string{"b"}, Gate: &ergonv1alpha1.GateStep{}},
				{Name: "b", DependsOn: []string{"a"}, Gate: &ergonv1alpha1.GateStep{}}}},
			[]string{"a -> b -> a"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			expectErrors(t, Scene(&tc.spec), tc.want)
		})
	}
}

// toolStep is an agent step that may call a Scene as a tool.
func toolStep(sceneName string) ergonv1alpha1.Step {
	return ergonv1alpha1.Step{Name: "agent", Agent: &ergonv1alpha1.AgentStep{Prompt: "hi",
		Tools: []ergonv1alpha1.AgentTool{{Scene: ergonv1alpha1.SceneName(sceneName)}}}}
}

func withFinally(s ergonv1alpha1.Scene, finally ...ergonv1alpha1.Step) ergonv1alpha1.Scene {
	s.Spec.Finally = finally
	return s
}

func TestScenesCallingEachOtherInACycleAreRefused(t *testing.T) {
	cases := []struct {
		name      string
		scene     ergonv1alpha1.Scene
		namespace []ergonv1alpha1.Scene
		cycle     string
		warning   string
	}{
		{"a Scene calling itself", scene("a", callStep("again", "a")), nil, "a -> a", ""},
		{"A calls B calls A", scene("a", callStep("b", "b")), []ergonv1alpha1.Scene{scene("b", callStep("a", "a"))}, "a -> b -> a", ""},
		{"a longer cycle through the namespace", scene("a", callStep("b", "b")),
			[]ergonv1alpha1.Scene{scene("b", callStep("c", "c")), scene("c", callStep("a", "a"))}, "a -> b -> c -> a", ""},
		{"a chain without a cycle", scene("a", callStep("b", "b")), []ergonv1alpha1.Scene{scene("b", callStep("c", "c")), scene("c")}, "", ""},
		{"a Scene not there yet is a warning", scene("a", callStep("b", "later")), nil, "", `Scene "later" does not exist yet`},
		{"an agent calling its own Scene as a tool", scene("a", toolStep("a")), nil, "a -> a", ""},
		{"a Scene tool whose Scene calls back", scene("a", toolStep("b")), []ergonv1alpha1.Scene{scene("b", callStep("a", "a"))},
			"a -> b -> a", ""},
		{"a step calling a Scene whose agent calls back as a tool", scene("a", callStep("b", "b")),
			[]ergonv1alpha1.Scene{scene("b", toolStep("a"))}, "a -> b -> a", ""},
		{"a finally step calling a Scene whose finally calls back", withFinally(scene("a"), callStep("b", "b")),
			[]ergonv1alpha1.Scene{withFinally(scene("b"), callStep("a", "a"))}, "a -> b -> a", ""},
		{"an agent finally step calling its own Scene as a tool", withFinally(scene("a"), toolStep("a")), nil, "a -> a", ""},
		{"a diamond is no cycle", scene("a", callStep("b", "b"), callStep("c", "c")),
			[]ergonv1alpha1.Scene{scene("b", callStep("d", "d")), scene("c", toolStep("d")), scene("d")}, "", ""},
		{"a callee's callee not there yet is a warning naming the callee", scene("a", callStep("b", "b")),
			[]ergonv1alpha1.Scene{scene("b", callStep("c", "later"))}, "",
			`spec.steps[0].scene.name: Scene "later" does not exist yet (through Scene b's spec.steps[0].scene.name)`},
		{"an update that removes the cycle", scene("a"),
			[]ergonv1alpha1.Scene{scene("a", callStep("b", "b")), scene("b", callStep("a", "a"))}, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			errs, warnings := SceneCallsIn(&tc.scene, tc.namespace)
			got := errs.ToAggregate()
			switch {
			case tc.cycle == "" && got != nil:
				t.Fatalf("refused: %v", got)
			case tc.cycle != "" && (got == nil || !strings.Contains(got.Error(), "cycle: "+tc.cycle)):
				t.Fatalf("want the cycle %q, got %v", tc.cycle, got)
			}
			if tc.warning != "" && (len(warnings) != 1 || !strings.Contains(warnings[0], tc.warning)) {
				t.Fatalf("warnings %v, want %q", warnings, tc.warning)
			}
		})
	}
}

func TestTriggersThatCouldNeverStartARunAreRefused(t *testing.T) {
	tz := func(s string) *string { return &s }
	cases := []struct {
		name string
		spec ergonv1alpha1.TriggerSpec
		want []string
	}{
		{"five fields", ergonv1alpha1.TriggerSpec{Schedule: &ergonv1alpha1.ScheduleSource{Cron: "0 9 * * MON"}}, nil},
		{"a macro in a time zone", ergonv1alpha1.TriggerSpec{Schedule: &ergonv1alpha1.ScheduleSource{Cron: "@weekly",
			TimeZone: tz("Europe/Berlin")}}, nil},
		{"six fields", ergonv1alpha1.TriggerSpec{Schedule: &ergonv1alpha1.ScheduleSource{Cron: "0 0 9 * * MON"}},
			[]string{"spec.schedule.cron", "not a cron schedule"}},
		{"a minute out of range", ergonv1alpha1.TriggerSpec{Schedule: &ergonv1alpha1.ScheduleSource{Cron: "61 * * * *"}},
			[]string{"spec.schedule.cron"}},
		{"a time zone inside the schedule", ergonv1alpha1.TriggerSpec{Schedule: &ergonv1alpha1.ScheduleSource{Cron: "TZ=UTC 0 9 * * *"}},
			[]string{"spec.schedule.cron", "spec.schedule.timeZone"}},
		{"an unknown time zone", ergonv1alpha1.TriggerSpec{Schedule: &ergonv1alpha1.ScheduleSource{Cron: "@daily",
			TimeZone: tz("Mars/Olympus")}}, []string{"spec.schedule.timeZone", "IANA"}},
		{"a webhook mapping that does not compile", ergonv1alpha1.TriggerSpec{Webhook: &ergonv1alpha1.WebhookSource{
			Params: map[string]string{"sprint": "body.sprint +"}}}, []string{"spec.webhook.params[sprint]"}},
		{"a completion mapping over the wrong variable", ergonv1alpha1.TriggerSpec{RunCompleted: &ergonv1alpha1.RunCompletedSource{
			Params: map[string]string{"body": "body.text"}}}, []string{"spec.runCompleted.params[body]"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			expectErrors(t, Trigger(&tc.spec), tc.want)
		})
	}
}

func TestTriggerParamsMustFitTheScene(t *testing.T) {
	scene := &ergonv1alpha1.SceneSpec{Params: []ergonv1alpha1.ParamSpec{{Name: "sprint"}, {Name: "team", Default: new("core")}}}
	ok := ergonv1alpha1.TriggerSpec{Webhook: &ergonv1alpha1.WebhookSource{Params: map[string]string{"sprint": "body.sprint"}}}
	if errs := TriggerParamsFitScene(&ok, scene); len(errs) > 0 {
		t.Fatalf("a webhook mapping the required param was refused: %v", errs)
	}
	missing := ergonv1alpha1.TriggerSpec{Params: map[string]string{"team": "x", "colour": "red"}}
	got := TriggerParamsFitScene(&missing, scene).ToAggregate().Error()
	for _, w := range []string{"spec.params[sprint]: Required value", `spec.params[colour]: Unsupported value: "colour"`} {
		if !strings.Contains(got, w) {
			t.Errorf("%q does not contain %q", got, w)
		}
	}
}

// expectErrors checks that errs is empty when want is, and otherwise holds every part of want.
func expectErrors(t *testing.T, errs field.ErrorList, want []string) {
	t.Helper()
	if len(want) == 0 {
		if len(errs) > 0 {
			t.Fatalf("refused: %v", errs)
		}
		return
	}
	if len(errs) == 0 {
		t.Fatal("accepted")
	}
	for _, w := range want {
		if !strings.Contains(errs.ToAggregate().Error(), w) {
			t.Errorf("%q does not contain %q", errs.ToAggregate().Error(), w)
		}
	}
}

// TestAgentToolsAreCheckedEntryByEntry reads tools as a user writes them, in both forms, and
// checks that admission names the entry it refuses.
func TestAgentToolsAreCheckedEntryByEntry(t *testing.T) {
	cases := []toolCase{
		{"names and options", `[http_fetch, {name: http_fetch2}]`,
			[]string{`spec.steps[0].agent.tools[1].name: Unsupported value: "http_fetch2"`}},
		{"an unknown built-in by name", `[rm_rf]`,
			[]string{`spec.steps[0].agent.tools[0].name: Unsupported value: "rm_rf"`}},
		{"the same tool twice", `[http_fetch, {name: http_fetch}]`,
			[]string{`spec.steps[0].agent.tools[1].name: Duplicate value: "http_fetch"`}},
		{"two kinds in one entry", `[{scene: s, mcp: {url: "https://x", allow: [a]}}]`,
			[]string{`spec.steps[0].agent.tools[0]`, "set one of scene, container and mcp"}},
		{"an entry of no kind", `[{}]`,
			[]string{`spec.steps[0].agent.tools[0].name: Required value`}},
		{"a built-in with a description of its own", `[{name: http_fetch, description: fetch}]`,
			[]string{`spec.steps[0].agent.tools[0].description: Forbidden`}},
		{"a file tool without a Workspace, in object form", `[{name: write_file}]`,
			[]string{`spec.steps[0].agent.tools[0]`, "set spec.workspace"}},
		{"Scene tools and a call that needs approval", `[{scene: summarizer}, {name: deploy, scene: deployer, requireApproval: true, ` +
			`description: Deploys.}, {name: http_fetch, requireApproval: true}]`, nil},
		{"a Scene tool named like a built-in", `[{scene: http_fetch}]`,
			[]string{`spec.steps[0].agent.tools[0].name: Invalid value: "http_fetch"`, "a built-in tool has that name"}},
		{"a Scene tool of an invalid Scene name", `[{name: s, scene: Bad_Scene}]`,
			[]string{`spec.steps[0].agent.tools[0].scene: Invalid value: "Bad_Scene"`}},
		{"a Scene tool whose Scene name is no tool name", `[{scene: team.summarizer}]`,
			[]string{`spec.steps[0].agent.tools[0].name: Invalid value: "team.summarizer"`}},
		{"two Scene tools of one name", `[{scene: a}, {name: a, scene: b}]`,
			[]string{`spec.steps[0].agent.tools[1].name: Duplicate value: "a"`}},
	}
	checkToolCases(t, cases)
}

// toolCase is an agent step's tools as a user writes them (YAML) and what admission must say
// of them: substrings of the aggregated errors, none when they are valid.
type toolCase struct {
	name, tools string
	want        []string
}

// checkToolCases runs each case's tools, in one agent step, through Scene.
func checkToolCases(t *testing.T, cases []toolCase) {
	t.Helper()
	model := map[string]ergonv1alpha1.ModelSpec{"default": {BaseURL: "http://llm/v1", Model: "m"}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var tools []ergonv1alpha1.AgentTool
			if err := yaml.Unmarshal([]byte(c.tools), &tools); err != nil {
				t.Fatalf("reading %s: %v", c.tools, err)
			}
			spec := ergonv1alpha1.SceneSpec{Models: model, Steps: []ergonv1alpha1.Step{
				{Name: "a", Agent: &ergonv1alpha1.AgentStep{Prompt: "hi", Tools: tools}}}}
			got := Scene(&spec).ToAggregate()
			if len(c.want) == 0 {
				if got != nil {
					t.Fatalf("refused: %v", got)
				}
				return
			}
			if got == nil {
				t.Fatalf("accepted, want %q", c.want)
			}
			for _, w := range c.want {
				if !strings.Contains(got.Error(), w) {
					t.Errorf("the errors %q do not say %q", got.Error(), w)
				}
			}
		})
	}
}

// builtins are the AgentTools of built-in tools, by name.
func builtins(names ...string) []ergonv1alpha1.AgentTool {
	tools := make([]ergonv1alpha1.AgentTool, 0, len(names))
	for _, n := range names {
		tools = append(tools, ergonv1alpha1.AgentTool{Name: n})
	}
	return tools
}
