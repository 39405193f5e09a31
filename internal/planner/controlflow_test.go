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

package planner

import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/compile"
	"github.com/ergon-dev/ergon/internal/naming"
)

// unitResult is how a unit's attempt ends in a flowWorld: a phase and, when it succeeded, its
// output. An empty phase keeps it running.
type unitResult struct {
	phase PodPhase
	value string
}

// flowWorld simulates the cluster around the planner for fan-out and loop steps: plain pods,
// unit pods, child Runs and the ConfigMaps the plans store. lose, when set, drops a plan's
// status write (the manager stopped after acting, before writing status).
type flowWorld struct {
	t        testing.TB
	scene    *compile.Scene
	run      *ergonv1alpha1.Run
	now      time.Time
	pods     map[string][]PodState
	units    map[string]map[Unit][]PodState
	children map[string]ChildState
	outputs  map[string]Output
	stored   map[string]string
	values   map[string]string
	// created counts creations per pod or child Run name; rendered keeps each pod's command.
	created  map[string]int
	rendered map[string][]string
	budget   int
	result   func(step string, un Unit, attempt int32, command []string) unitResult
	lose     func(pass int) bool
	pass     int
	last     *Plan
	// limits are the manager's (limits.go); refused are ConfigMaps the API server refuses.
	limits  Limits
	refused map[string]string
	// plain, when set, is what a plain step's pod hands back; "out of STEP" otherwise.
	plain func(step string) Output
}

func newFlowWorld(t testing.TB, spec ergonv1alpha1.SceneSpec, result func(string, Unit, int32, []string) unitResult) *flowWorld {
	t.Helper()
	scene, errs := compile.Compile(&spec)
	if len(errs) > 0 {
		t.Fatalf("compile: %v", errs)
	}
	run := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "ns", UID: "uid-1"}}
	run.Status.SceneSnapshot = &spec
	return &flowWorld{t: t, scene: scene, run: run, now: t0, pods: map[string][]PodState{}, units: map[string]map[Unit][]PodState{},
		children: map[string]ChildState{}, outputs: map[string]Output{}, stored: map[string]string{}, values: map[string]string{},
		created: map[string]int{}, rendered: map[string][]string{}, budget: -1, result: result}
}

func (w *flowWorld) plan() *Plan {
	stored, missing := map[string]string{}, map[string]bool{}
	for _, name := range NeededConfigMaps(w.run, w.scene) {
		if v, ok := w.stored[name]; ok {
			stored[name] = v
		} else {
			missing[name] = true
		}
	}
	values := maps.Clone(w.values)
	f := &Facts{Now: w.now, Run: w.run, Scene: w.scene, Pods: w.pods, UnitPods: w.units, Outputs: w.outputs,
		Children: w.children, Gates: map[string]GateState{}, Stored: stored, Missing: missing, Values: values, PodBudget: w.budget,
		MaxDepth: 5, Limits: w.limits, Refused: w.refused}
	p := Decide(f)
	for _, st := range p.Store {
		if _, ok := w.refused[st.ConfigMap]; ok {
			w.t.Fatalf("the plan asks again for ConfigMap %s, which the API server refused", st.ConfigMap)
		}
		if old, ok := w.stored[st.ConfigMap]; ok && old != st.Value {
			w.t.Fatalf("ConfigMap %s stored twice with different values: %q, %q", st.ConfigMap, old, st.Value)
		}
		w.stored[st.ConfigMap] = st.Value
	}
	for _, req := range p.Pods {
		w.created[req.Name]++
		if w.created[req.Name] > 1 {
			continue // AlreadyExists
		}
		w.rendered[req.Name] = append(req.Rendered.Command, req.Rendered.Args...)
		ps := PodState{Name: req.Name, Attempt: req.Attempt, Phase: PodRunning}
		if req.Unit == nil {
			w.pods[req.Step.Name] = append(w.pods[req.Step.Name], ps)
			continue
		}
		if w.units[req.Step.Name] == nil {
			w.units[req.Step.Name] = map[Unit][]PodState{}
		}
		w.units[req.Step.Name][*req.Unit] = append(w.units[req.Step.Name][*req.Unit], ps)
	}
	for _, c := range p.Children {
		w.created[c.Name]++
		if w.created[c.Name] == 1 {
			w.children[c.Name] = ChildState{Phase: ergonv1alpha1.RunRunning}
			w.rendered[c.Name] = []string{c.Params["item"]}
		}
	}
	for _, name := range p.DeletePods {
		for _, byUnit := range w.units {
			for un, pods := range byUnit {
				for i := range pods {
					if pods[i].Name == name && pods[i].Phase == PodRunning {
						byUnit[un][i].Phase = PodGone
					}
				}
			}
		}
	}
	w.pass++
	if w.lose == nil || !w.lose(w.pass) {
		w.run.Status = p.Status
		for _, s := range p.Status.Steps {
			if s.Phase == ergonv1alpha1.StepSucceeded && s.Output != nil {
				if v, ok := f.Values[s.Name]; ok {
					w.values[s.Name] = v
				}
			}
		}
	}
	w.last = p
	return p
}

