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

package tracing

import (
	"regexp"
	"strconv"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/cause"
)

var t0 = time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)

func at(s int) *metav1.Time { return &metav1.Time{Time: t0.Add(time.Duration(s) * time.Second)} }

func testRun() *ergonv1alpha1.Run {
	return &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: "nightly-1", Namespace: "team", UID: "run-uid",
		CreationTimestamp: metav1.Time{Time: t0}, Annotations: map[string]string{ergonv1alpha1.AnnotationCreatedBy: "alice"}},
		Spec: ergonv1alpha1.RunSpec{SceneRef: corev1.LocalObjectReference{Name: "report"}}}
}

// byName indexes spans by name; a name twice fails the test.
func byName(t *testing.T, spans []Span) map[string]Span {
	t.Helper()
	m := map[string]Span{}
	for _, s := range spans {
		if _, dup := m[s.Name]; dup {
			t.Fatalf("two spans named %q", s.Name)
		}
		m[s.Name] = s
	}
	return m
}

func attr(s Span, key string) (attribute.Value, bool) {
	for _, kv := range s.Attributes {
		if string(kv.Key) == key {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

func TestAStepThatEndsIsASpanWithItsAttemptAndStages(t *testing.T) {
	run := testRun()
	before := &ergonv1alpha1.RunStatus{Phase: ergonv1alpha1.RunRunning, Steps: []ergonv1alpha1.StepStatus{
		{Name: "build", Phase: ergonv1alpha1.StepRunning, StartedAt: at(1), PodName: "p1", Attempts: 1}}}
	after := before.DeepCopy()
	after.Steps[0].Phase, after.Steps[0].FinishedAt = ergonv1alpha1.StepSucceeded, at(20)
	c := Change{Run: run, Before: before, After: after, Now: t0.Add(time.Minute),
		Steps: map[string]StepInfo{"build": {Kind: KindContainer}},
		Pods:  map[string]PodTimes{"p1": {Created: at(2).Time, Scheduled: at(3).Time, Started: at(6).Time, Finished: at(18).Time}}}
	spans := byName(t, Spans(c))
	want := map[string][2]int{ // name: start, end (seconds after t0)
		"step build": {1, 20}, "attempt build": {2, 20}, "queue": {1, 2}, "schedule": {2, 3}, "prepare": {3, 6},
		"run": {6, 18}, "store outputs": {18, 20},
	}
	if len(spans) != len(want) {
		t.Fatalf("got spans %v, want %v", keys(spans), want)
	}
	step, attempt := StepContext(run, "build"), AttemptContext(run, "build", 1)
	for name, w := range want {
		s, ok := spans[name]
		if !ok {
			t.Fatalf("no span %q among %v", name, keys(spans))
		}
		if !s.Start.Equal(at(w[0]).Time) || !s.End.Equal(at(w[1]).Time) {
			t.Errorf("%s: %s..%s, want %ds..%ds", name, s.Start, s.End, w[0], w[1])
		}
		if s.Context.TraceID() != RunContext(run).TraceID() {
			t.Errorf("%s is in trace %s, not the Run's", name, s.Context.TraceID())
		}
		wantParent := attempt
		switch name {
		case "step build":
			wantParent = RunContext(run)
		case "attempt build", "queue":
			wantParent = step
		}
		if s.Parent.SpanID() != wantParent.SpanID() {
			t.Errorf("%s hangs from %s, want %s", name, s.Parent.SpanID(), wantParent.SpanID())
		}
	}
	if !spans["attempt build"].Context.Equal(attempt) {
		t.Errorf("the attempt's span is not the one its pod's TRACEPARENT names")
	}
	if !Ends(before, after) || Ends(after, after) {
		t.Errorf("Ends: %v for the write that ended the step, %v for one that ended nothing", Ends(before, after), Ends(after, after))
	}
	if again := Spans(Change{Run: run, Before: after, After: after, Now: c.Now, Steps: c.Steps, Pods: c.Pods}); len(again) != 0 {
		t.Errorf("a write that ends nothing emits %d spans; each span is emitted once, when it ends", len(again))
	}
}

func TestEachAttemptIsEmittedWhenItEnds(t *testing.T) {
	run := testRun()
	steps := map[string]StepInfo{"flaky": {Kind: KindContainer}}
	running := &ergonv1alpha1.RunStatus{Phase: ergonv1alpha1.RunRunning, Steps: []ergonv1alpha1.StepStatus{
		{Name: "flaky", Phase: ergonv1alpha1.StepRunning, StartedAt: at(0), PodName: "p1", Attempts: 1}}}
	retrying := running.DeepCopy()
	retrying.Steps[0].Phase = ergonv1alpha1.StepRetrying
	retrying.Steps[0].History = []ergonv1alpha1.AttemptStatus{{Attempt: 1, PodName: "p1", Phase: ergonv1alpha1.StepFailed,
		Reason: "Error", Message: "exit 1", StartedAt: at(1), FinishedAt: at(5)}}
	first := byName(t, Spans(Change{Run: run, Before: running, After: retrying, Now: at(6).Time, Steps: steps}))
	a1, ok := first["attempt flaky"]
	if len(first) != 1 || !ok {
		t.Fatalf("the failed attempt: got %v, want its attempt span alone", keys(first))
	}
	if !a1.Context.Equal(AttemptContext(run, "flaky", 1)) || a1.Status != codes.Error || !a1.End.Equal(at(5).Time) {
		t.Errorf("attempt 1: %+v", a1)
	}
	done := retrying.DeepCopy()
	done.Steps[0].Phase, done.Steps[0].PodName, done.Steps[0].Attempts, done.Steps[0].FinishedAt =
		ergonv1alpha1.StepSucceeded, "p2", 2, at(30)
	second := byName(t, Spans(Change{Run: run, Before: retrying, After: done, Now: at(31).Time, Steps: steps}))
	if a2 := second["attempt flaky"]; !a2.Context.Equal(AttemptContext(run, "flaky", 2)) || a2.Status != codes.Unset {
		t.Errorf("attempt 2: %+v", a2)
	}
	if _, ok := second["step flaky"]; !ok || len(second) != 2 {
		t.Errorf("the step's end: got %v, want attempt 2 and the step", keys(second))
	}
}

func TestARunIsOneTraceWithItsChildren(t *testing.T) {
	parent := testRun()
	ended := &ergonv1alpha1.RunStatus{Phase: ergonv1alpha1.RunFailed, FinishedAt: at(60), Conditions: []metav1.Condition{{
		Type: ergonv1alpha1.ConditionSucceeded, Status: metav1.ConditionFalse, Reason: "StepFailed", Message: "step review failed"}}}
	spans := byName(t, Spans(Change{Run: parent, Before: &ergonv1alpha1.RunStatus{Phase: ergonv1alpha1.RunRunning}, After: ended}))
	root := spans["run report"]
	if root.Parent.IsValid() || root.Status != codes.Error || root.Message != "step review failed" ||
		!root.Start.Equal(t0) || !root.End.Equal(at(60).Time) {
		t.Errorf("the root Run's span: %+v", root)
	}
	if v, _ := attr(root, "ergon.run.created_by"); v.AsString() != "alice" {
		t.Errorf("ergon.run.created_by = %q", v.AsString())
	}

	child := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: "nightly-1-call", Namespace: "team", UID: "child-uid",
		Labels:          map[string]string{ergonv1alpha1.LabelStep: "call"},
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(parent, ergonv1alpha1.GroupVersion.WithKind("Run"))}},
		Spec: ergonv1alpha1.RunSpec{SceneRef: corev1.LocalObjectReference{Name: "summarize"}}}
	cause.Of(parent).Next().Stamp(child)
	if got, want := RunContext(child).TraceID(), RunContext(parent).TraceID(); got != want {
		t.Errorf("a child Run is in trace %s, its parent in %s", got, want)
	}
	if got, want := parentOf(child), StepContext(parent, "call"); !got.Equal(want) {
		t.Errorf("a child Run hangs from %s, want the calling step's span %s", got.SpanID(), want.SpanID())
	}
	// A Run another Run's end started (runCompleted) has the same root, and no owner.
	chained := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: "after-1", Namespace: "team", UID: "after-uid"}}
	cause.Of(parent).Next().Stamp(chained)
	if got, want := parentOf(chained), RunContext(parent); !got.Equal(want) {
		t.Errorf("a chained Run hangs from %s, want the root Run's span", got.SpanID())
	}
}

