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

// Package otlp exports the spans internal/tracing builds to an OTLP endpoint, in batches, off
// the reconcile path. Only the manager imports it: what else needs a Run's trace id (the
// console) imports internal/tracing alone, without the exporters.
package otlp

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"

	"github.com/ergon-dev/ergon/internal/tracing"
)

// Defaults of an Exporter: bounded, so that a collector that is down costs a bounded amount of
// memory and never slows a Run.
const (
	DefaultQueueSize = 4096
	batchSize        = 512
	flushInterval    = time.Second
	exportTimeout    = 10 * time.Second
)

var (
	spansExported = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "ergon_trace_spans_exported_total",
		Help: "Spans the manager exported to its OTLP endpoint.",
	})
	spansDropped = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ergon_trace_spans_dropped_total",
		Help: "Spans the manager did not export, by why: the queue was full, or the endpoint refused or did not answer.",
	}, []string{"reason"})
)

// Collectors are the Exporter's metrics, for the manager's registry.
func Collectors() []prometheus.Collector {
	return []prometheus.Collector{spansExported, spansDropped}
}

// Exporter sends finished spans to an OTLP endpoint, in batches, off the reconcile path: Emit
// never blocks, and when the queue is full the span is dropped and counted.
type Exporter struct {
	exporter sdktrace.SpanExporter
	resource *resource.Resource
	scope    instrumentation.Scope
	queue    chan tracing.Span
	// Content exports what agents were told and answered (tracing.Change.Content).
	Content bool
	log     logr.Logger
}

// Options configure an Exporter.
type Options struct {
	// QueueSize bounds the spans waiting for export; DefaultQueueSize when zero.
	QueueSize int
	// Content exports prompts, completions and tool results; off by default.
	Content bool
	// Version is the manager's, as the spans' service.version.
	Version string
	Log     logr.Logger
}

// Enabled reports whether the standard OpenTelemetry variables name an endpoint for traces
// and do not turn the traces exporter off (OTEL_TRACES_EXPORTER=none).
func Enabled(getenv func(string) string) bool {
	if strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")) == "none" || strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") {
		return false
	}
	return getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != ""
}

// FromEnvironment returns an Exporter configured by the process's standard
// OTEL_EXPORTER_OTLP_* variables (endpoint, protocol, headers, certificates, timeout), or nil
// when they name no endpoint: nothing is exported then.
func FromEnvironment(ctx context.Context, o Options) (*Exporter, error) {
	getenv := os.Getenv
	if !Enabled(getenv) {
		return nil, nil
	}
	protocol := getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if protocol == "" {
		protocol = getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	var exp sdktrace.SpanExporter
	var err error
	switch protocol {
	case "", "http/protobuf":
		exp, err = otlptracehttp.New(ctx)
	case "grpc":
		exp, err = otlptracegrpc.New(ctx)
	default:
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL %q: the manager exports traces over http/protobuf or grpc", protocol)
	}
	if err != nil {
		return nil, fmt.Errorf("the OTLP trace exporter: %w", err)
	}
	return New(ctx, exp, o)
}

// New returns an Exporter that sends spans through exp (an in-memory one in tests).
func New(ctx context.Context, exp sdktrace.SpanExporter, o Options) (*Exporter, error) {
	res, err := resource.New(ctx, resource.WithAttributes(semconv.ServiceName("ergon-manager"), semconv.ServiceVersion(o.Version)),
		resource.WithFromEnv(), resource.WithSchemaURL(semconv.SchemaURL))
	if err != nil {
		return nil, fmt.Errorf("the traces' resource: %w", err)
	}
	size := o.QueueSize
	if size <= 0 {
		size = DefaultQueueSize
	}
	return &Exporter{exporter: exp, resource: res, queue: make(chan tracing.Span, size), Content: o.Content, log: o.Log,
		scope: instrumentation.Scope{Name: "github.com/ergon-dev/ergon", Version: o.Version, SchemaURL: semconv.SchemaURL}}, nil
}

// Emit queues spans for export. It never blocks: a span that finds the queue full is dropped.
func (e *Exporter) Emit(spans []tracing.Span) {
	for _, s := range spans {
		select {
		case e.queue <- s:
		default:
			spansDropped.WithLabelValues("queue_full").Inc()
		}
	}
}

// Start exports what Emit queues until ctx ends, then what is left, and shuts the exporter
// down. It is a manager Runnable, so it runs on every replica: each one exports the spans of
// the Runs it reconciles.
func (e *Exporter) Start(ctx context.Context) error {
	tick := time.NewTicker(flushInterval)
	defer tick.Stop()
	batch := make([]sdktrace.ReadOnlySpan, 0, batchSize)
	flush := func() {
		if len(batch) == 0 {
			return
		}
		// Not ctx: the last batch is sent after it ends.
		ectx, cancel := context.WithTimeout(context.WithoutCancel(ctx), exportTimeout)
		defer cancel()
		if err := e.exporter.ExportSpans(ectx, batch); err != nil {
			spansDropped.WithLabelValues("export_failed").Add(float64(len(batch)))
			e.log.Error(err, "Spans not exported", "spans", len(batch))
		} else {
			spansExported.Add(float64(len(batch)))
		}
		batch = batch[:0]
	}
	for {
		select {
		case s := <-e.queue:
			batch = append(batch, e.readOnly(s))
			if len(batch) == batchSize {
				flush()
			}
		case <-tick.C:
			flush()
		case <-ctx.Done():
			// Everything queued, a batch at a time: what a stopping manager's last passes
			// ended is exported, not lost with the process.
			for len(e.queue) > 0 {
				batch = append(batch, e.readOnly(<-e.queue))
				if len(batch) == batchSize {
					flush()
				}
			}
			flush()
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), exportTimeout)
			defer cancel()
			return e.exporter.Shutdown(sctx)
		}
	}
}

// readOnly is s as the SDK's exporters take it, with the ids and times it was given.
func (e *Exporter) readOnly(s tracing.Span) sdktrace.ReadOnlySpan {
	status := sdktrace.Status{Code: s.Status, Description: s.Message}
	return tracetest.SpanStub{
		Name: s.Name, SpanContext: s.Context, Parent: s.Parent, SpanKind: s.Kind,
		StartTime: s.Start, EndTime: s.End, Attributes: s.Attributes, Status: status,
		Resource: e.resource, InstrumentationScope: e.scope,
	}.Snapshot()
}

// NeedLeaderElection is false: every replica exports the spans of the Runs it reconciles.
func (e *Exporter) NeedLeaderElection() bool {
	return false
}