// kubelet ends running pods and child Runs as result says.
func (w *flowWorld) kubelet() {
	for step, pods := range w.pods {
		for i := range pods {
			if pods[i].Phase == PodRunning {
				pods[i].Phase = PodSucceeded
				w.outputs[pods[i].Name] = Output{Value: "out of " + step}
				if w.plain != nil {
					w.outputs[pods[i].Name] = w.plain(step)
				}
			}
		}
	}
	for step, byUnit := range w.units {
		for un, pods := range byUnit {
			for i := range pods {
				if pods[i].Phase != PodRunning {
					continue
				}
				r := w.result(step, un, pods[i].Attempt, w.rendered[pods[i].Name])
				switch r.phase {
				case PodSucceeded:
					pods[i].Phase = PodSucceeded
					w.outputs[pods[i].Name] = Output{Value: r.value}
				case PodFailed:
					pods[i].Phase, pods[i].ExitCode = PodFailed, new(int32(1))
				}
			}
		}
	}
	for name, c := range w.children {
		if c.Phase == ergonv1alpha1.RunRunning {
			w.children[name] = ChildState{Phase: ergonv1alpha1.RunSucceeded, Value: "child " + w.rendered[name][0]}
		}
	}
}

func (w *flowWorld) runToEnd() {
	w.t.Helper()
	for range 2000 {
		p := w.plan()
		if w.run.Status.Phase.Finished() {
			return
		}
		w.kubelet()
		if p.RequeueAfter > 0 {
			w.now = w.now.Add(p.RequeueAfter)
		}
	}
	w.t.Fatalf("the Run did not finish: %+v", w.run.Status.Steps)
}

func (w *flowWorld) status(step string) ergonv1alpha1.StepStatus {
	for _, s := range w.run.Status.Steps {
		if s.Name == step {
			return s
		}
	}
	return ergonv1alpha1.StepStatus{Name: step, Phase: ergonv1alpha1.StepPending}
}

func jsonOf(t *testing.T, v any) *apiextensionsv1.JSON {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return &apiextensionsv1.JSON{Raw: raw}
}

// echoItem succeeds every unit with what its command printed.
func echoItem(_ string, _ Unit, _ int32, command []string) unitResult {
	return unitResult{phase: PodSucceeded, value: command[len(command)-1]}
}

func fanStep(fe *ergonv1alpha1.ForEach, deps ...string) ergonv1alpha1.Step {
	s := step("fan", deps...)
	s.Container.Command = []string{"echo", "{{ .item }}"}
	s.ForEach = fe
	return s
}

