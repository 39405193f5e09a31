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

package archive

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/test/testenv"
)

// benchRecord is a Run of a realistic size: four steps, a 2 KiB output, labels.
func benchRecord(i int) *Record {
	phases := []ergonv1alpha1.RunPhase{ergonv1alpha1.RunSucceeded, ergonv1alpha1.RunSucceeded, ergonv1alpha1.RunFailed,
		ergonv1alpha1.RunCancelled}
	ns := fmt.Sprintf("team-%d", i%20)
	rec := record(ns, fmt.Sprintf("report-%d", i), fmt.Sprintf("scene-%d", i%50), phases[i%len(phases)], i)
	rec.Run.Labels["shard"] = strconv.Itoa(i % 7)
	for s := range 4 {
		rec.Run.Status.Steps = append(rec.Run.Status.Steps, ergonv1alpha1.StepStatus{Name: fmt.Sprintf("step-%d", s),
			Phase: ergonv1alpha1.StepSucceeded, Message: "done"})
	}
	out := fmt.Sprintf("summary of run %d: ", i)
	for len(out) < 2048 {
		out += fmt.Sprintf("line %d of the report on item %d; ", len(out), i*7)
	}
	rec.Values["step-3"] = out
	return rec
}

// BenchmarkArchive measures, on SQLite in a file (or PostgreSQL with
// ERGON_BENCH_ARCHIVE_STORE=postgres), writing records (Runs/s) and, once the
// store holds ERGON_BENCH_ARCHIVE_RUNS records (100,000 by default), the latency of the
// console's and kubectl ergon history's queries: p50 and p95 over varied filters and pages.
// Run with make bench-archive.
func BenchmarkArchive(b *testing.B) {
	total := 100_000
	if v := os.Getenv("ERGON_BENCH_ARCHIVE_RUNS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			b.Fatal(err)
		}
		total = n
	}
	ctx := b.Context()
	url := "sqlite://" + filepath.Join(b.TempDir(), "archive.db")
	if os.Getenv("ERGON_BENCH_ARCHIVE_STORE") == KindPostgres {
		if postgres == nil {
			b.Fatalf("ERGON_BENCH_ARCHIVE_STORE=postgres needs %s (make bench-archive-postgres sets it)", testenv.EnvPostgresBin)
		}
		url = newDatabase(b)
	}
	s, err := Open(ctx, url)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = s.Close() }()

	start := time.Now()
	for i := range total {
		if err := s.Put(ctx, benchRecord(i)); err != nil {
			b.Fatal(err)
		}
	}
	fill := time.Since(start)
	puts := float64(total) / fill.Seconds()

	var all []string
	for n := range 20 {
		all = append(all, fmt.Sprintf("uid-team-%d", n))
	}
	queries := []Query{
		{Namespaces: all},
		{Namespaces: all[:1]},
		{Namespaces: all[:5], Scene: "scene-7"},
		{Namespaces: all, Phase: string(ergonv1alpha1.RunFailed)},
		{Namespaces: all, Labels: map[string]string{"shard": "3"}},
		{Namespaces: all, Since: base.Add(50_000 * time.Minute), Until: base.Add(60_000 * time.Minute)},
		{Namespaces: all[:2], Text: "item 7007"},
		{Namespaces: all, Text: "item 69993;"},
		{Namespaces: all, Text: "report on item"},
		{Namespaces: all, StartedBy: "alice", Limit: 200},
	}
	b.ResetTimer()
	var took []time.Duration
	byKind := make([][]time.Duration, len(queries))
	for i := 0; b.Loop(); i++ {
		q := queries[i%len(queries)]
		t0 := time.Now()
		page, err := s.List(ctx, q)
		if err != nil {
			b.Fatal(err)
		}
		if page.Continue != "" && i%2 == 0 { // and the next page
			q.After = page.Continue
			if _, err := s.List(ctx, q); err != nil {
				b.Fatal(err)
			}
		}
		took = append(took, time.Since(t0))
		byKind[i%len(queries)] = append(byKind[i%len(queries)], time.Since(t0))
	}
	pct := func(d []time.Duration, p float64) float64 {
		slices.Sort(d)
		return float64(d[int(float64(len(d)-1)*p)].Microseconds()) / 1000
	}
	b.ReportMetric(puts, "puts/s")
	b.ReportMetric(pct(took, 0.5), "p50-ms")
	b.ReportMetric(pct(took, 0.95), "p95-ms")
	for k, d := range byKind {
		if len(d) > 0 {
			b.Logf("query %d %+v: p50 %.1f ms, p95 %.1f ms", k, queries[k], pct(d, 0.5), pct(d, 0.95))
		}
	}
	b.Logf("%d records written in %s; %d queries", total, fill.Round(time.Millisecond), len(took))
}
