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
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/compile"
	"github.com/ergon-dev/ergon/internal/naming"
	"github.com/ergon-dev/ergon/internal/outputs"
)

var t0 = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

func step(name string, deps ...string) ergonv1alpha1.Step {
	return ergonv1alpha1.Step{Name: name, DependsOn: deps, Container: &ergonv1alpha1.ContainerStep{
		Image: "busybox", Command: []string{"echo", name},
	}}
}

// world simulates the cluster around the planner: it persists each plan's status, turns pod
// requests into pods, and finishes pods as the test's outcome function says.
type world struct {
	t       *testing.T
	scene   *compile.Scene
	run     *ergonv1alpha1.Run
	now     time.Time
	pods    map[string][]PodState
	outputs map[string]Output
	// outcome decides how an attempt ends: "" keeps it running.
	outcome func(step string, attempt int32) PodPhase
	// started lists pod names in the order the planner asked for them, per plan.
	started [][]string
	last    *Plan
}

func newWorld(t *testing.T, spec ergonv1alpha1.SceneSpec, outcome func(string, int32) PodPhase) *world {
	t.Helper()
	scene, errs := compile.Compile(&spec)
	if len(errs) > 0 {
		t.Fatalf("compile: %v", errs)
	}
	run := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "ns", UID: "uid-1"}}
	run.Status.SceneSnapshot = &spec
	return &world{t: t, scene: scene, run: run, now: t0, pods: map[string][]PodState{}, outputs: map[string]Output{}, outcome: outcome}
}

func succeed(string, int32) PodPhase { return PodSucceeded }

// plan runs the planner once and applies its plan.
func (w *world) plan() *Plan {
	f := &Facts{Now: w.now, Run: w.run, Scene: w.scene, Pods: w.pods, Outputs: w.outputs,
		Children: map[string]ChildState{}, Gates: map[string]GateState{}, PodBudget: -1, MaxDepth: 5}
	p := Decide(f)
	w.run.Status = p.Status
	var started []string
	for _, req := range p.Pods {
		w.pods[req.Step.Name] = append(w.pods[req.Step.Name], PodState{Name: req.Name, Attempt: req.Attempt, Phase: PodRunning})
		started = append(started, req.Name)
	}
	for _, name := range p.DeletePods {
		for s, pods := range w.pods {
			w.pods[s] = slices.DeleteFunc(pods, func(p PodState) bool { return p.Name == name })
		}
	}
	w.started = append(w.started, started)
	w.last = p
	return p
}

// kubelet ends running pods as the outcome says.
func (w *world) kubelet() {
	for s, pods := range w.pods {
		for i := range pods {
			if pods[i].Phase != PodRunning {
				continue
			}
			switch w.outcome(s, pods[i].Attempt) {
			case PodSucceeded:
				pods[i].Phase = PodSucceeded
				w.outputs[pods[i].Name] = Output{Value: "out of " + s}
			case PodFailed:
				pods[i].Phase, pods[i].ExitCode = PodFailed, new(int32(1))
				pods[i].FinishedAt = w.now
			}
		}
	}
}

// runToEnd alternates plans and kubelet until the Run finishes, moving the clock to each
// requeue time when nothing else happens.
func (w *world) runToEnd() {
	for range 100 {
		p := w.plan()
		if p.Status.Phase.Finished() {
			return
		}
		w.kubelet()
		if p.RequeueAfter > 0 {
			w.now = w.now.Add(p.RequeueAfter)
		}
	}
	w.t.Fatalf("the Run did not finish: %+v", w.run.Status.Steps)
}

func (w *world) phase(step string) ergonv1alpha1.StepPhase {
	for _, s := range w.run.Status.Steps {
		if s.Name == step {
			return s.Phase
		}
	}
	return ergonv1alpha1.StepPending
}

func (w *world) status(step string) ergonv1alpha1.StepStatus {
	for _, s := range w.run.Status.Steps {
		if s.Name == step {
			return s
		}
	}
	w.t.Fatalf("no status for step %s", step)
	return ergonv1alpha1.StepStatus{}
}

// wave is the index of the plan that started a step's first attempt.
func (w *world) wave(step string) int {
	for i, names := range w.started {
		if slices.Contains(names, naming.StepPodName("r", step, 1)) {
			return i
		}
	}
	return -1
}