func TestForEachLiteralRunsEachItemInOrderWithinParallelism(t *testing.T) {
	fan := fanStep(&ergonv1alpha1.ForEach{Items: jsonOf(t, []any{"a", "b", 3, `{"k":1}`}), Parallelism: new(int32(2))})
	join := step("join", "fan")
	join.Container.Command = []string{"echo", "{{ .steps.fan.output }}"}
	w := newFlowWorld(t, ergonv1alpha1.SceneSpec{Steps: []ergonv1alpha1.Step{fan, join}}, echoItem)

	p := w.plan()
	if len(p.Pods) != 2 || p.Pods[0].Name != naming.UnitPodName("r", "fan", 0, 0, 1) || p.Pods[1].Name != naming.UnitPodName("r", "fan", 1, 0, 1) {
		t.Fatalf("first pass started %v, want instances 0 and 1 (parallelism 2)", podNames(p))
	}
	if got := w.status("fan").Instances.States; got != "RRPP" {
		t.Fatalf("states = %q, want RRPP", got)
	}
	w.runToEnd()
	if w.run.Status.Phase != ergonv1alpha1.RunSucceeded {
		t.Fatalf("Run %s: %v", w.run.Status.Phase, w.run.Status.Conditions)
	}
	fs := w.status("fan")
	if fs.Instances.States != "SSSS" || fs.Instances.Succeeded != 4 {
		t.Errorf("instances = %+v", fs.Instances)
	}
	want := `["a","b",3,{"k":1}]`
	joinPod := naming.StepPodName("r", "join", 1)
	if got := w.rendered[joinPod]; len(got) != 2 || got[1] != want {
		t.Errorf("the fan-in step saw %q, want %s", got, want)
	}
	if fs.Output == nil || fs.Output.Preview != want {
		t.Errorf("fan output = %+v, want %s", fs.Output, want)
	}
	for name, n := range w.created {
		if n > 1 {
			t.Errorf("%s created %d times", name, n)
		}
	}
}

func podNames(p *Plan) []string {
	var names []string
	for _, r := range p.Pods {
		names = append(names, r.Name)
	}
	return names
}

func TestForEachFromParamExpressionAndMatrix(t *testing.T) {
	plan := step("plan")
	for _, tc := range []struct {
		name  string
		spec  ergonv1alpha1.SceneSpec
		plan  string
		want  string
		total int32
	}{{
		name: "param", total: 3, want: `["x","y","z"]`,
		spec: ergonv1alpha1.SceneSpec{Params: []ergonv1alpha1.ParamSpec{{Name: "names", Default: new(`["x","y","z"]`)}},
			Steps: []ergonv1alpha1.Step{fanStep(&ergonv1alpha1.ForEach{Param: "names"})}},
	}, {
		name: "expression over an earlier step's JSON output", total: 2, plan: `{"files":["a.go","b.go"]}`, want: `["a.go","b.go"]`,
		spec: ergonv1alpha1.SceneSpec{Steps: []ergonv1alpha1.Step{plan,
			fanStep(&ergonv1alpha1.ForEach{Expression: "steps.plan.outputs.files"}, "plan")}},
	}, {
		name: "matrix, first axis slowest", total: 4, want: `["linux/amd64","linux/arm64","darwin/amd64","darwin/arm64"]`,
		spec: ergonv1alpha1.SceneSpec{Steps: []ergonv1alpha1.Step{func() ergonv1alpha1.Step {
			s := fanStep(&ergonv1alpha1.ForEach{Matrix: []ergonv1alpha1.MatrixAxis{
				{Name: "os", Items: jsonOf(t, []string{"linux", "darwin"})}, {Name: "arch", Items: jsonOf(t, []string{"amd64", "arm64"})}}})
			s.Container.Command = []string{"echo", "{{ .item.os }}/{{ .item.arch }}"}
			return s
		}()}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			w := newFlowWorld(t, tc.spec, echoItem)
			if tc.plan != "" {
				w.values["plan"] = tc.plan
				w.plan()
				for i := range w.pods["plan"] {
					w.pods["plan"][i].Phase = PodSucceeded
					w.outputs[w.pods["plan"][i].Name] = Output{Value: tc.plan}
				}
			}
			w.runToEnd()
			fs := w.status("fan")
			if fs.Phase != ergonv1alpha1.StepSucceeded || fs.Instances.Total != tc.total {
				t.Fatalf("fan = %s %s %+v", fs.Phase, fs.Message, fs.Instances)
			}
			if fs.Output.Preview != tc.want {
				t.Errorf("output = %s, want %s", fs.Output.Preview, tc.want)
			}
		})
	}
}

