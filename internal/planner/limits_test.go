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
	"strings"
	"testing"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/naming"
)

// sized succeeds every unit with an output of n bytes.
func sized(n int) func(string, Unit, int32, []string) unitResult {
	return func(string, Unit, int32, []string) unitResult {
		return unitResult{phase: PodSucceeded, value: strings.Repeat("x", n)}
	}
}

// neverDone is a loop whose until never holds.
func neverDone(_ string, _ Unit, _ int32, _ []string) unitResult {
	return unitResult{phase: PodSucceeded, value: `{"ok":false}`}
}

// itemsStep fans out over n items, one at a time when serial.
func itemsStep(t *testing.T, n int, serial bool) ergonv1alpha1.Step {
	items := make([]any, n)
	for i := range items {
		items[i] = i
	}
	fe := &ergonv1alpha1.ForEach{Items: jsonOf(t, items)}
	if serial {
		fe.Parallelism = new(int32(1))
	}
	return fanStep(fe)
}

// limitCase is one way a step meets a limit, and how it must end.
type limitCase struct {
	name   string
	steps  func(t *testing.T) []ergonv1alpha1.Step
	result func(string, Unit, int32, []string) unitResult
	plain  func(step string) Output
	limits Limits
	// setup changes the world before the Run runs to its end; nil runs it as it is.
	setup func(w *flowWorld)
	// step is the step that fails, with reason and a message that holds each of words.
	step   string
	reason string
	words  []string
	// check looks at the world after the Run ended.
	check func(t *testing.T, w *flowWorld)
}

