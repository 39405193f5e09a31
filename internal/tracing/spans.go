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
	"slices"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/cause"
)

// SemconvVersion is the version of the OpenTelemetry semantic conventions the spans follow.
// Their GenAI part (invoke_agent, chat, execute_tool) is still marked Development there.
const SemconvVersion = "1.41.0"

// Span is one finished span, with the ids and times it was given, not the time it was built.
type Span struct {
	Name       string
	Context    trace.SpanContext
	Parent     trace.SpanContext
	Kind       trace.SpanKind
	Start, End time.Time
	Attributes []attribute.KeyValue
	Status     codes.Code
	Message    string
}

// Stages are the names of the spans of an attempt's stages, and of the queue before the first.
var Stages = []string{"queue", "schedule", "prepare", "run", "store outputs"}

// IsStage reports whether a span's name is one of Stages.
func IsStage(name string) bool {
	return slices.Contains(Stages, name)
}

// Attr is the value of the span's attribute key, as a string; "" when it has none.
func (s *Span) Attr(key string) string {
	for _, kv := range s.Attributes {
		if string(kv.Key) == key {
			return kv.Value.String()
		}
	}
	return ""
}

// Step kinds, as the spans name them (ergon.step.kind).
const (
	KindContainer = "container"
	KindAgent     = "agent"
	KindGate      = "gate"
	KindScene     = "scene"
)

// StepInfo is what the Scene says of a step that its status does not.
type StepInfo struct {
	Kind string
	// Model and Provider are an agent step's model, as its Scene names it to the provider,
	// and the provider's kind (gen_ai.provider.name).
	Model, Provider string
}

// PodTimes are when a step's pod reached each stage; zero when unknown.
type PodTimes struct {
	Created, Scheduled, Started, Finished time.Time
}

// GateInfo is how a step's Gate was decided.
type GateInfo struct {
	Option, DecidedBy string
}

// Change is one status write of a Run: the status before and after it, and what the pass
// that wrote it saw and the status does not keep. Spans returns the spans of what ended in
// it; a pass that writes no status ends nothing.
type Change struct {
	Run           *ergonv1alpha1.Run
	Before, After *ergonv1alpha1.RunStatus
	// Now is when the status was written: the end of what ended without a recorded time.
	Now time.Time
	// Steps, by step name; Pods, by pod name; Gates, by Gate name.
	Steps map[string]StepInfo
	Pods  map[string]PodTimes
	Gates map[string]GateInfo
	// Transcripts are the agent pods' transcripts (JSON), by pod name.
	Transcripts map[string]string
	// Units are the pods of fan-out instances and loop iterations whose end this write
	// records, by step name (the controller decides which, as the planner does: UnitPodEnded).
	Units map[string][]UnitPod
	// Content exports what agents were told and answered (gen_ai.*.messages, tool call
	// arguments and results); off by default.
	Content bool
}

// UnitPod is the pod of one attempt of a fan-out instance or a loop iteration.
type UnitPod struct {
	Index, Iteration, Attempt int32
	Name                      string
	// Phase is the pod's: Succeeded, Failed, or Gone.
	Phase string
	PodTimes
}

// Ends reports whether anything ended between two statuses of a Run (the Run, a step, an
// attempt, a unit of a fan-out or loop): only then does Spans return any, and is a Change
// worth building.
func Ends(before, after *ergonv1alpha1.RunStatus) bool {
	if after.Phase.Finished() && !before.Phase.Finished() {
		return true
	}
	was := make(map[string]*ergonv1alpha1.StepStatus, len(before.Steps))
	for i := range before.Steps {
		was[before.Steps[i].Name] = &before.Steps[i]
	}
	for i := range after.Steps {
		s, b := &after.Steps[i], was[after.Steps[i].Name]
		if b == nil {
			b = &ergonv1alpha1.StepStatus{}
		}
		if s.Phase.Finished() && !b.Phase.Finished() || len(s.History) > len(b.History) || unitsMoved(s, b) {
			return true
		}
	}
	return false
}

// unitsMoved reports whether a step's fan-out instances or loop moved on between was and s.
func unitsMoved(s, was *ergonv1alpha1.StepStatus) bool {
	if s.Loop != nil && (was.Loop == nil || s.Loop.Iteration != was.Loop.Iteration || s.Attempts != was.Attempts) {
		return true
	}
	in, old := s.Instances, was.Instances
	if in == nil {
		return false
	}
	return old == nil || in.States != old.States || !slices.Equal(in.Attempts, old.Attempts) ||
		!slices.Equal(in.Iterations, old.Iterations)
}

// Spans returns the spans of everything that ended between c.Before and c.After: the Run,
// its steps, each step's attempts and their stages, and the GenAI spans of agent attempts.
func Spans(c Change) []Span {
	b := &builder{Change: c, trace: traceIDOf(cause.Of(c.Run).Root)}
	before := make(map[string]*ergonv1alpha1.StepStatus, len(c.Before.Steps))
	for i := range c.Before.Steps {
		before[c.Before.Steps[i].Name] = &c.Before.Steps[i]
	}
	for i := range c.After.Steps {
		s := &c.After.Steps[i]
		was := before[s.Name]
		if was == nil {
			was = &ergonv1alpha1.StepStatus{}
		}
		b.attempts(s, was)
		for _, u := range c.Units[s.Name] {
			b.unit(s, u)
		}
		if s.Phase.Finished() && !was.Phase.Finished() {
			b.step(s)
		}
	}
	if c.After.Phase.Finished() && !c.Before.Phase.Finished() {
		b.run()
	}
	return b.out
}