func TestForEachEmptyOrTooLongOrFailing(t *testing.T) {
	t.Run("an empty list skips the step with a reason", func(t *testing.T) {
		w := newFlowWorld(t, ergonv1alpha1.SceneSpec{Steps: []ergonv1alpha1.Step{
			fanStep(&ergonv1alpha1.ForEach{Items: jsonOf(t, []any{})})}}, echoItem)
		w.runToEnd()
		if s := w.status("fan"); s.Phase != ergonv1alpha1.StepSkipped || s.Reason != ergonv1alpha1.ReasonNoItems {
			t.Fatalf("fan = %s %s", s.Phase, s.Reason)
		}
	})
	t.Run("an expression yielding more than 1000 items fails the step", func(t *testing.T) {
		w := newFlowWorld(t, ergonv1alpha1.SceneSpec{Steps: []ergonv1alpha1.Step{
			fanStep(&ergonv1alpha1.ForEach{Expression: "[0, 1].map(i, i).filter(i, true) + " +
				"[" + strings.Repeat("0,", 1000) + "0]"})}}, echoItem)
		w.runToEnd()
		s := w.status("fan")
		if s.Phase != ergonv1alpha1.StepFailed || s.Reason != ergonv1alpha1.ReasonForEachError || !strings.Contains(s.Message, "at most 1000") {
			t.Fatalf("fan = %s %s %s", s.Phase, s.Reason, s.Message)
		}
	})
	t.Run("a param that is not a JSON array fails the step", func(t *testing.T) {
		spec := ergonv1alpha1.SceneSpec{Params: []ergonv1alpha1.ParamSpec{{Name: "names"}},
			Steps: []ergonv1alpha1.Step{fanStep(&ergonv1alpha1.ForEach{Param: "names"})}}
		w := newFlowWorld(t, spec, echoItem)
		w.run.Spec.Params = map[string]string{"names": "a,b"}
		w.runToEnd()
		if s := w.status("fan"); s.Phase != ergonv1alpha1.StepFailed || !strings.Contains(s.Message, "JSON array") {
			t.Fatalf("fan = %s %s", s.Phase, s.Message)
		}
	})
	t.Run("a failed instance fails the step, starts no more, and lets the running ones end", func(t *testing.T) {
		fan := fanStep(&ergonv1alpha1.ForEach{Items: jsonOf(t, []int{0, 1, 2, 3, 4}), Parallelism: new(int32(2))})
		w := newFlowWorld(t, ergonv1alpha1.SceneSpec{Steps: []ergonv1alpha1.Step{fan}}, func(_ string, un Unit, _ int32, c []string) unitResult {
			if un.Index == 1 {
				return unitResult{phase: PodFailed}
			}
			return unitResult{phase: PodSucceeded, value: c[1]}
		})
		w.runToEnd()
		s := w.status("fan")
		if s.Phase != ergonv1alpha1.StepFailed || s.Reason != ergonv1alpha1.ReasonInstanceFailed || s.Instances.States != "SFKKK" {
			t.Fatalf("fan = %s %s %s %+v", s.Phase, s.Reason, s.Message, s.Instances)
		}
		if !strings.Contains(s.Message, "instance fan-1") || len(s.Instances.Failures) != 1 || s.Instances.Failures[0].Index != 1 {
			t.Errorf("message %q, failures %+v", s.Message, s.Instances.Failures)
		}
	})
	t.Run("a failed instance retries at once while retry allows", func(t *testing.T) {
		fan := fanStep(&ergonv1alpha1.ForEach{Items: jsonOf(t, []int{0, 1})})
		fan.Retry = &ergonv1alpha1.RetryPolicy{Limit: 2}
		w := newFlowWorld(t, ergonv1alpha1.SceneSpec{Steps: []ergonv1alpha1.Step{fan}}, func(_ string, un Unit, attempt int32, c []string) unitResult {
			if un.Index == 1 && attempt < 3 {
				return unitResult{phase: PodFailed}
			}
			return unitResult{phase: PodSucceeded, value: c[1]}
		})
		w.runToEnd()
		s := w.status("fan")
		if s.Phase != ergonv1alpha1.StepSucceeded || fmt.Sprint(s.Instances.Attempts) != "[1 3]" {
			t.Fatalf("fan = %s %s %+v", s.Phase, s.Message, s.Instances)
		}
		if w.created[naming.UnitPodName("r", "fan", 1, 0, 3)] != 1 {
			t.Errorf("attempt 3 of instance 1 not created once: %v", w.created)
		}
	})
}