func TestLimitsFailTheStepClearlyAndTheRunFinishes(t *testing.T) {
	cases := []limitCase{
		{
			name:   "a fan-out whose outputs join into more than a ConfigMap keeps fails OutputTooLarge, with no limit set",
			steps:  func(t *testing.T) []ergonv1alpha1.Step { return []ergonv1alpha1.Step{itemsStep(t, 3, false)} },
			result: sized(400_000),
			step:   "fan", reason: ergonv1alpha1.ReasonOutputTooLarge,
			words: []string{"JSON array of its 3 instances' outputs", "1,047,552"},
			check: func(t *testing.T, w *flowWorld) {
				if _, ok := w.stored[naming.OutputConfigMapName("r", "fan")]; ok {
					t.Errorf("the fan-in was stored although it is too large")
				}
			},
		},
		{
			name:   "instances whose outputs pass the step's byte limit fail it, and no further instance starts",
			steps:  func(t *testing.T) []ergonv1alpha1.Step { return []ergonv1alpha1.Step{itemsStep(t, 5, true)} },
			result: sized(300),
			limits: Limits{StepOutputBytes: 1000},
			step:   "fan", reason: ergonv1alpha1.ReasonOutputTooLarge,
			words: []string{"instance 3", "1,000 bytes one step may keep", "--max-step-output-bytes", "manager.maxStepOutputBytes"},
			check: func(t *testing.T, w *flowWorld) {
				s := w.status("fan")
				if s.Instances.States != "SSSFK" {
					t.Errorf("states = %q, want SSSFK", s.Instances.States)
				}
				if s.StoredBytes != 900 {
					t.Errorf("storedBytes = %d, want 900", s.StoredBytes)
				}
				if _, ok := w.stored[naming.UnitOutputConfigMapName("r", "fan", 3, 0)]; ok {
					t.Errorf("instance 3's output was stored past the limit")
				}
			},
		},
		{
			name:  "loop iterations whose outputs pass the Run's byte limit fail the loop at that iteration",
			steps: func(*testing.T) []ergonv1alpha1.Step { return []ergonv1alpha1.Step{loopStep("outputs.ok", 5, "")} },
			result: func(string, Unit, int32, []string) unitResult {
				return unitResult{PodSucceeded, `{"ok":false,"pad":"` + strings.Repeat("p", 600) + `"}`}
			},
			limits: Limits{RunOutputBytes: 1000},
			step:   "draft", reason: ergonv1alpha1.ReasonOutputTooLarge,
			words: []string{"iteration 2", "1,000 bytes one Run may keep", "--max-run-output-bytes", "manager.maxRunOutputBytes"},
		},
		{
			name:   "a fan-out that would pass the ConfigMaps of a Run fails ConfigMapLimitReached",
			steps:  func(t *testing.T) []ergonv1alpha1.Step { return []ergonv1alpha1.Step{itemsStep(t, 5, true)} },
			result: echoItem,
			limits: Limits{ConfigMapsPerRun: 3},
			step:   "fan", reason: ergonv1alpha1.ReasonConfigMapLimitReached,
			words: []string{"instance 3", "3 one Run may create", "--max-configmaps-per-run", "manager.maxConfigMapsPerRun"},
			check: func(t *testing.T, w *flowWorld) {
				if n := len(w.stored); n != 3 {
					t.Errorf("%d ConfigMaps stored, want 3", n)
				}
			},
		},
		{
			name:   "a fan-out with more items than units a step may make fails at once and makes none",
			steps:  func(t *testing.T) []ergonv1alpha1.Step { return []ergonv1alpha1.Step{itemsStep(t, 40, false)} },
			result: echoItem,
			limits: Limits{UnitsPerStep: 10},
			step:   "fan", reason: ergonv1alpha1.ReasonUnitLimitReached,
			words: []string{"40 items", "10 units", "--max-units-per-step", "manager.maxUnitsPerStep"},
			check: func(t *testing.T, w *flowWorld) {
				if len(w.created) != 0 {
					t.Errorf("units were made: %v", w.created)
				}
			},
		},
		{
			name: "a loop inside a fan-out stops at the units a step may make, counted over all instances",
			steps: func(t *testing.T) []ergonv1alpha1.Step {
				s := itemsStep(t, 2, false)
				s.Loop = &ergonv1alpha1.Loop{Until: "outputs.ok", MaxIterations: 5}
				return []ergonv1alpha1.Step{s}
			},
			result: neverDone,
			limits: Limits{UnitsPerStep: 7},
			step:   "fan", reason: ergonv1alpha1.ReasonUnitLimitReached,
			words: []string{"has made 7 units", "--max-units-per-step"},
			check: func(t *testing.T, w *flowWorld) {
				if len(w.created) != 7 {
					t.Errorf("%d units made, want 7: %v", len(w.created), w.created)
				}
			},
		},
		{
			name: "a retry of a unit is not a new unit",
			steps: func(*testing.T) []ergonv1alpha1.Step {
				s := loopStep("outputs.ok", 5, "")
				s.Retry = &ergonv1alpha1.RetryPolicy{Limit: 2}
				return []ergonv1alpha1.Step{s}
			},
			result: failFirstAttempts(2),
			limits: Limits{UnitsPerStep: 3},
			step:   "draft", reason: ergonv1alpha1.ReasonUnitLimitReached,
			words: []string{"iteration 4", "has made 3 units"},
			check: func(t *testing.T, w *flowWorld) {
				if len(w.created) != 6 {
					t.Errorf("%d pods made, want 6 (3 iterations of 2 attempts): %v", len(w.created), w.created)
				}
			},
		},
		{
			name:   "an instance output whose ConfigMap was deleted fails the fan-in instead of waiting for it",
			steps:  func(t *testing.T) []ergonv1alpha1.Step { return []ergonv1alpha1.Step{itemsStep(t, 2, true)} },
			result: echoItem,
			setup: func(w *flowWorld) {
				w.plan()
				w.kubelet()
				w.plan() // instance 0 kept and recorded; instance 1 starts
				delete(w.stored, naming.UnitOutputConfigMapName("r", "fan", 0, 0))
			},
			step: "fan", reason: ergonv1alpha1.ReasonOutputError,
			words: []string{naming.UnitOutputConfigMapName("r", "fan", 0, 0), "instance 0", "deleted"},
		},
		{
			name: "a loop whose previous output's ConfigMap was deleted fails instead of waiting for it",
			steps: func(*testing.T) []ergonv1alpha1.Step {
				s := loopStep("outputs.ok", 5, "")
				s.Retry = &ergonv1alpha1.RetryPolicy{Limit: 1}
				return []ergonv1alpha1.Step{s}
			},
			result: failIteration(2),
			setup: func(w *flowWorld) {
				w.plan()
				w.kubelet()
				w.plan() // iteration 1 kept; iteration 2 starts with its output in hand
				delete(w.stored, naming.UnitOutputConfigMapName("r", "draft", -1, 1))
			},
			step: "draft", reason: ergonv1alpha1.ReasonOutputError,
			words: []string{"previous iteration's output", "deleted"},
		},
		{
			name:   "an output ConfigMap the API server refused is not asked for again: the step fails with its message",
			steps:  func(t *testing.T) []ergonv1alpha1.Step { return []ergonv1alpha1.Step{itemsStep(t, 2, true)} },
			result: echoItem,
			setup: func(w *flowWorld) {
				w.refused = map[string]string{naming.UnitOutputConfigMapName("r", "fan", 0, 0): "exceeded quota: q, requested: count/configmaps=1"}
			},
			step: "fan", reason: ergonv1alpha1.ReasonInstanceFailed,
			words: []string{"refused ConfigMap", "exceeded quota"},
		},
		{
			name: "a step whose templates render the outputs of its dependencies into more than fits in a pod fails RenderedTooLarge",
			steps: func(t *testing.T) []ergonv1alpha1.Step {
				join := step("join", "fan")
				join.Container.Command = []string{"echo", "{{ .steps.fan.output }}", "{{ .steps.fan.output }}"}
				return []ergonv1alpha1.Step{itemsStep(t, 2, false), join}
			},
			result: sized(300_000),
			step:   "join", reason: ergonv1alpha1.ReasonRenderedTooLarge,
			words: []string{"$ERGON_INPUTS", "1,048,576"},
			check: func(t *testing.T, w *flowWorld) {
				if w.created[naming.StepPodName("r", "join", 1)] != 0 {
					t.Errorf("the join step's pod was asked for")
				}
			},
		},
		{
			name: "a loop whose previous output renders into more than fits in a pod fails RenderedTooLarge",
			steps: func(*testing.T) []ergonv1alpha1.Step {
				s := loopStep("output == 'done'", 5, "")
				s.Container.Command = []string{"echo", "{{ .loop.previous }}{{ .loop.previous }}"}
				return []ergonv1alpha1.Step{s}
			},
			result: func(string, Unit, int32, []string) unitResult {
				return unitResult{PodSucceeded, strings.Repeat("y", 600_000)}
			},
			step: "draft", reason: ergonv1alpha1.ReasonRenderedTooLarge,
			words: []string{"iteration 2", "1,200,004 bytes"},
		},
		{
			name:   "a plain step's output past the Run's byte limit fails it, and is not kept",
			steps:  func(*testing.T) []ergonv1alpha1.Step { return []ergonv1alpha1.Step{step("a"), step("b", "a")} },
			plain:  func(string) Output { return Output{Value: strings.Repeat("z", 2000), Stored: true} },
			limits: Limits{RunOutputBytes: 3000},
			step:   "b", reason: ergonv1alpha1.ReasonOutputTooLarge,
			words: []string{"the output of step b is 2,000 bytes", "keeps 2,000 already", "--max-run-output-bytes"},
			check: func(t *testing.T, w *flowWorld) {
				if _, ok := w.stored[naming.OutputConfigMapName("r", "b")]; ok {
					t.Errorf("step b's output was stored past the limit")
				}
				if st := w.run.Status.Storage; st == nil || st.Bytes != 2000 || st.ConfigMaps != 1 || st.MaxBytes != 3000 {
					t.Errorf("storage = %+v, want 2000 bytes in 1 ConfigMap of at most 3000", st)
				}
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			result := tc.result
			if result == nil {
				result = echoItem
			}
			w := newFlowWorld(t, ergonv1alpha1.SceneSpec{Steps: tc.steps(t)}, result)
			w.limits, w.plain = tc.limits, tc.plain
			if tc.setup != nil {
				tc.setup(w)
			}
			w.runToEnd()
			if w.run.Status.Phase != ergonv1alpha1.RunFailed {
				t.Fatalf("Run %s, want Failed: %+v", w.run.Status.Phase, w.run.Status.Steps)
			}
			s := w.status(tc.step)
			if s.Phase != ergonv1alpha1.StepFailed || s.Reason != tc.reason {
				t.Fatalf("step %s is %s (%s: %s), want Failed with reason %s", tc.step, s.Phase, s.Reason, s.Message, tc.reason)
			}
			for _, word := range tc.words {
				if !strings.Contains(s.Message, word) {
					t.Errorf("message %q does not say %q", s.Message, word)
				}
			}
			if tc.check != nil {
				tc.check(t, w)
			}
		})
	}
}

