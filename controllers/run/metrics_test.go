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

package run

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/compile"
	"github.com/ergon-dev/ergon/internal/slots"
	"github.com/ergon-dev/ergon/internal/tracing"
)

func metricsScene(t *testing.T) *compile.Scene {
	t.Helper()
	spec := &ergonv1alpha1.SceneSpec{
		Models: map[string]ergonv1alpha1.ModelSpec{"default": {BaseURL: "http://llm/v1", Model: "small"}},
		Steps: []ergonv1alpha1.Step{
			{Name: "build", Container: &ergonv1alpha1.ContainerStep{Image: "busybox:test", Command: []string{"x"}}},
			{Name: "draft", Agent: &ergonv1alpha1.AgentStep{Prompt: "p"}},
			{Name: "review", Gate: &ergonv1alpha1.GateStep{}},
		},
	}
	scene, errs := compile.Compile(spec)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	return scene
}

func histogramCount(t *testing.T, h prometheus.Observer) uint64 {
	t.Helper()
	m := &dto.Metric{}
	if err := h.(prometheus.Metric).Write(m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleCount()
}

// Each transition of a Run's status moves the metrics once, and an unchanged status moves
// none, so a reconcile that writes nothing counts nothing.
func TestTheRunMetricsCountEachTransitionOnce(t *testing.T) {
	scene := metricsScene(t)
	t0 := metav1.NewTime(time.Unix(1000, 0))
	t1 := metav1.NewTime(time.Unix(1004, 0))
	pending := ergonv1alpha1.RunStatus{Phase: ergonv1alpha1.RunPending}
	running := ergonv1alpha1.RunStatus{Phase: ergonv1alpha1.RunRunning, StartedAt: &t0, Steps: []ergonv1alpha1.StepStatus{
		{Name: "build", Phase: ergonv1alpha1.StepRunning, StartedAt: &t0},
		{Name: "draft", Phase: ergonv1alpha1.StepRunning, StartedAt: &t0},
		{Name: "review", Phase: ergonv1alpha1.StepWaiting, StartedAt: &t0},
	}}
	usage := &ergonv1alpha1.AgentUsage{Turns: 2, PromptTokens: 300, CompletionTokens: 40, TotalTokens: 340, Cost: "0.25"}
	done := ergonv1alpha1.RunStatus{Phase: ergonv1alpha1.RunFailed, StartedAt: &t0, FinishedAt: &t1, Conditions: []metav1.Condition{
		{Type: ergonv1alpha1.ConditionSucceeded, Status: metav1.ConditionFalse, Reason: ergonv1alpha1.ReasonStepFailed},
	}, Steps: []ergonv1alpha1.StepStatus{
		{Name: "build", Phase: ergonv1alpha1.StepSucceeded, StartedAt: &t0, FinishedAt: &t1},
		{Name: "draft", Phase: ergonv1alpha1.StepFailed, StartedAt: &t0, FinishedAt: &t1, Usage: usage},
		{Name: "review", Phase: ergonv1alpha1.StepCancelled, StartedAt: &t0, FinishedAt: &t1},
	}}

	started := testutil.ToFloat64(runsStarted)
	failed := testutil.ToFloat64(runsFinished.WithLabelValues("metrics-test", "Failed", "StepFailed"))
	active := testutil.ToFloat64(stepPodsActive)
	containerOK := histogramCount(t, stepDuration.WithLabelValues("container", "Succeeded"))
	agentFailed := histogramCount(t, stepDuration.WithLabelValues("agent", "Failed"))
	gateCancelled := histogramCount(t, stepDuration.WithLabelValues("gate", "Cancelled"))

	observeTransitions("metrics-test", &pending, &running, scene)
	if got := testutil.ToFloat64(runsStarted) - started; got != 1 {
		t.Errorf("ergon_runs_started_total moved by %v on start, want 1", got)
	}
	if got := testutil.ToFloat64(stepPodsActive) - active; got != 2 {
		t.Errorf("ergon_step_pods_active moved by %v with a container and an agent running, want 2 (a gate has no pod)", got)
	}
	observeTransitions("metrics-test", &running, &running, scene)
	if testutil.ToFloat64(runsStarted)-started != 1 || testutil.ToFloat64(stepPodsActive)-active != 2 {
		t.Error("an unchanged status moved the metrics")
	}

	observeTransitions("metrics-test", &running, &done, scene)
	observeTransitions("metrics-test", &done, &done, scene)
	if got := testutil.ToFloat64(runsFinished.WithLabelValues("metrics-test", "Failed", "StepFailed")) - failed; got != 1 {
		t.Errorf("ergon_runs_finished_total{phase=Failed,reason=StepFailed} moved by %v, want 1", got)
	}
	if got := testutil.ToFloat64(stepPodsActive) - active; got != 0 {
		t.Errorf("ergon_step_pods_active is %v above where it started once the pods finished, want 0", got)
	}
	for _, c := range []struct {
		kind, phase string
		before      uint64
	}{{"container", "Succeeded", containerOK}, {"agent", "Failed", agentFailed}, {"gate", "Cancelled", gateCancelled}} {
		if got := histogramCount(t, stepDuration.WithLabelValues(c.kind, c.phase)) - c.before; got != 1 {
			t.Errorf("ergon_step_duration_seconds{kind=%s,phase=%s} has %d new samples, want 1", c.kind, c.phase, got)
		}
	}
	m := &dto.Metric{}
	if err := stepDuration.WithLabelValues("container", "Succeeded").(prometheus.Metric).Write(m); err != nil {
		t.Fatal(err)
	}
	if m.GetHistogram().GetSampleSum() < 4 {
		t.Errorf("the container step's 4 s are not in the duration sum %v", m.GetHistogram().GetSampleSum())
	}
	if got := testutil.ToFloat64(agentTokens.WithLabelValues("metrics-test", "small", "prompt")); got != 300 {
		t.Errorf("ergon_agent_tokens_total{kind=prompt} is %v, want 300, counted once", got)
	}
	if got := testutil.ToFloat64(agentTokens.WithLabelValues("metrics-test", "small", "completion")); got != 40 {
		t.Errorf("ergon_agent_tokens_total{kind=completion} is %v, want 40", got)
	}
	if got := testutil.ToFloat64(agentCost.WithLabelValues("metrics-test", "small")); got != 0.25 {
		t.Errorf("ergon_agent_cost_total is %v, want 0.25", got)
	}
}

// A step's usage grows as its turns and attempts are recorded: each token and each cent is
// counted once.
func TestUsageIsCountedByWhatItGrew(t *testing.T) {
	prompt := func() float64 { return testutil.ToFloat64(agentTokens.WithLabelValues("usage-test", "m", "prompt")) }
	completion := func() float64 {
		return testutil.ToFloat64(agentTokens.WithLabelValues("usage-test", "m", "completion"))
	}
	cost := func() float64 { return testutil.ToFloat64(agentCost.WithLabelValues("usage-test", "m")) }
	observeUsage("usage-test", "m", nil, &ergonv1alpha1.AgentUsage{PromptTokens: 100, CompletionTokens: 10, Cost: "0.5"})
	observeUsage("usage-test", "m", &ergonv1alpha1.AgentUsage{PromptTokens: 100, CompletionTokens: 10, Cost: "0.5"},
		&ergonv1alpha1.AgentUsage{PromptTokens: 250, CompletionTokens: 30, Cost: "1.25"})
	if prompt() != 250 || completion() != 30 || cost() != 1.25 {
		t.Errorf("counted prompt %v, completion %v, cost %v; want 250, 30, 1.25", prompt(), completion(), cost())
	}
	// A usage that went down (an attempt's record replaced) counts nothing back.
	observeUsage("usage-test", "m", &ergonv1alpha1.AgentUsage{PromptTokens: 250, CompletionTokens: 30, Cost: "1.25"},
		&ergonv1alpha1.AgentUsage{PromptTokens: 20})
	if prompt() != 250 || completion() != 30 || cost() != 1.25 {
		t.Errorf("a smaller usage moved the counters: prompt %v, completion %v, cost %v", prompt(), completion(), cost())
	}
}

func TestTheQueueMetricsReportEachNamespaceAndTheLimits(t *testing.T) {
	a := slots.New(slots.Limits{Total: 3, PerNamespace: 2, PerRun: 2}, nil)
	queueSlots.Store(a)
	t.Cleanup(func() { queueSlots.Store(nil) })
	busy, other := slots.Key{Namespace: "busy", Name: "r"}, slots.Key{Namespace: "other", Name: "r"}
	a.Acquire(busy, slots.Usage{})
	a.Settle(busy, slots.Usage{Active: 2}, 5)
	a.Acquire(other, slots.Usage{})
	a.Settle(other, slots.Usage{Active: 1}, 0)

	want := `
# HELP ergon_queue_slot_limit Step pod slot limits in effect (total per shard, namespace, run); 0 means no limit.
# TYPE ergon_queue_slot_limit gauge
ergon_queue_slot_limit{limit="namespace"} 2
ergon_queue_slot_limit{limit="run"} 2
ergon_queue_slot_limit{limit="total"} 3
# HELP ergon_queue_slots_held Step pod slots held by the Runs of a namespace: running step pods and child Runs.
# TYPE ergon_queue_slots_held gauge
ergon_queue_slots_held{namespace="busy"} 2
ergon_queue_slots_held{namespace="other"} 1
# HELP ergon_queue_units_waiting Steps and units of a namespace's Runs that could start but wait for a step pod slot.
# TYPE ergon_queue_units_waiting gauge
ergon_queue_units_waiting{namespace="busy"} 5
ergon_queue_units_waiting{namespace="other"} 0
`
	if err := testutil.CollectAndCompare(queueCollector{}, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
	// A namespace whose Runs end drops out.
	a.Forget(other)
	if n := testutil.CollectAndCount(queueCollector{}, "ergon_queue_slots_held"); n != 1 {
		t.Fatalf("%d namespaces reported after one's Runs ended, want 1", n)
	}
}

func TestTheSpansOfAWriteAreItsMetricsToo(t *testing.T) {
	run := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "spans-test", UID: "u"}}
	at := func(s int) *metav1.Time { return &metav1.Time{Time: time.Unix(1000+int64(s), 0)} }
	before := &ergonv1alpha1.RunStatus{Steps: []ergonv1alpha1.StepStatus{
		{Name: "build", Phase: ergonv1alpha1.StepRunning, StartedAt: at(0), PodName: "p", Attempts: 1},
		{Name: "review", Phase: ergonv1alpha1.StepWaiting, StartedAt: at(0), Gate: "g"},
		{Name: "draft", Phase: ergonv1alpha1.StepRunning, StartedAt: at(0), PodName: "d", Attempts: 1}}}
	after := before.DeepCopy()
	after.Steps[0].Phase, after.Steps[0].FinishedAt = ergonv1alpha1.StepSucceeded, at(10)
	after.Steps[1].Phase, after.Steps[1].FinishedAt = ergonv1alpha1.StepSucceeded, at(120)
	after.Steps[2].Phase, after.Steps[2].Reason, after.Steps[2].FinishedAt = ergonv1alpha1.StepFailed, "AgentMaxTurns", at(30)
	c := tracing.Change{Run: run, Before: before, After: after, Now: time.Unix(2000, 0),
		Steps: map[string]tracing.StepInfo{"build": {Kind: tracing.KindContainer}, "review": {Kind: tracing.KindGate},
			"draft": {Kind: tracing.KindAgent, Model: "small"}},
		Pods: map[string]tracing.PodTimes{"p": {Created: at(1).Time, Scheduled: at(2).Time, Started: at(4).Time, Finished: at(9).Time}}}
	count := func(h prometheus.Observer) uint64 {
		m := &dto.Metric{}
		_ = h.(prometheus.Metric).Write(m)
		return m.GetHistogram().GetSampleCount()
	}
	stages := map[string]uint64{}
	for _, s := range tracing.Stages {
		stages[s] = count(stepStage.WithLabelValues("spans-test", s))
	}
	gates := count(gateWait.WithLabelValues("spans-test"))
	failures := testutil.ToFloat64(agentFailures.WithLabelValues("spans-test", "AgentMaxTurns"))

	observeSpans(run.Namespace, tracing.Spans(c))
	for _, s := range tracing.Stages {
		if got := count(stepStage.WithLabelValues("spans-test", s)) - stages[s]; got != 1 {
			t.Errorf("stage %s observed %d times, want once", s, got)
		}
	}
	if got := count(gateWait.WithLabelValues("spans-test")) - gates; got != 1 {
		t.Errorf("the Gate's wait observed %d times, want once", got)
	}
	if got := testutil.ToFloat64(agentFailures.WithLabelValues("spans-test", "AgentMaxTurns")) - failures; got != 1 {
		t.Errorf("the agent's failure counted %v times, want once", got)
	}
}

func TestATenantNamedLabelIsBounded(t *testing.T) {
	l := &boundedLabel{seen: map[string]bool{}}
	for i := range maxLabelValues + 10 {
		l.value("model-" + strconv.Itoa(i))
	}
	if got := l.value("yet-another"); got != "other" {
		t.Errorf("model %d is %q, want other", maxLabelValues+11, got)
	}
	if got := l.value("model-3"); got != "model-3" {
		t.Errorf("a model seen first keeps its label: %q", got)
	}
}