func TestAGateStepSaysWhoDecided(t *testing.T) {
	run := testRun()
	before := &ergonv1alpha1.RunStatus{Steps: []ergonv1alpha1.StepStatus{{Name: "review", Phase: ergonv1alpha1.StepWaiting,
		Gate: "nightly-1-review", StartedAt: at(1)}}}
	after := before.DeepCopy()
	after.Steps[0].Phase, after.Steps[0].Decision, after.Steps[0].FinishedAt = ergonv1alpha1.StepSucceeded, "approve", at(300)
	spans := byName(t, Spans(Change{Run: run, Before: before, After: after, Steps: map[string]StepInfo{"review": {Kind: KindGate}},
		Gates: map[string]GateInfo{"nightly-1-review": {Option: "approve", DecidedBy: "bob"}}}))
	s := spans["step review"]
	if v, _ := attr(s, "ergon.gate.decided_by"); v.AsString() != "bob" || len(spans) != 1 {
		t.Errorf("the Gate step: %v", s.Attributes)
	}
	if s.End.Sub(s.Start) != 299*time.Second {
		t.Errorf("the Gate waited %s, want 299s", s.End.Sub(s.Start))
	}
}

func TestIDsAreTheRunsOwn(t *testing.T) {
	a, b := testRun(), testRun()
	b.UID = "other"
	if !AttemptContext(a, "s", 1).Equal(AttemptContext(a.DeepCopy(), "s", 1)) {
		t.Error("the same attempt got two span contexts: a restarted manager would emit another trace")
	}
	seen := map[trace.SpanID]string{}
	for name, sc := range map[string]trace.SpanContext{"run": RunContext(a), "step": StepContext(a, "s"),
		"attempt 1": AttemptContext(a, "s", 1), "attempt 2": AttemptContext(a, "s", 2), "other run": RunContext(b),
		"other step": StepContext(a, "t")} {
		if !sc.IsValid() || !sc.IsSampled() {
			t.Errorf("%s: %v is not a valid sampled span context", name, sc)
		}
		if other, dup := seen[sc.SpanID()]; dup {
			t.Errorf("%s and %s share span id %s", name, other, sc.SpanID())
		}
		seen[sc.SpanID()] = name
	}
	if !regexp.MustCompile(`^00-[0-9a-f]{32}-[0-9a-f]{16}-01$`).MatchString(Traceparent(AttemptContext(a, "s", 1))) {
		t.Errorf("TRACEPARENT %q is not a W3C traceparent", Traceparent(AttemptContext(a, "s", 1)))
	}
}