// failFirstAttempts fails the first n-1 attempts of every unit, and never ends the loop.
func failFirstAttempts(n int32) func(string, Unit, int32, []string) unitResult {
	return func(_ string, _ Unit, attempt int32, _ []string) unitResult {
		if attempt < n {
			return unitResult{phase: PodFailed}
		}
		return unitResult{phase: PodSucceeded, value: `{"ok":false}`}
	}
}

// failIteration fails the first attempt of the given iteration, and never ends the loop.
func failIteration(it int32) func(string, Unit, int32, []string) unitResult {
	return func(_ string, un Unit, attempt int32, _ []string) unitResult {
		if un.Iteration == it && attempt == 1 {
			return unitResult{phase: PodFailed}
		}
		return unitResult{phase: PodSucceeded, value: `{"ok":false}`}
	}
}

func TestStorageCountsWhatTheRunKeepsAndTheLimitsInEffect(t *testing.T) {
	w := newFlowWorld(t, ergonv1alpha1.SceneSpec{Steps: []ergonv1alpha1.Step{itemsStep(t, 4, false)}}, sized(2000))
	w.limits = Limits{UnitsPerStep: 10, StepOutputBytes: 1 << 20, RunOutputBytes: 4 << 20, ConfigMapsPerRun: 50}
	w.runToEnd()
	if w.run.Status.Phase != ergonv1alpha1.RunSucceeded {
		t.Fatalf("Run %s: %+v", w.run.Status.Phase, w.run.Status.Steps)
	}
	// Four instance outputs of 2,000 bytes, and their fan-in: ["xx…",…] with quotes and commas.
	fanIn := int64(4*2000 + 4*2 + 3 + 2)
	want := ergonv1alpha1.StorageStatus{Bytes: 8000 + fanIn, ConfigMaps: 5, MaxBytes: 4 << 20, MaxConfigMaps: 50, MaxStepBytes: 1 << 20}
	if got := w.run.Status.Storage; got == nil || *got != want {
		t.Errorf("storage = %+v, want %+v", got, want)
	}
	if got := w.status("fan").StoredBytes; got != want.Bytes {
		t.Errorf("the step's storedBytes = %d, want %d", got, want.Bytes)
	}
	if len(w.stored) != 5 {
		t.Errorf("%d ConfigMaps stored, want 5", len(w.stored))
	}
}