func TestGraphsRunInDependencyOrder(t *testing.T) {
	cases := []struct {
		name  string
		steps []ergonv1alpha1.Step
		// waves lists, per step, the plan in which it starts.
		waves map[string]int
	}{
		{
			name:  "a diamond joins both branches before its last step",
			steps: []ergonv1alpha1.Step{step("a"), step("b", "a"), step("c", "a"), step("d", "b", "c")},
			waves: map[string]int{"a": 0, "b": 1, "c": 1, "d": 2},
		},
		{
			name: "a fan-out starts every branch at once and the fan-in waits for all",
			steps: []ergonv1alpha1.Step{step("root"), step("x1", "root"), step("x2", "root"), step("x3", "root"),
				step("x4", "root"), step("join", "x1", "x2", "x3", "x4")},
			waves: map[string]int{"root": 0, "x1": 1, "x2": 1, "x3": 1, "x4": 1, "join": 2},
		},
		{
			name:  "independent roots start together",
			steps: []ergonv1alpha1.Step{step("a"), step("b"), step("c", "a")},
			waves: map[string]int{"a": 0, "b": 0, "c": 1},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, ergonv1alpha1.SceneSpec{Steps: tc.steps}, succeed)
			w.runToEnd()
			if w.run.Status.Phase != ergonv1alpha1.RunSucceeded {
				t.Fatalf("phase = %s, want Succeeded", w.run.Status.Phase)
			}
			for s, want := range tc.waves {
				if got := w.wave(s); got != want {
					t.Errorf("step %s started in plan %d, want %d", s, got, want)
				}
			}
			if got, want := w.run.Status.Progress, fmt.Sprintf("%d/%d", len(tc.steps), len(tc.steps)); got != want {
				t.Errorf("progress = %s, want %s", got, want)
			}
		})
	}
}

func TestSkipsAndFailuresPropagate(t *testing.T) {
	failing := func(bad ...string) func(string, int32) PodPhase {
		return func(s string, _ int32) PodPhase {
			if slices.Contains(bad, s) {
				return PodFailed
			}
			return PodSucceeded
		}
	}
	whenFalse := step("b", "a")
	whenFalse.When = "params.go == 'yes'"
	mayFail := step("a")
	mayFail.ContinueOnFailure = true
	cases := []struct {
		name    string
		spec    ergonv1alpha1.SceneSpec
		outcome func(string, int32) PodPhase
		phase   ergonv1alpha1.RunPhase
		steps   map[string]ergonv1alpha1.StepPhase
		reasons map[string]string
	}{
		{
			name: "a branch skipped by its condition still lets the join run",
			spec: ergonv1alpha1.SceneSpec{
				Params: []ergonv1alpha1.ParamSpec{{Name: "go", Default: new("no")}},
				Steps:  []ergonv1alpha1.Step{step("a"), whenFalse, step("c", "a"), step("d", "b", "c"), step("e", "b")},
			},
			outcome: succeed,
			phase:   ergonv1alpha1.RunSucceeded,
			steps: map[string]ergonv1alpha1.StepPhase{"b": ergonv1alpha1.StepSkipped, "d": ergonv1alpha1.StepSucceeded,
				"e": ergonv1alpha1.StepSkipped},
			reasons: map[string]string{"b": ergonv1alpha1.ReasonWhenFalse, "e": ergonv1alpha1.ReasonDependenciesSkipped},
		},
		{
			name:    "a failed step skips its dependents, stops new steps and fails the Run",
			spec:    ergonv1alpha1.SceneSpec{Steps: []ergonv1alpha1.Step{step("a"), step("b", "a"), step("c"), step("d", "c")}},
			outcome: failing("a"),
			phase:   ergonv1alpha1.RunFailed,
			steps: map[string]ergonv1alpha1.StepPhase{"a": ergonv1alpha1.StepFailed, "b": ergonv1alpha1.StepSkipped,
				"c": ergonv1alpha1.StepSucceeded, "d": ergonv1alpha1.StepSkipped},
			reasons: map[string]string{"b": ergonv1alpha1.ReasonRunFailing, "d": ergonv1alpha1.ReasonRunFailing},
		},
		{
			name:    "a step that may fail skips its dependents but not the Run",
			spec:    ergonv1alpha1.SceneSpec{Steps: []ergonv1alpha1.Step{mayFail, step("b", "a"), step("c"), step("d", "c")}},
			outcome: failing("a"),
			phase:   ergonv1alpha1.RunSucceeded,
			steps: map[string]ergonv1alpha1.StepPhase{"a": ergonv1alpha1.StepFailed, "b": ergonv1alpha1.StepSkipped,
				"d": ergonv1alpha1.StepSucceeded},
			reasons: map[string]string{"b": ergonv1alpha1.ReasonDependencyFailed},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, tc.spec, tc.outcome)
			w.runToEnd()
			if w.run.Status.Phase != tc.phase {
				t.Fatalf("phase = %s, want %s", w.run.Status.Phase, tc.phase)
			}
			for s, want := range tc.steps {
				if got := w.phase(s); got != want {
					t.Errorf("step %s is %s, want %s", s, got, want)
				}
			}
			for s, want := range tc.reasons {
				if got := w.status(s).Reason; got != want {
					t.Errorf("step %s reason = %s, want %s", s, got, want)
				}
			}
		})
	}
}

