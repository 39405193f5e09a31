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
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/compile"
	"github.com/ergon-dev/ergon/internal/slots"
	"github.com/ergon-dev/ergon/internal/tracing"
)

// Prometheus metrics of the Run engine, served by the manager with controller-runtime's own
// (reconcile counts, errors and durations per controller).
var (
	runsFinished = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ergon_runs_finished_total",
		Help: "Runs that finished, by namespace, phase and reason (the reason of their Succeeded condition: " +
			"StepFailed, BudgetExceeded, RunTimedOut, ...).",
	}, []string{labelNamespace, "phase", "reason"})
	runsStarted = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "ergon_runs_started_total",
		Help: "Runs that started executing.",
	})
	stepDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "ergon_step_duration_seconds",
		Help:    "Time from a step's start to its end, by kind and phase.",
		Buckets: prometheus.ExponentialBuckets(0.5, 2, 14),
	}, []string{"kind", "phase"})
	stepPodsActive = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "ergon_step_pods_active",
		Help: "Step pods this manager started that have not finished.",
	})
	agentTokens = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ergon_agent_tokens_total",
		Help: "Tokens agent steps used, from their transcripts, by namespace, model and kind (prompt or completion).",
	}, []string{labelNamespace, "model", "kind"})
	agentCost = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ergon_agent_cost_total",
		Help: "What agent steps' model calls cost, in the currency of the Scenes' model pricing, by namespace and model.",
	}, []string{labelNamespace, "model"})
	stepStage = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "ergon_step_stage_seconds",
		Help: "Time a step pod's attempt spent in each stage: queue (ready to pod created), schedule, prepare " +
			"(image pulls, Ergon's init), run (the step's container), store outputs; by namespace and stage.",
		Buckets: prometheus.ExponentialBuckets(0.05, 2, 16),
	}, []string{labelNamespace, "stage"})
	gateWait = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "ergon_gate_wait_seconds",
		Help:    "Time a Gate step waited for its decision, by namespace.",
		Buckets: prometheus.ExponentialBuckets(1, 4, 10),
	}, []string{labelNamespace})
	agentFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ergon_agent_failures_total",
		Help: "Agent step attempts that failed, by namespace and reason.",
	}, []string{labelNamespace, "reason"})
)

// maxLabelValues bounds the values of a label whose values come from what tenants write (the
// model a Scene names, the reason an agent's attempt ended with): past this many distinct ones
// a manager counts the rest as "other" rather than grow its series without bound.
const maxLabelValues = 50

// boundedLabel is the values of one such label a manager has seen.
type boundedLabel struct {
	sync.Mutex
	seen map[string]bool
}

var (
	models  = &boundedLabel{seen: map[string]bool{}}
	reasons = &boundedLabel{seen: map[string]bool{}}
)

// value is v as the label carries it: itself among the first maxLabelValues it sees, "other"
// after.
func (l *boundedLabel) value(v string) string {
	l.Lock()
	defer l.Unlock()
	if l.seen[v] {
		return v
	}
	if len(l.seen) >= maxLabelValues {
		return "other"
	}
	l.seen[v] = true
	return v
}

// queueSlots is the slot allocator of the Run controller whose counts the ergon_queue_*
// metrics report: the manager has one.
var queueSlots atomic.Pointer[slots.Allocator]

// The ergon_queue_* metrics: step pod slots held and units waiting per namespace, and the
// limits in effect (internal/slots).
var (
	queueSlotsHeldDesc = prometheus.NewDesc("ergon_queue_slots_held",
		"Step pod slots held by the Runs of a namespace: running step pods and child Runs.",
		[]string{labelNamespace}, nil)
	queueUnitsWaitingDesc = prometheus.NewDesc("ergon_queue_units_waiting",
		"Steps and units of a namespace's Runs that could start but wait for a step pod slot.",
		[]string{labelNamespace}, nil)
	queueSlotLimitDesc = prometheus.NewDesc("ergon_queue_slot_limit",
		"Step pod slot limits in effect (total per shard, namespace, run); 0 means no limit.",
		[]string{"limit"}, nil)
)

// labelNamespace is the label of the metrics counted per namespace.
const labelNamespace = "namespace"

// queueCollector reads the ergon_queue_* metrics from the allocator when they are scraped, so a
// namespace whose Runs hold and wait for nothing drops out rather than staying at zero.
type queueCollector struct{}

// Describe sends the descriptions of the ergon_queue_* metrics.
func (queueCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- queueSlotsHeldDesc
	ch <- queueUnitsWaitingDesc
	ch <- queueSlotLimitDesc
}

// Collect sends the ergon_queue_* metrics as the allocator counts them now.
func (queueCollector) Collect(ch chan<- prometheus.Metric) {
	a := queueSlots.Load()
	if a == nil {
		return
	}
	l := a.Limits()
	for _, limit := range []struct {
		name  string
		value int
	}{{"total", l.Total}, {labelNamespace, l.PerNamespace}, {"run", l.PerRun}} {
		ch <- prometheus.MustNewConstMetric(queueSlotLimitDesc, prometheus.GaugeValue, float64(max(limit.value, 0)), limit.name)
	}
	for _, u := range a.Usage() {
		ch <- prometheus.MustNewConstMetric(queueSlotsHeldDesc, prometheus.GaugeValue, float64(u.Held), u.Namespace)
		ch <- prometheus.MustNewConstMetric(queueUnitsWaitingDesc, prometheus.GaugeValue, float64(u.Waiting), u.Namespace)
	}
}