func TestATranscriptThatDoesNotFitBesideItsOutputIsNotKept(t *testing.T) {
	w := newFlowWorld(t, ergonv1alpha1.SceneSpec{Steps: []ergonv1alpha1.Step{step("a")}}, echoItem)
	w.plain = func(string) Output {
		return Output{Value: strings.Repeat("o", 900_000), Stored: true, Transcript: `{"t":"` + strings.Repeat("t", 500_000) + `"}`}
	}
	var stores []StoreRequest
	for range 10 {
		p := w.plan()
		stores = append(stores, p.Store...)
		if w.run.Status.Phase.Finished() {
			break
		}
		w.kubelet()
	}
	s := w.status("a")
	if w.run.Status.Phase != ergonv1alpha1.RunSucceeded || s.Phase != ergonv1alpha1.StepSucceeded {
		t.Fatalf("Run %s, step a %s (%s)", w.run.Status.Phase, s.Phase, s.Message)
	}
	if len(stores) != 1 || stores[0].Transcript != "" || len(stores[0].Value) != 900_000 {
		t.Fatalf("stores = %d, want the output alone", len(stores))
	}
	if s.Transcript != nil || s.StoredBytes != 900_000 {
		t.Errorf("transcript = %+v, storedBytes = %d", s.Transcript, s.StoredBytes)
	}
	if !hasEvent(w.last, ergonv1alpha1.ReasonOutputTooLarge) {
		t.Errorf("no Event says the transcript was not kept")
	}
}

func TestWhatARunKeepsStartsFromItsStatus(t *testing.T) {
	cases := []struct {
		name   string
		status ergonv1alpha1.RunStatus
		want   ergonv1alpha1.StorageStatus
	}{
		{name: "a new Run keeps nothing"},
		{
			name: "the storage record wins once written",
			status: ergonv1alpha1.RunStatus{Storage: &ergonv1alpha1.StorageStatus{Bytes: 10, ConfigMaps: 3},
				Steps: []ergonv1alpha1.StepStatus{{Name: "a", StoredBytes: 99}}},
			want: ergonv1alpha1.StorageStatus{Bytes: 10, ConfigMaps: 3},
		},
		{
			name: "a retry's copied outputs count before its first pass, one ConfigMap each",
			status: ergonv1alpha1.RunStatus{Steps: []ergonv1alpha1.StepStatus{
				{Name: "a", StoredBytes: 3000}, {Name: "b"}, {Name: "c", StoredBytes: 2000}}},
			want: ergonv1alpha1.StorageStatus{Bytes: 5000, ConfigMaps: 2},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := storedSoFar(&tc.status); got != tc.want {
				t.Errorf("storedSoFar = %+v, want %+v", got, tc.want)
			}
		})
	}
}
