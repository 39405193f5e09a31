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

// Command hooks measures the webhook Trigger endpoint on loopback against a real API server
// (envtest): throughput and latency of signed deliveries that each start a Run, and of
// deliveries refused for a bad signature. The endpoint reads Triggers from a manager's cache
// and Secrets directly, as in the manager. Run it with `make bench`.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/cause"
	"github.com/ergon-dev/ergon/internal/hooks"
)

var key = []byte("bench-signing-key")

func main() {
	n := flag.Int("requests", 3000, "signed deliveries to send")
	concurrency := flag.Int("concurrency", 16, "deliveries in flight at once")
	noFsync := flag.Bool("etcd-no-fsync", false, "run etcd without fsync, to measure the endpoint rather than the disk")
	flag.Parse()
	// The endpoint's logs would be most of the output; the figures are what matter here.
	ctrl.SetLogger(logr.Discard())
	scheme := k8sruntime.NewScheme()
	must(clientgoscheme.AddToScheme(scheme))
	must(ergonv1alpha1.AddToScheme(scheme))

	env := &envtest.Environment{CRDDirectoryPaths: []string{filepath.Join("config", "crd", "bases")}, ErrorIfCRDPathMissing: true}
	if *noFsync {
		env.ControlPlane.Etcd = &envtest.Etcd{}
		env.ControlPlane.Etcd.Configure().Append("unsafe-no-fsync", "true")
	}
	cfg, err := env.Start()
	must(err)
	defer func() { _ = env.Stop() }()
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 1000, 2000

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	must(err)
	ns := "hooks-bench"
	must(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	must(c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "key", Namespace: ns}, Data: map[string][]byte{"key": key}}))
	must(c.Create(ctx, &ergonv1alpha1.Trigger{ObjectMeta: metav1.ObjectMeta{Name: "push", Namespace: ns},
		Spec: ergonv1alpha1.TriggerSpec{SceneRef: corev1.LocalObjectReference{Name: "on-push"},
			Webhook: &ergonv1alpha1.WebhookSource{
				SecretRef: corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "key"}, Key: "key"},
				Params:    map[string]string{"pr": "body.pull_request.number", "title": "body.pull_request.title"},
			}}}))

	addr := freeAddress()
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}})
	must(err)
	// Every client may have a body in flight, and every delivery may start its Run: the bench
	// measures the endpoint (counting the Trigger's Runs of the last minute included), not its caps.
	must(mgr.Add(&hooks.Server{Client: mgr.GetClient(), SecretReader: mgr.GetAPIReader(), Clock: clock.RealClock{},
		Addr: addr, Rate: rate.Inf, MaxBodies: *concurrency, MaxBodiesPerTrigger: *concurrency,
		Limits: cause.Limits{MaxPerMinute: *n + 1}}))
	go func() { must(mgr.Start(ctx)) }()
	url := "http://" + addr + "/hooks/" + ns + "/push"
	waitServing(url)

	body := []byte(`{"action":"opened","pull_request":{"number":4242,"title":"Make the hooks fast"},` +
		`"repository":{"full_name":"ergon-dev/ergon"}}`)
	fmt.Printf("%d signed deliveries, %d in flight, each starting a Run (%d-byte body, two CEL mappings)\n", *n, *concurrency, len(body))
	report(load(url, body, *n, *concurrency, key, http.StatusAccepted))
	fmt.Printf("\n%d deliveries with a bad signature, %d in flight, each refused (no sooner than %s)\n",
		*n, *concurrency, hooks.DefaultRefusalDelay)
	report(load(url, body, *n, *concurrency, []byte("wrong key"), http.StatusUnauthorized))

	runs := &ergonv1alpha1.RunList{}
	must(c.List(ctx, runs, client.InNamespace(ns)))
	fmt.Printf("\nRuns created: %d (one per accepted delivery, and the warm-up's)\n", len(runs.Items))
}

type result struct {
	latencies []time.Duration
	elapsed   time.Duration
	wrong     int64
}

func load(url string, body []byte, n, concurrency int, signingKey []byte, want int) result {
	transport := &http.Transport{MaxIdleConnsPerHost: concurrency}
	httpClient := &http.Client{Transport: transport, Timeout: 30 * time.Second}
	latencies := make([]time.Duration, n)
	var next, wrong atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range concurrency {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				ts, id := strconv.FormatInt(time.Now().Unix(), 10), fmt.Sprintf("%d-%d", want, i)
				req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
				req.Header.Set(hooks.HeaderSignature, hooks.Sign(signingKey, ts, id, body))
				req.Header.Set(hooks.HeaderTimestamp, ts)
				req.Header.Set(hooks.HeaderDelivery, id)
				t0 := time.Now()
				resp, err := httpClient.Do(req)
				if err != nil {
					wrong.Add(1)
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
				latencies[i] = time.Since(t0)
				if resp.StatusCode != want {
					wrong.Add(1)
				}
			}
		})
	}
	wg.Wait()
	return result{latencies: latencies, elapsed: time.Since(start), wrong: wrong.Load()}
}

func report(r result) {
	sorted := slices.Clone(r.latencies)
	slices.Sort(sorted)
	pct := func(p float64) time.Duration {
		return sorted[min(len(sorted)-1, int(math.Ceil(p/100*float64(len(sorted))))-1)]
	}
	fmt.Printf("    throughput          %8.0f req/s\n", float64(len(sorted))/r.elapsed.Seconds())
	fmt.Printf("    latency p50         %8s\n", pct(50).Round(10*time.Microsecond))
	fmt.Printf("    latency p99         %8s\n", pct(99).Round(10*time.Microsecond))
	fmt.Printf("    latency max         %8s\n", sorted[len(sorted)-1].Round(10*time.Microsecond))
	fmt.Printf("    unexpected answers  %8d\n", r.wrong)
}

func freeAddress() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(err)
	addr := l.Addr().String()
	must(l.Close())
	return addr
}

// waitServing waits until the endpoint accepts a signed delivery: it serves, and its cache has
// the Trigger (an unsigned post is refused the same either way, so it cannot tell).
func waitServing(url string) {
	body := []byte(`{"pull_request":{"number":1,"title":"warm-up"}}`)
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		ts := strconv.FormatInt(time.Now().Unix(), 10)
		req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
		req.Header.Set(hooks.HeaderSignature, hooks.Sign(key, ts, "warm-up", body))
		req.Header.Set(hooks.HeaderTimestamp, ts)
		req.Header.Set(hooks.HeaderDelivery, "warm-up")
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusAccepted {
				return
			}
		}
	}
	must(fmt.Errorf("the hooks endpoint did not come up"))
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "hooks bench:", err)
		os.Exit(1)
	}
}