// draftCheck is a loop whose check passes on the given iteration.
func loopStep(until string, max int32, exhausted ergonv1alpha1.LoopExhausted) ergonv1alpha1.Step {
	s := step("draft")
	s.Container.Command = []string{"echo", "{{ .loop.iteration }}|{{ .loop.previous }}"}
	s.Loop = &ergonv1alpha1.Loop{Until: until, MaxIterations: max, OnExhausted: exhausted}
	return s
}

// verdict passes on iteration pass: its output is {"ok":BOOL,"seen":"<what the command printed>"}.
func verdict(pass int32) func(string, Unit, int32, []string) unitResult {
	return func(_ string, un Unit, _ int32, c []string) unitResult {
		v, _ := json.Marshal(map[string]any{"ok": un.Iteration >= pass, "seen": c[1]})
		return unitResult{phase: PodSucceeded, value: string(v)}
	}
}

func TestLoopRunsUntilTheConditionHolds(t *testing.T) {
	w := newFlowWorld(t, ergonv1alpha1.SceneSpec{Steps: []ergonv1alpha1.Step{
		loopStep("outputs.ok", 5, ""), func() ergonv1alpha1.Step {
			s := step("publish", "draft")
			s.Container.Command = []string{"echo", "{{ .steps.draft.outputs.seen }}"}
			return s
		}()}}, verdict(3))
	w.runToEnd()
	s := w.status("draft")
	if s.Phase != ergonv1alpha1.StepSucceeded || s.Loop.Iteration != 3 || len(s.Loop.Iterations) != 3 {
		t.Fatalf("draft = %s %s %+v", s.Phase, s.Message, s.Loop)
	}
	// Iteration 3 saw iteration 2's output as .loop.previous.
	second := `{"ok":false,"seen":"2|{\"ok\":false,\"seen\":\"1|\"}"}`
	if got := w.rendered[naming.UnitPodName("r", "draft", -1, 3, 1)][1]; got != "3|"+second {
		t.Errorf("iteration 3 rendered %q", got)
	}
	if got := w.stored[s.Loop.Iterations[1].ConfigMap]; got != second {
		t.Errorf("iteration 2's ConfigMap holds %q", got)
	}
	if got := w.rendered[naming.StepPodName("r", "publish", 1)][1]; got != "3|"+second {
		t.Errorf("the next step saw %q, want the last iteration's output", got)
	}
	for name, n := range w.created {
		if n > 1 {
			t.Errorf("%s created %d times", name, n)
		}
	}
}