// builder builds the spans of one Change, in the trace of its Run's cause.
type builder struct {
	Change
	trace trace.TraceID
	out   []Span
}

// context is the span of what parts name in the Run (ids.go).
func (b *builder) context(parts ...string) trace.SpanContext {
	return spanContext(b.trace, spanIDOf(b.Run.UID, parts...))
}

func (b *builder) run() {
	c, run := b.Change, b.Run
	attrs := []attribute.KeyValue{
		semconv.K8SNamespaceName(run.Namespace),
		attribute.String("ergon.run.name", run.Name),
		attribute.String("ergon.run.uid", string(run.UID)),
		attribute.String("ergon.scene.name", run.Spec.SceneRef.Name),
		attribute.String("ergon.run.phase", string(c.After.Phase)),
		semconv.GenAIWorkflowName(run.Spec.SceneRef.Name),
	}
	if who := run.Annotations[ergonv1alpha1.AnnotationCreatedBy]; who != "" {
		attrs = append(attrs, attribute.String("ergon.run.created_by", who))
	}
	if t := run.Labels[ergonv1alpha1.LabelTrigger]; t != "" {
		attrs = append(attrs, attribute.String("ergon.trigger.name", t))
	}
	sp := Span{Name: "run " + run.Spec.SceneRef.Name, Context: b.context("run"), Parent: parentOf(run),
		Kind: trace.SpanKindServer, Start: run.CreationTimestamp.Time, End: timeOr(c.After.FinishedAt, c.Now), Attributes: attrs}
	if cond := meta.FindStatusCondition(c.After.Conditions, ergonv1alpha1.ConditionSucceeded); cond != nil {
		attrs = append(attrs, attribute.String("ergon.run.reason", cond.Reason))
		if c.After.Phase == ergonv1alpha1.RunFailed {
			sp.Status, sp.Message = codes.Error, cond.Message
		}
	}
	sp.Attributes = attrs
	b.out = append(b.out, sp)
}

func (b *builder) step(s *ergonv1alpha1.StepStatus) {
	c := b.Change
	info := c.Steps[s.Name]
	end := timeOr(s.FinishedAt, c.Now)
	attrs := []attribute.KeyValue{
		attribute.String("ergon.step.name", s.Name),
		attribute.String("ergon.step.kind", info.Kind),
		attribute.String("ergon.step.phase", string(s.Phase)),
	}
	if s.Reason != "" {
		attrs = append(attrs, attribute.String("ergon.step.reason", s.Reason))
	}
	if s.Attempts > 0 {
		attrs = append(attrs, attribute.Int("ergon.step.attempts", int(s.Attempts)))
	}
	if s.ChildRun != "" {
		attrs = append(attrs, attribute.String("ergon.child_run.name", s.ChildRun))
	}
	if s.Gate != "" {
		g := c.Gates[s.Gate]
		attrs = append(attrs, attribute.String("ergon.gate.name", s.Gate))
		if option := firstOf(g.Option, s.Decision); option != "" {
			attrs = append(attrs, attribute.String("ergon.gate.decision", option))
		}
		if g.DecidedBy != "" {
			attrs = append(attrs, attribute.String("ergon.gate.decided_by", g.DecidedBy))
		}
	}
	sp := Span{Name: "step " + s.Name, Context: b.context("step", s.Name), Parent: b.context("run"),
		Kind: trace.SpanKindInternal, Start: timeOr(s.StartedAt, end), End: end, Attributes: attrs}
	if s.Phase == ergonv1alpha1.StepFailed {
		sp.Status, sp.Message = codes.Error, s.Message
	}
	b.out = append(b.out, sp)
}

// attempt is one attempt of a pod step as the status records it.
type attempt struct {
	n          int32
	pod        string
	phase      ergonv1alpha1.StepPhase
	reason     string
	message    string
	start, end *time.Time
}

// attempts builds the spans of the attempts of a container or agent step that ended between
// was and s: those history gained, and the last one when the step ended.
func (b *builder) attempts(s, was *ergonv1alpha1.StepStatus) {
	c := b.Change
	info := c.Steps[s.Name]
	if info.Kind != KindContainer && info.Kind != KindAgent || s.Instances != nil || s.Loop != nil {
		return
	}
	var ended []attempt
	for _, h := range s.History[min(len(was.History), len(s.History)):] {
		ended = append(ended, attempt{n: h.Attempt, pod: h.PodName, phase: h.Phase, reason: h.Reason, message: h.Message,
			start: timePtr(h.StartedAt), end: timePtr(h.FinishedAt)})
	}
	if s.Phase.Finished() && !was.Phase.Finished() && s.PodName != "" {
		end := timeOr(s.FinishedAt, c.Now)
		ended = append(ended, attempt{n: max(s.Attempts, 1), pod: s.PodName, phase: s.Phase, reason: s.Reason,
			message: s.Message, end: &end})
	}
	for _, a := range ended {
		b.attempt(s, info, a)
	}
}