func init() {
	metrics.Registry.MustRegister(runsFinished, runsStarted, stepDuration, stepPodsActive, agentTokens, agentCost, stepStage,
		gateWait, agentFailures, queueCollector{})
}

// observeTransitions records the metrics of what changed between two statuses of a Run of
// a namespace.
func observeTransitions(namespace string, before, after *ergonv1alpha1.RunStatus, scene *compile.Scene) {
	if !before.Phase.Finished() && before.StartedAt == nil && after.StartedAt != nil {
		runsStarted.Inc()
	}
	if !before.Phase.Finished() && after.Phase.Finished() {
		reason := ""
		if c := meta.FindStatusCondition(after.Conditions, ergonv1alpha1.ConditionSucceeded); c != nil {
			reason = c.Reason
		}
		runsFinished.WithLabelValues(namespace, string(after.Phase), reasons.value(reason)).Inc()
	}
	was := map[string]ergonv1alpha1.StepPhase{}
	used := map[string]*ergonv1alpha1.AgentUsage{}
	wasActive := map[string]bool{}
	for _, s := range before.Steps {
		was[s.Name], used[s.Name] = s.Phase, s.Usage
		wasActive[s.Name] = s.PodActive()
	}
	for _, s := range after.Steps {
		step := scene.Steps[s.Name]
		if s.Usage != nil && !equality.Semantic.DeepEqual(s.Usage, used[s.Name]) {
			observeUsage(namespace, models.value(agentModel(scene, step)), used[s.Name], s.Usage)
		}
		pod := step != nil && (step.Spec.Container != nil || step.Spec.Agent != nil)
		if pod && s.PodActive() && !wasActive[s.Name] {
			stepPodsActive.Inc()
		}
		if pod && !s.PodActive() && wasActive[s.Name] {
			stepPodsActive.Dec()
		}
		if s.Phase.Finished() && !was[s.Name].Finished() && s.StartedAt != nil && s.FinishedAt != nil {
			stepDuration.WithLabelValues(stepKind(step), string(s.Phase)).Observe(s.FinishedAt.Sub(s.StartedAt.Time).Seconds())
		}
	}
}

func stepKind(step *compile.Step) string {
	switch {
	case step == nil:
		return "unknown"
	case step.Spec.Container != nil:
		return "container"
	case step.Spec.Agent != nil:
		return "agent"
	case step.Spec.Gate != nil:
		return "gate"
	default:
		return "scene"
	}
}

// agentModel is the model an agent step called, as its Scene's models name it to the
// provider; "unknown" when the step or model is not in the Scene.
func agentModel(scene *compile.Scene, step *compile.Step) string {
	if step == nil || step.Spec.Agent == nil {
		return "unknown"
	}
	name := step.Spec.Agent.Model
	if name == "" {
		name = "default"
	}
	if m, ok := scene.Spec.Models[name]; ok && m.Model != "" {
		return m.Model
	}
	return name
}

// observeSpans records the metrics of what a status write ended from its spans, which the
// traces are made of too: the stages of the attempts, the Gates' waits, the agents' failures.
func observeSpans(namespace string, spans []tracing.Span) {
	for i := range spans {
		s := &spans[i]
		d := s.End.Sub(s.Start).Seconds()
		switch {
		case tracing.IsStage(s.Name):
			stepStage.WithLabelValues(namespace, s.Name).Observe(d)
		case s.Attr("ergon.step.kind") == tracing.KindGate:
			gateWait.WithLabelValues(namespace).Observe(d)
		case s.Attr("gen_ai.operation.name") == "invoke_agent" && s.Attr("ergon.attempt.phase") == string(ergonv1alpha1.StepFailed):
			agentFailures.WithLabelValues(namespace, reasons.value(s.Attr("ergon.attempt.reason"))).Inc()
		}
	}
}

// observeUsage counts what an agent step used since its usage was before: a step's usage
// grows as its attempts and turns are recorded, and each token is counted once.
func observeUsage(namespace, model string, before, after *ergonv1alpha1.AgentUsage) {
	if before == nil {
		before = &ergonv1alpha1.AgentUsage{}
	}
	if d := after.PromptTokens - before.PromptTokens; d > 0 {
		agentTokens.WithLabelValues(namespace, model, "prompt").Add(float64(d))
	}
	if d := after.CompletionTokens - before.CompletionTokens; d > 0 {
		agentTokens.WithLabelValues(namespace, model, "completion").Add(float64(d))
	}
	if d := costOf(after.Cost) - costOf(before.Cost); d > 0 {
		agentCost.WithLabelValues(namespace, model).Add(d)
	}
}

// costOf is a status' cost as a number; 0 when unset (or not a number, which admission and
// the agent runtime never let through).
func costOf(cost string) float64 {
	f, err := strconv.ParseFloat(cost, 64)
	if err != nil {
		return 0
	}
	return f
}