func TestLoopExhaustion(t *testing.T) {
	t.Run("fails with MaxIterationsExceeded by default", func(t *testing.T) {
		w := newFlowWorld(t, ergonv1alpha1.SceneSpec{Steps: []ergonv1alpha1.Step{loopStep("outputs.ok", 2, "")}}, verdict(9))
		w.runToEnd()
		s := w.status("draft")
		if s.Phase != ergonv1alpha1.StepFailed || s.Reason != ergonv1alpha1.ReasonMaxIterationsExceeded || len(s.Loop.Iterations) != 2 {
			t.Fatalf("draft = %s %s %s %+v", s.Phase, s.Reason, s.Message, s.Loop)
		}
		if w.run.Status.Phase != ergonv1alpha1.RunFailed {
			t.Errorf("Run %s", w.run.Status.Phase)
		}
	})
	t.Run("succeeds with the last output under onExhausted: succeed", func(t *testing.T) {
		w := newFlowWorld(t, ergonv1alpha1.SceneSpec{Steps: []ergonv1alpha1.Step{
			loopStep("outputs.ok", 2, ergonv1alpha1.LoopExhaustedSucceed)}}, verdict(9))
		w.runToEnd()
		s := w.status("draft")
		if s.Phase != ergonv1alpha1.StepSucceeded || s.Reason != ergonv1alpha1.ReasonExhausted || !strings.HasPrefix(s.Output.Preview, `{"ok":false,"seen":"2|`) {
			t.Fatalf("draft = %s %s %+v", s.Phase, s.Reason, s.Output)
		}
	})
	t.Run("a failed iteration fails the loop", func(t *testing.T) {
		w := newFlowWorld(t, ergonv1alpha1.SceneSpec{Steps: []ergonv1alpha1.Step{loopStep("outputs.ok", 5, "")}},
			func(_ string, un Unit, _ int32, c []string) unitResult {
				if un.Iteration == 2 {
					return unitResult{phase: PodFailed}
				}
				return verdict(9)("", un, 1, c)
			})
		w.runToEnd()
		if s := w.status("draft"); s.Phase != ergonv1alpha1.StepFailed || !strings.Contains(s.Message, "iteration 2") {
			t.Fatalf("draft = %s %s", s.Phase, s.Message)
		}
	})
}

func TestLoopInsideFanOut(t *testing.T) {
	s := loopStep("outputs.ok", 5, "")
	s.Name = "fan"
	s.ForEach = &ergonv1alpha1.ForEach{Items: jsonOf(t, []int32{1, 3})}
	s.Loop.Until = "iteration >= int(item)"
	w := newFlowWorld(t, ergonv1alpha1.SceneSpec{Steps: []ergonv1alpha1.Step{s}}, func(_ string, un Unit, _ int32, c []string) unitResult {
		return unitResult{phase: PodSucceeded, value: fmt.Sprintf("%d@%d", un.Index, un.Iteration)}
	})
	w.runToEnd()
	st := w.status("fan")
	if st.Phase != ergonv1alpha1.StepSucceeded || fmt.Sprint(st.Instances.Iterations) != "[1 3]" {
		t.Fatalf("fan = %s %s %+v", st.Phase, st.Message, st.Instances)
	}
	if st.Output.Preview != `["0@1","1@3"]` {
		t.Errorf("output %s", st.Output.Preview)
	}
}

func TestForEachOverSceneSteps(t *testing.T) {
	fan := ergonv1alpha1.Step{Name: "fan", ForEach: &ergonv1alpha1.ForEach{Items: jsonOf(t, []string{"a", "b"})},
		Scene: &ergonv1alpha1.SceneCall{Name: "child", Params: map[string]string{"item": "{{ .item }}"}}}
	w := newFlowWorld(t, ergonv1alpha1.SceneSpec{Steps: []ergonv1alpha1.Step{fan}}, echoItem)
	w.runToEnd()
	st := w.status("fan")
	if st.Phase != ergonv1alpha1.StepSucceeded || st.Output.Preview != `["child a","child b"]` {
		t.Fatalf("fan = %s %s %+v", st.Phase, st.Message, st.Output)
	}
	if w.created[naming.UnitChildRunName("r", "fan", 1, 0)] != 1 {
		t.Errorf("children %v", w.created)
	}
}

