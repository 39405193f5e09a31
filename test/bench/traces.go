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

package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"sync/atomic"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/tracing/otlp"
)

// traceReceiver is an OTLP/HTTP endpoint on loopback that takes every batch and counts it.
type traceReceiver struct {
	batches, bytes atomic.Int64
}

func (r *traceReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	n, _ := io.Copy(io.Discard, req.Body)
	r.batches.Add(1)
	r.bytes.Add(n)
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.WriteHeader(http.StatusOK)
}

// startTraces points the standard OTLP variables at a receiver on loopback and returns the
// manager's exporter for it, running until ctx ends.
func startTraces(ctx context.Context) (*otlp.Exporter, *traceReceiver) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(err)
	r := &traceReceiver{}
	go func() { _ = http.Serve(l, r) }()
	must(os.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+l.Addr().String()))
	must(os.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"))
	e, err := otlp.FromEnvironment(ctx, otlp.Options{Version: "bench"})
	must(err)
	go func() { must(e.Start(ctx)) }()
	return e, r
}

// cpuTime is the CPU the bench's process has used so far: the manager, the simulated kubelet
// and the clients, so only a difference between two settings says something.
func cpuTime() time.Duration {
	var u syscall.Rusage
	must(syscall.Getrusage(syscall.RUSAGE_SELF, &u))
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}

// traceCost runs the fan-out rounds times with the manager's tracing as it was started
// (-traces or not) and prints deps->pod and CPU, so that two invocations compare
// (make bench-traces alternates them).
func traceCost(ctx context.Context, c client.Client, k *kubelet, n, rounds int, r *traceReceiver) {
	var p50s, cpus []time.Duration
	for i := range rounds {
		fmt.Printf("\nRound %d: one Run of %d steps (1 -> %d), traces %v\n", i+1, n, n-1, r != nil)
		ns := fmt.Sprintf("bench-traces-%d", i)
		before := cpuTime()
		got := fanOutRun(ctx, c, k, n, ns, false)
		spent := cpuTime() - before
		fmt.Printf("  CPU of the bench's process (manager, kubelet, clients) over the round: %s\n", spent.Round(time.Millisecond))
		p50s, cpus = append(p50s, got.p50), append(cpus, spent)
		must(c.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(ns), client.GracePeriodSeconds(0)))
		must(c.DeleteAllOf(ctx, &ergonv1alpha1.Run{}, client.InNamespace(ns)))
	}
	slices.Sort(p50s)
	slices.Sort(cpus)
	fmt.Printf("\nTraces %v, %d rounds of a %d-step fan-out: deps->pod p50 median %s (%s to %s); CPU a round median %s (%s to %s)\n",
		r != nil, rounds, n, p50s[len(p50s)/2], p50s[0], p50s[len(p50s)-1], cpus[len(cpus)/2].Round(time.Millisecond),
		cpus[0].Round(time.Millisecond), cpus[len(cpus)-1].Round(time.Millisecond))
	if r != nil {
		time.Sleep(2 * time.Second) // the last batch
		fmt.Printf("  the receiver took %d batches, %d KiB\n", r.batches.Load(), r.bytes.Load()>>10)
	}
}
