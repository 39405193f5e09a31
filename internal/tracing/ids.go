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

// Package tracing turns what a Run's status records into OpenTelemetry spans: one trace per
// call tree of Runs, a span per Run, step, attempt and wait, and the GenAI spans of an agent
// step read from its transcript. Spans are built when what they stand for has ended, with the
// times the status (and the pod, and the transcript) recorded, and their ids are derived from
// the Run's UID, so a manager that restarts emits the same trace, and a step pod knows its
// span (TRACEPARENT) before it starts. Nothing here reads or writes the API server.
package tracing

import (
	"crypto/sha256"
	"fmt"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/trace"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/cause"
)

// traceIDOf is the trace of every Run caused by root ("NAME/UID", cause.Cause.Root).
func traceIDOf(root string) trace.TraceID {
	var arr [256]byte
	sum := sha256.Sum256(append(append(arr[:0], "ergon.dev/trace\x00"...), root...))
	var id trace.TraceID
	copy(id[:], sum[:])
	return id
}

// spanIDOf is the span of one thing a Run did: parts name it within the Run ("run",
// "step", NAME, "attempt", N, ...).
func spanIDOf(uid types.UID, parts ...string) trace.SpanID {
	// On the stack for any name a Run's span has: a Run builds thousands of them in a pass.
	var arr [256]byte
	buf := append(append(arr[:0], "ergon.dev/span\x00"...), uid...)
	for _, p := range parts {
		buf = append(append(buf, 0), p...)
	}
	sum := sha256.Sum256(buf)
	var id trace.SpanID
	copy(id[:], sum[:])
	if !id.IsValid() { // all zeroes: not a valid span id, and as likely as any other
		id[7] = 1
	}
	return id
}

func spanContext(t trace.TraceID, s trace.SpanID) trace.SpanContext {
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: t, SpanID: s, TraceFlags: trace.FlagsSampled})
}

// RunContext is the span of a Run, in the trace of its cause's root.
func RunContext(run *ergonv1alpha1.Run) trace.SpanContext {
	return spanContext(traceIDOf(cause.Of(run).Root), spanIDOf(run.UID, "run"))
}

// StepContext is the span of one step of a Run, across its attempts.
func StepContext(run *ergonv1alpha1.Run, step string) trace.SpanContext {
	return spanContext(traceIDOf(cause.Of(run).Root), spanIDOf(run.UID, "step", step))
}

// AttemptContext is the span of one attempt of a step: the span of its pod, which the pod's
// TRACEPARENT names, so that what the step's program traces joins the Run's trace.
func AttemptContext(run *ergonv1alpha1.Run, step string, attempt int32) trace.SpanContext {
	return spanContext(traceIDOf(cause.Of(run).Root), spanIDOf(run.UID, "step", step, "attempt", strconv.Itoa(int(attempt))))
}

// UnitAttemptContext is the span of one attempt of a fan-out instance or loop iteration: its
// pod's, which the pod's TRACEPARENT names.
func UnitAttemptContext(run *ergonv1alpha1.Run, step string, index, iteration, attempt int32) trace.SpanContext {
	return spanContext(traceIDOf(cause.Of(run).Root), spanIDOf(run.UID, "step", step, "attempt", unitAttemptKey(index, iteration, attempt)))
}

// unitAttemptKey names a unit's attempt among its step's attempts; a plain attempt's is its
// number alone, so the two never meet.
func unitAttemptKey(index, iteration, attempt int32) string {
	return fmt.Sprintf("unit-%d-%d-%d", index, iteration, attempt)
}

// ToolCallContext is the execute_tool span of one tool call of an agent step's attempt: the
// span the call's tool pod carries in TRACEPARENT.
func ToolCallContext(run *ergonv1alpha1.Run, step string, attempt int32, callID string) trace.SpanContext {
	a := AttemptContext(run, step, attempt)
	return spanContext(a.TraceID(), spanIDOf(run.UID, toolCallParts(a, callID)...))
}

func toolCallParts(attempt trace.SpanContext, callID string) []string {
	return []string{"span", attempt.SpanID().String(), roleTool, callID}
}

// Traceparent is sc as the W3C traceparent header (and the TRACEPARENT variable) carries it.
func Traceparent(sc trace.SpanContext) string {
	return fmt.Sprintf("00-%s-%s-%s", sc.TraceID(), sc.SpanID(), sc.TraceFlags())
}

// parentOf is the span a Run's own span hangs from: for a child Run (a scene step's or a
// Scene tool's), the calling step of its parent; for a Run another Run's end started (a
// runCompleted Trigger), the root Run's span; none for a root.
func parentOf(run *ergonv1alpha1.Run) trace.SpanContext {
	c := cause.Of(run)
	if c.Depth == 0 {
		return trace.SpanContext{}
	}
	t := traceIDOf(c.Root)
	if owner := controllerRun(run); owner != "" {
		if step := run.Labels[ergonv1alpha1.LabelStep]; step != "" {
			return spanContext(t, spanIDOf(owner, "step", step))
		}
		return spanContext(t, spanIDOf(owner, "run"))
	}
	uid := c.Root[strings.LastIndex(c.Root, "/")+1:]
	return spanContext(t, spanIDOf(types.UID(uid), "run"))
}

// controllerRun is the UID of the Run that controls run, or "".
func controllerRun(run *ergonv1alpha1.Run) types.UID {
	if ref := metav1.GetControllerOfNoCopy(run); ref != nil && ref.Kind == "Run" &&
		ref.APIVersion == ergonv1alpha1.GroupVersion.String() {
		return ref.UID
	}
	return ""
}