func TestRetriesWaitForTheirBackoff(t *testing.T) {
	flaky := step("flaky")
	flaky.Retry = &ergonv1alpha1.RetryPolicy{Limit: 2, Backoff: &ergonv1alpha1.Backoff{
		Duration: &metav1.Duration{Duration: 10 * time.Second}, Factor: new(int32(3)),
	}}
	w := newWorld(t, ergonv1alpha1.SceneSpec{Steps: []ergonv1alpha1.Step{flaky}}, func(string, int32) PodPhase { return PodFailed })

	w.plan() // attempt 1 starts
	w.kubelet()
	p := w.plan()
	s := w.status("flaky")
	if s.Phase != ergonv1alpha1.StepRetrying || p.RequeueAfter != 10*time.Second || len(p.Pods) != 0 {
		t.Fatalf("after attempt 1: phase %s, requeue %s, pods %d; want Retrying, 10s, 0", s.Phase, p.RequeueAfter, len(p.Pods))
	}
	w.now = w.now.Add(5 * time.Second)
	if p := w.plan(); len(p.Pods) != 0 || p.RequeueAfter != 5*time.Second {
		t.Fatalf("halfway through the backoff: %d pods, requeue %s; want none, 5s", len(p.Pods), p.RequeueAfter)
	}
	w.now = w.now.Add(5 * time.Second)
	if p := w.plan(); len(p.Pods) != 1 || p.Pods[0].Name != naming.StepPodName("r", "flaky", 2) {
		t.Fatalf("when the backoff ends, want pod r-flaky-2, got %+v", p.Pods)
	}
	w.kubelet()
	if p := w.plan(); p.RequeueAfter != 30*time.Second {
		t.Fatalf("after attempt 2, requeue %s, want 30s (10s * 3)", p.RequeueAfter)
	}
	w.runToEnd()
	s = w.status("flaky")
	if s.Phase != ergonv1alpha1.StepFailed || s.Attempts != 3 || len(s.History) != 3 {
		t.Fatalf("want Failed after 3 attempts with 3 history entries, got %s, %d, %d", s.Phase, s.Attempts, len(s.History))
	}
}