func (b *builder) attempt(s *ergonv1alpha1.StepStatus, info StepInfo, a attempt) {
	c := b.Change
	pod := c.Pods[a.pod]
	n := strconv.Itoa(int(a.n))
	ctx, step := b.context("step", s.Name, "attempt", n), b.context("step", s.Name)
	end := c.Now
	if a.end != nil {
		end = *a.end
	}
	start := firstTime(pod.Created, pod.Started, derefTime(a.start), end)
	sp := Span{Name: "attempt " + s.Name, Context: ctx, Parent: step, Kind: trace.SpanKindInternal,
		Start: start, End: end, Attributes: []attribute.KeyValue{
			attribute.String("ergon.step.name", s.Name),
			attribute.Int("ergon.attempt", int(a.n)),
			attribute.String("ergon.attempt.phase", string(a.phase)),
			semconv.K8SPodName(a.pod),
		}}
	if a.reason != "" {
		sp.Attributes = append(sp.Attributes, attribute.String("ergon.attempt.reason", a.reason))
	}
	if a.phase == ergonv1alpha1.StepFailed || a.phase == ergonv1alpha1.StepRetrying {
		sp.Status, sp.Message = codes.Error, a.message
	}
	at := len(b.out)
	b.out = append(b.out, Span{}) // the attempt's own, once the agent's transcript has shaped it
	if a.n == 1 && s.StartedAt != nil {
		b.stage("queue", s.Name, "", step, s.StartedAt.Time, pod.Created)
	}
	b.stage("schedule", s.Name, n, ctx, pod.Created, pod.Scheduled)
	b.stage("prepare", s.Name, n, ctx, pod.Scheduled, pod.Started)
	b.stage("run", s.Name, n, ctx, pod.Started, pod.Finished)
	b.stage("store outputs", s.Name, n, ctx, pod.Finished, end)
	if info.Kind == KindAgent {
		b.agent(s.Name, info, ctx, c.Transcripts[a.pod], &sp)
	}
	b.out[at] = sp
}

// stage builds a stage of an attempt (or the queue before the first) when both its ends are
// known and in order.
// unit builds the span of one attempt of a fan-out instance or loop iteration, and its
// stages, under its step's span.
func (b *builder) unit(s *ergonv1alpha1.StepStatus, u UnitPod) {
	key := unitAttemptKey(u.Index, u.Iteration, u.Attempt)
	ctx := b.context("step", s.Name, "attempt", key)
	end := firstTime(u.Finished, b.Now)
	sp := Span{Name: "attempt " + s.Name, Context: ctx, Parent: b.context("step", s.Name), Kind: trace.SpanKindInternal,
		Start: firstTime(u.Created, u.Started, end), End: end, Attributes: []attribute.KeyValue{
			attribute.String("ergon.step.name", s.Name),
			attribute.Int("ergon.attempt", int(u.Attempt)),
			attribute.String("ergon.attempt.phase", u.Phase),
			semconv.K8SPodName(u.Name),
		}}
	if s.Instances != nil {
		sp.Attributes = append(sp.Attributes, attribute.Int("ergon.instance", int(u.Index)))
	}
	if s.Loop != nil || u.Iteration > 0 {
		sp.Attributes = append(sp.Attributes, attribute.Int("ergon.iteration", int(u.Iteration)))
	}
	if u.Phase != string(ergonv1alpha1.StepSucceeded) {
		sp.Status = codes.Error
	}
	b.out = append(b.out, sp)
	b.stage("schedule", s.Name, key, ctx, u.Created, u.Scheduled)
	b.stage("prepare", s.Name, key, ctx, u.Scheduled, u.Started)
	b.stage("run", s.Name, key, ctx, u.Started, u.Finished)
}

func (b *builder) stage(name, step, attempt string, parent trace.SpanContext, start, end time.Time) {
	if start.IsZero() || end.IsZero() || end.Before(start) {
		return
	}
	b.out = append(b.out, Span{Name: name, Context: b.context("step", step, "attempt", attempt, name),
		Parent: parent, Kind: trace.SpanKindInternal, Start: start, End: end,
		Attributes: []attribute.KeyValue{attribute.String("ergon.step.name", step)}})
}

func timeOr(t *metav1.Time, or time.Time) time.Time {
	if t == nil || t.IsZero() {
		return or
	}
	return t.Time
}

func timePtr(t *metav1.Time) *time.Time {
	if t == nil || t.IsZero() {
		return nil
	}
	return &t.Time
}

func derefTime(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}

// firstTime is the first of ts that is known.
func firstTime(ts ...time.Time) time.Time {
	for _, t := range ts {
		if !t.IsZero() {
			return t
		}
	}
	return time.Time{}
}

func firstOf(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}