func TestCancelStopsRunningUnits(t *testing.T) {
	fan := fanStep(&ergonv1alpha1.ForEach{Items: jsonOf(t, []int{0, 1, 2}), Parallelism: new(int32(2))})
	w := newFlowWorld(t, ergonv1alpha1.SceneSpec{Steps: []ergonv1alpha1.Step{fan}}, func(string, Unit, int32, []string) unitResult {
		return unitResult{}
	})
	w.plan()
	w.run.Spec.Cancel = true
	p := w.plan()
	if len(p.DeletePods) != 2 {
		t.Fatalf("deleted %v, want the two running instances' pods", p.DeletePods)
	}
	if s := w.status("fan"); s.Phase != ergonv1alpha1.StepCancelled || s.Instances.States != "CCC" {
		t.Fatalf("fan = %s %+v", s.Phase, s.Instances)
	}
	if w.run.Status.Phase != ergonv1alpha1.RunCancelled {
		t.Errorf("Run %s", w.run.Status.Phase)
	}
}

// TestRestartLosesNothingAndDuplicatesNothing drops status writes at many points of a fan-out
// with loops and retries: every unit still runs exactly once per attempt, and the outputs
// are those of a Run that was never interrupted.
func TestRestartLosesNothingAndDuplicatesNothing(t *testing.T) {
	build := func() ergonv1alpha1.SceneSpec {
		s := loopStep("iteration >= int(item)", 5, "")
		s.Name = "fan"
		s.ForEach = &ergonv1alpha1.ForEach{Items: jsonOf(t, []int{1, 2, 3, 1, 2}), Parallelism: new(int32(3))}
		s.Retry = &ergonv1alpha1.RetryPolicy{Limit: 1}
		join := step("join", "fan")
		join.Container.Command = []string{"echo", "{{ .steps.fan.output }}"}
		plain := loopStep("outputs.ok", 4, "")
		return ergonv1alpha1.SceneSpec{Steps: []ergonv1alpha1.Step{s, join, plain}}
	}
	result := func(step string, un Unit, attempt int32, c []string) unitResult {
		if un.Index == 2 && un.Iteration == 2 && attempt == 1 {
			return unitResult{phase: PodFailed}
		}
		if step == "draft" {
			return verdict(3)(step, un, attempt, c)
		}
		return unitResult{phase: PodSucceeded, value: c[1]}
	}
	reference := newFlowWorld(t, build(), result)
	reference.runToEnd()
	for _, every := range []int{2, 3, 5} {
		t.Run(fmt.Sprintf("losing every %dth status write", every), func(t *testing.T) {
			w := newFlowWorld(t, build(), result)
			w.lose = func(pass int) bool { return pass%every == 0 }
			w.runToEnd()
			// A second create of the same name is the AlreadyExists the controller tolerates;
			// what must not happen is another attempt or iteration than without restarts.
			for name := range w.created {
				if reference.created[name] == 0 {
					t.Errorf("%s created, which a Run without restarts does not create", name)
				}
			}
			if len(w.created) != len(reference.created) {
				t.Errorf("%d pods and child Runs created, want %d as without restarts", len(w.created), len(reference.created))
			}
			for _, name := range []string{"fan", "draft", "join"} {
				got, want := w.status(name), reference.status(name)
				if got.Phase != want.Phase || got.Output == nil || got.Output.Preview != want.Output.Preview {
					t.Errorf("%s = %s %+v, want %s %+v", name, got.Phase, got.Output, want.Phase, want.Output)
				}
			}
		})
	}
}

func TestThousandInstancesKeepTheRunSmall(t *testing.T) {
	items := make([]int, 1000)
	for i := range items {
		items[i] = i
	}
	fan := fanStep(&ergonv1alpha1.ForEach{Items: jsonOf(t, items)})
	fan.Retry = &ergonv1alpha1.RetryPolicy{Limit: 1}
	w := newFlowWorld(t, ergonv1alpha1.SceneSpec{Steps: []ergonv1alpha1.Step{fan, step("join", "fan")}}, echoItem)
	w.runToEnd()
	raw, _ := json.Marshal(w.run)
	if w.status("fan").Phase != ergonv1alpha1.StepSucceeded || len(raw) > 64<<10 {
		t.Fatalf("fan %s, Run %d bytes", w.status("fan").Phase, len(raw))
	}
}