func TestBackoff(t *testing.T) {
	d := func(s string) *metav1.Duration { v, _ := time.ParseDuration(s); return &metav1.Duration{Duration: v} }
	cases := []struct {
		name    string
		backoff *ergonv1alpha1.Backoff
		attempt int32
		want    time.Duration
	}{
		{"no backoff retries at once", nil, 1, 0},
		{"the first retry waits the duration", &ergonv1alpha1.Backoff{Duration: d("10s")}, 1, 10 * time.Second},
		{"the default factor doubles", &ergonv1alpha1.Backoff{Duration: d("10s")}, 3, 40 * time.Second},
		{"the cap holds", &ergonv1alpha1.Backoff{Duration: d("10s"), MaxDuration: d("25s")}, 3, 25 * time.Second},
		{"many attempts do not overflow", &ergonv1alpha1.Backoff{Duration: d("1h"), Factor: new(int32(10))}, 20, time.Duration(1<<63 - 1)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Backoff(tc.backoff, tc.attempt); got != tc.want {
				t.Errorf("Backoff = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestParallelismCapsRunningPods(t *testing.T) {
	steps := []ergonv1alpha1.Step{step("a"), step("b"), step("c"), step("d"), step("e")}
	w := newWorld(t, ergonv1alpha1.SceneSpec{Steps: steps, Parallelism: new(int32(2))}, func(string, int32) PodPhase { return "" })
	if p := w.plan(); len(p.Pods) != 2 {
		t.Fatalf("first plan started %d pods, want 2", len(p.Pods))
	}
	if p := w.plan(); len(p.Pods) != 0 {
		t.Fatalf("with two running, the next plan started %d pods, want 0", len(p.Pods))
	}
	w.outcome = succeed
	w.kubelet()
	if p := w.plan(); len(p.Pods) != 2 {
		t.Fatalf("after two finished, %d pods started, want 2", len(p.Pods))
	}
	w.runToEnd()
	if w.run.Status.Phase != ergonv1alpha1.RunSucceeded {
		t.Fatalf("phase %s", w.run.Status.Phase)
	}
}

func TestTheManagerWideBudgetCapsNewPods(t *testing.T) {
	w := newWorld(t, ergonv1alpha1.SceneSpec{Steps: []ergonv1alpha1.Step{step("a"), step("b"), step("c")}}, succeed)
	f := &Facts{Now: w.now, Run: w.run, Scene: w.scene, PodBudget: 1, MaxDepth: 5}
	if p := Decide(f); len(p.Pods) != 1 {
		t.Fatalf("started %d pods with a budget of 1", len(p.Pods))
	}
}

func TestCancellationStopsTheGraphMidway(t *testing.T) {
	w := newWorld(t, ergonv1alpha1.SceneSpec{Steps: []ergonv1alpha1.Step{step("a"), step("b", "a"), step("c")}},
		func(s string, _ int32) PodPhase {
			if s == "c" {
				return PodSucceeded
			}
			return ""
		})
	w.plan()
	w.kubelet()
	w.plan()
	w.run.Spec.Cancel = true
	p := w.plan()
	if !slices.Equal(p.DeletePods, []string{naming.StepPodName("r", "a", 1)}) {
		t.Fatalf("DeletePods = %v, want the running pod r-a-1", p.DeletePods)
	}
	if w.run.Status.Phase != ergonv1alpha1.RunCancelled || w.phase("a") != ergonv1alpha1.StepCancelled ||
		w.phase("c") != ergonv1alpha1.StepSucceeded || w.phase("b") != ergonv1alpha1.StepPending {
		t.Fatalf("after cancel: run %s, a %s, b %s, c %s", w.run.Status.Phase, w.phase("a"), w.phase("b"), w.phase("c"))
	}
}

func TestCancellationStopsAPodTheStatusDoesNotKnow(t *testing.T) {
	w := newWorld(t, ergonv1alpha1.SceneSpec{Steps: []ergonv1alpha1.Step{step("a")}}, succeed)
	w.pods["a"] = []PodState{{Name: naming.StepPodName("r", "a", 1), Attempt: 1, Phase: PodRunning}}
	w.run.Spec.Cancel = true
	p := w.plan()
	if !slices.Equal(p.DeletePods, []string{naming.StepPodName("r", "a", 1)}) || w.phase("a") != ergonv1alpha1.StepCancelled {
		t.Fatalf("DeletePods = %v, step a %s; want the pod deleted and the step Cancelled", p.DeletePods, w.phase("a"))
	}
}

func TestARunPastItsTimeoutFails(t *testing.T) {
	w := newWorld(t, ergonv1alpha1.SceneSpec{Steps: []ergonv1alpha1.Step{step("a")}}, func(string, int32) PodPhase { return "" })
	w.run.Spec.Timeout = &metav1.Duration{Duration: time.Hour}
	if p := w.plan(); p.RequeueAfter != time.Hour {
		t.Fatalf("requeue %s, want the Run's deadline in 1h", p.RequeueAfter)
	}
	w.now = w.now.Add(time.Hour)
	w.plan()
	if w.run.Status.Phase != ergonv1alpha1.RunFailed || w.status("a").Reason != ergonv1alpha1.ReasonRunTimedOut {
		t.Fatalf("phase %s, step reason %s", w.run.Status.Phase, w.status("a").Reason)
	}
}

func TestAPodTheStatusLostIsAdoptedNotStartedAgain(t *testing.T) {
	w := newWorld(t, ergonv1alpha1.SceneSpec{Steps: []ergonv1alpha1.Step{step("a")}}, succeed)
	w.pods["a"] = []PodState{{Name: naming.StepPodName("r", "a", 1), Attempt: 1, Phase: PodRunning}}
	if p := w.plan(); len(p.Pods) != 0 {
		t.Fatalf("planned %v although the pod of attempt 1 exists", p.Pods)
	}
	if s := w.status("a"); s.Phase != ergonv1alpha1.StepRunning || s.Attempts != 1 || s.PodName != naming.StepPodName("r", "a", 1) {
		t.Fatalf("status %+v", s)
	}
}

func BenchmarkDecideFanOut1000(b *testing.B) {
	steps := []ergonv1alpha1.Step{step("root")}
	for i := 1; i < 1000; i++ {
		steps = append(steps, step(fmt.Sprintf("leaf-%d", i), "root"))
	}
	spec := ergonv1alpha1.SceneSpec{Steps: steps}
	scene, errs := compile.Compile(&spec)
	if len(errs) > 0 {
		b.Fatal(errs)
	}
	run := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: "r"}}
	run.Status.SceneSnapshot = &spec
	run.Status.Steps = []ergonv1alpha1.StepStatus{{Name: "root", Phase: ergonv1alpha1.StepSucceeded,
		Output: outputs.Value("r", "root", "x"), History: []ergonv1alpha1.AttemptStatus{{Attempt: 1}}}}
	b.ReportAllocs()
	for b.Loop() {
		p := Decide(&Facts{Now: t0, Run: run, Scene: scene, PodBudget: -1, MaxDepth: 5})
		if len(p.Pods) != 999 {
			b.Fatalf("started %d pods", len(p.Pods))
		}
	}
}

func TestAnAgentStepRunsAsAPodAndRecordsItsTranscriptAndUsage(t *testing.T) {
	agent := ergonv1alpha1.Step{Name: "draft", DependsOn: []string{"fetch"}, Agent: &ergonv1alpha1.AgentStep{
		System: "You write reports.", Prompt: "Summarise: {{ .steps.fetch.output }}"}}
	w := newWorld(t, ergonv1alpha1.SceneSpec{Steps: []ergonv1alpha1.Step{step("fetch"), agent}}, succeed)
	w.plan()
	w.kubelet()
	p := w.plan()
	if len(p.Pods) != 1 || p.Pods[0].Step.Name != "draft" {
		t.Fatalf("pods = %v, want the agent step's", p.Pods)
	}
	if r := p.Pods[0].Rendered; r.AgentPrompt != "Summarise: out of fetch" || r.AgentSystem != "You write reports." {
		t.Fatalf("rendered = %+v", r)
	}
	name := p.Pods[0].Name
	w.pods["draft"][0].Phase = PodSucceeded
	usage := &ergonv1alpha1.AgentUsage{Turns: 3, PromptTokens: 120, CompletionTokens: 30, TotalTokens: 150}
	w.outputs[name] = Output{Value: `{"title":"t"}`, Transcript: `{"entries":[]}`, Usage: usage}
	p = w.plan()
	s := p.Status.Steps[1]
	if s.Phase != ergonv1alpha1.StepSucceeded || s.Usage == nil || *s.Usage != *usage {
		t.Fatalf("status = %+v", s)
	}
	if s.Transcript == nil || s.Transcript.Size != 14 || s.Transcript.Ref == nil || s.Transcript.Ref.Key != outputs.KeyTranscript {
		t.Fatalf("transcript = %+v", s.Transcript)
	}
}

func TestAnAgentPromptTooLargeForItsPodFailsTheStep(t *testing.T) {
	agent := ergonv1alpha1.Step{Name: "draft", Agent: &ergonv1alpha1.AgentStep{
		Prompt: "{{ .params.big }}"}}
	spec := ergonv1alpha1.SceneSpec{Params: []ergonv1alpha1.ParamSpec{{Name: "big"}}, Steps: []ergonv1alpha1.Step{agent}}
	w := newWorld(t, spec, succeed)
	w.run.Spec.Params = map[string]string{"big": strings.Repeat("x", MaxAgentPrompt+1)}
	p := w.plan()
	if len(p.Pods) != 0 || p.Status.Steps[0].Phase != ergonv1alpha1.StepFailed ||
		!strings.Contains(p.Status.Steps[0].Message, "hand large data over as context") {
		t.Fatalf("pods %d, step %+v", len(p.Pods), p.Status.Steps[0])
	}
}

func TestOnlyPlansThatObserveMayWaitToBeWritten(t *testing.T) {
	ends := map[string]PodPhase{}
	w := newWorld(t, ergonv1alpha1.SceneSpec{Steps: []ergonv1alpha1.Step{step("a"), step("b"), step("c", "a", "b"),
		step("d", "c"), step("e", "c")}},
		func(s string, _ int32) PodPhase { return ends[s] })
	pass := func(why string, want bool) {
		t.Helper()
		stored := w.run.Status.DeepCopy()
		if got := w.plan().OnlyObserves(stored); got != want {
			t.Errorf("%s: OnlyObserves = %v, want %v (plan: %d pods, %d deletions, phase %s -> %s)", why, got, want,
				len(w.last.Pods), len(w.last.DeletePods), stored.Phase, w.last.Status.Phase)
		}
	}
	pass("the first pass starts a and b", false)
	ends["a"] = PodSucceeded
	w.kubelet()
	pass("a ended, and c still waits for b", true)
	pass("nothing changed", true)
	ends["b"] = PodSucceeded
	w.kubelet()
	pass("b ended, which starts c", false)
	ends["c"] = PodSucceeded
	w.kubelet()
	pass("c ended, which starts d and e", false)
	ends["d"] = PodSucceeded
	w.kubelet()
	pass("d ended while e runs", true)
	w.run.Spec.Cancel = true
	pass("the cancelled Run stops e", false)
}

func TestAFailedAgentStepKeepsItsLastAttemptsTranscript(t *testing.T) {
	for _, c := range []struct {
		name  string
		retry *ergonv1alpha1.RetryPolicy
		// kept says the first attempt's failure keeps its transcript.
		kept bool
	}{
		{name: "the step fails for good: its transcript says why", kept: true},
		{name: "a retry comes: nothing is kept yet", retry: &ergonv1alpha1.RetryPolicy{Limit: 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			agent := ergonv1alpha1.Step{Name: "draft", Retry: c.retry, Agent: &ergonv1alpha1.AgentStep{Prompt: "Report."}}
			w := newWorld(t, ergonv1alpha1.SceneSpec{Steps: []ergonv1alpha1.Step{agent}},
				func(string, int32) PodPhase { return PodFailed })
			w.plan()
			w.kubelet()
			name := w.pods["draft"][0].Name
			w.outputs[name] = Output{Transcript: `{"outcome":"MaxTurnsExceeded","entries":[]}`}
			p := w.plan()
			s := p.Status.Steps[0]
			if !c.kept {
				if s.Transcript != nil || len(p.Store) != 0 || s.Attempts != 2 {
					t.Fatalf("step %s attempt %d, transcript %+v, stores %+v; want a retry and nothing kept", s.Phase, s.Attempts,
						s.Transcript, p.Store)
				}
				return
			}
			if s.Phase != ergonv1alpha1.StepFailed || s.Transcript == nil || s.Transcript.Ref == nil ||
				s.Transcript.Ref.Key != outputs.KeyTranscript || s.Transcript.Size != int64(len(w.outputs[name].Transcript)) {
				t.Fatalf("step %s, transcript %+v", s.Phase, s.Transcript)
			}
			if len(p.Store) != 1 || p.Store[0].Transcript != w.outputs[name].Transcript || p.Store[0].ConfigMap != s.Transcript.Ref.ConfigMap {
				t.Fatalf("stores %+v, want the transcript kept where the status points", p.Store)
			}
		})
	}
}