func keys(m map[string]Span) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// BenchmarkAFanOutEnds is the pass that records the end of a 1,000-step fan-out's leaves: the
// check that something ended, then every step's spans (the step, its attempt and its stages).
func BenchmarkAFanOutEnds(b *testing.B) {
	run := testRun()
	before := &ergonv1alpha1.RunStatus{Phase: ergonv1alpha1.RunRunning}
	c := Change{Run: run, Before: before, Now: t0.Add(time.Hour), Steps: map[string]StepInfo{}, Pods: map[string]PodTimes{}}
	for i := range 1000 {
		name, pod := "leaf-"+strconv.Itoa(i), "pod-"+strconv.Itoa(i)
		before.Steps = append(before.Steps, ergonv1alpha1.StepStatus{Name: name, Phase: ergonv1alpha1.StepRunning,
			StartedAt: at(1), PodName: pod, Attempts: 1})
		c.Steps[name] = StepInfo{Kind: KindContainer}
		c.Pods[pod] = PodTimes{Created: at(2).Time, Scheduled: at(3).Time, Started: at(4).Time, Finished: at(5).Time}
	}
	after := before.DeepCopy()
	for i := range after.Steps {
		after.Steps[i].Phase, after.Steps[i].FinishedAt = ergonv1alpha1.StepSucceeded, at(6)
	}
	c.After = after
	b.ReportAllocs()
	for b.Loop() {
		if !Ends(before, after) {
			b.Fatal("nothing ended")
		}
		if n := len(Spans(c)); n != 7000 {
			b.Fatalf("%d spans, want 7 a step", n)
		}
	}
}

