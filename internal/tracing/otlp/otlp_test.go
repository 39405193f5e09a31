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

package otlp

import (
	"context"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/tracing"
)

var t0 = time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)

// someSpans are the spans of a Run's step, as the Run controller emits them.
func someSpans() []tracing.Span {
	run := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "ns", UID: "u"}}
	parent := tracing.RunContext(run)
	var out []tracing.Span
	for i, step := range []string{"a", "b", "c", "d"} {
		out = append(out, tracing.Span{Name: "step " + step, Context: tracing.StepContext(run, step), Parent: parent,
			Kind: trace.SpanKindInternal, Start: t0.Add(time.Duration(i) * time.Second), End: t0.Add(time.Duration(i+1) * time.Second)})
	}
	return out
}

func TestTheExporterSendsSpansAsBuilt(t *testing.T) {
	mem := tracetest.NewInMemoryExporter()
	e, err := New(context.Background(), mem, Options{Version: "v0.test", QueueSize: 64})
	if err != nil {
		t.Fatal(err)
	}
	spans := someSpans()
	e.Emit(spans)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- e.Start(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for len(mem.GetSpans()) < len(spans) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	got := mem.GetSpans() // before Start ends: the in-memory exporter forgets them on Shutdown
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Start: %v", err)
	}
	if len(got) != len(spans) {
		t.Fatalf("exported %d spans, want %d", len(got), len(spans))
	}
	for i, s := range got {
		if !s.SpanContext.Equal(spans[i].Context) || !s.Parent.Equal(spans[i].Parent) || !s.StartTime.Equal(spans[i].Start) ||
			!s.EndTime.Equal(spans[i].End) || s.Name != spans[i].Name {
			t.Errorf("span %d: exported %s %s..%s, built %s %s..%s", i, s.Name, s.StartTime, s.EndTime,
				spans[i].Name, spans[i].Start, spans[i].End)
		}
		if v, ok := s.Resource.Set().Value("service.name"); !ok || v.AsString() != "ergon-manager" {
			t.Errorf("service.name = %v", v.AsInterface())
		}
	}
}

func TestAFullQueueDropsAndNeverBlocks(t *testing.T) {
	e, err := New(context.Background(), tracetest.NewInMemoryExporter(), Options{QueueSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	before := dropped("queue_full")
	e.Emit(make([]tracing.Span, 5)) // nothing exports them: Start is not running
	if got := dropped("queue_full") - before; got != 3 {
		t.Errorf("dropped %v spans, want 3 of 5 with room for 2", got)
	}
}

func TestNothingIsExportedWithoutAnEndpoint(t *testing.T) {
	for _, tt := range []struct {
		env  map[string]string
		want bool
	}{
		{map[string]string{}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_TRACES_EXPORTER": "none"}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_SDK_DISABLED": "true"}, false},
	} {
		if got := Enabled(func(k string) string { return tt.env[k] }); got != tt.want {
			t.Errorf("%v: enabled %v, want %v", tt.env, got, tt.want)
		}
	}
	e, err := FromEnvironment(context.Background(), Options{})
	if err != nil || e != nil {
		t.Errorf("without an endpoint: exporter %v, error %v; want neither", e != nil, err)
	}
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
	for protocol, ok := range map[string]bool{"": true, "http/protobuf": true, "grpc": true, "http/json": false} {
		t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", protocol)
		e, err := FromEnvironment(context.Background(), Options{})
		if ok && (err != nil || e == nil) {
			t.Errorf("protocol %q: exporter %v, error %v", protocol, e != nil, err)
		}
		if !ok && (err == nil || !strings.Contains(err.Error(), "OTEL_EXPORTER_OTLP_PROTOCOL")) {
			t.Errorf("protocol %q: %v, want an error naming the variable", protocol, err)
		}
	}
}

// recorder keeps what it is sent, through Shutdown.
type recorder struct{ spans []sdktrace.ReadOnlySpan }

func (r *recorder) ExportSpans(_ context.Context, s []sdktrace.ReadOnlySpan) error {
	r.spans = append(r.spans, s...)
	return nil
}
func (r *recorder) Shutdown(context.Context) error { return nil }

func TestAStoppingManagerSendsWhatIsQueued(t *testing.T) {
	rec := &recorder{}
	e, err := New(context.Background(), rec, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// More than a batch: the last passes of a big Run end thousands of spans.
	queued := append(someSpans()[:3], make([]tracing.Span, 2*batchSize)...)
	e.Emit(queued)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := e.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if len(rec.spans) != len(queued) {
		t.Errorf("sent %d of the %d queued spans when stopping", len(rec.spans), len(queued))
	}
}

func dropped(reason string) float64 {
	m := &dto.Metric{}
	_ = spansDropped.WithLabelValues(reason).Write(m)
	return m.GetCounter().GetValue()
}