// BenchmarkAPassThatEndsNothing is what every other pass of that Run pays: the check alone.
func BenchmarkAPassThatEndsNothing(b *testing.B) {
	status := &ergonv1alpha1.RunStatus{Phase: ergonv1alpha1.RunRunning}
	for i := range 1000 {
		status.Steps = append(status.Steps, ergonv1alpha1.StepStatus{Name: "leaf-" + strconv.Itoa(i), Phase: ergonv1alpha1.StepRunning})
	}
	b.ReportAllocs()
	for b.Loop() {
		if Ends(status, status) {
			b.Fatal("something ended")
		}
	}
}

// A fan-out's instances are traced as they end, each attempt under the step's span with its
// stages, named as its pod's TRACEPARENT names it; Ends sees an instance's end.
func TestAFanOutsInstancesAreTracedAsTheyEnd(t *testing.T) {
	run := testRun()
	before := &ergonv1alpha1.RunStatus{Steps: []ergonv1alpha1.StepStatus{{Name: "each", Phase: ergonv1alpha1.StepRunning,
		StartedAt: at(0), Instances: &ergonv1alpha1.InstancesStatus{Total: 3, Running: 3, States: "RRR"}}}}
	after := before.DeepCopy()
	after.Steps[0].Instances.States, after.Steps[0].Instances.Running = "SFR", 1
	if !Ends(before, after) {
		t.Fatal("Ends does not see two instances end")
	}
	if Ends(before, before.DeepCopy()) {
		t.Fatal("Ends sees an end in an unchanged status")
	}
	c := Change{Run: run, Before: before, After: after, Now: at(30).Time,
		Steps: map[string]StepInfo{"each": {Kind: KindContainer}},
		Units: map[string][]UnitPod{"each": {
			{Index: 0, Attempt: 1, Name: "p0", Phase: "Succeeded",
				PodTimes: PodTimes{Created: at(1).Time, Scheduled: at(2).Time, Started: at(3).Time, Finished: at(10).Time}},
			{Index: 1, Attempt: 1, Name: "p1", Phase: "Failed", PodTimes: PodTimes{Created: at(1).Time, Finished: at(12).Time}},
		}}}
	spans := Spans(c)
	byPod := map[string]Span{}
	stages := map[string]int{}
	for _, s := range spans {
		if v, ok := attr(s, "k8s.pod.name"); ok {
			byPod[v.AsString()] = s
		}
		if IsStage(s.Name) {
			stages[s.Name]++
		}
	}
	if len(byPod) != 2 {
		t.Fatalf("%d attempt spans, want one per ended instance (2): %v", len(byPod), spans)
	}
	for i, pod := range []string{"p0", "p1"} {
		s := byPod[pod]
		if want := UnitAttemptContext(run, "each", int32(i), 0, 1); !s.Context.Equal(want) {
			t.Errorf("%s: span %s, want %s, the one its TRACEPARENT names", pod, s.Context.SpanID(), want.SpanID())
		}
		if !s.Parent.Equal(StepContext(run, "each")) {
			t.Errorf("%s does not hang from its step's span", pod)
		}
		if v, _ := attr(s, "ergon.instance"); v.AsInt64() != int64(i) {
			t.Errorf("%s: ergon.instance %v, want %d", pod, v.AsInterface(), i)
		}
	}
	if byPod["p1"].Status != codes.Error || byPod["p0"].Status == codes.Error {
		t.Errorf("statuses: p0 %v, p1 %v; want only the failed instance's an error", byPod["p0"].Status, byPod["p1"].Status)
	}
	// p0 has every time; p1 was never seen scheduled or started.
	if stages["schedule"] != 1 || stages["prepare"] != 1 || stages["run"] != 1 {
		t.Errorf("stages %v, want schedule, prepare and run of p0 only", stages)
	}
	if AttemptContext(run, "each", 1).Equal(UnitAttemptContext(run, "each", 0, 0, 1)) {
		t.Error("an instance's attempt is named as the step's own attempt")
	}
}
