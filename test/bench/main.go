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

// Command bench measures the Run engine against a real API server (envtest) and prints the
// figures docs/design.md sets targets for:
//
//   - the delay from "dependencies done" to "step pod created", p50 and p99, with many Runs
//     active;
//   - API writes the manager makes per executed step;
//   - how long a 1,000-step fan-out takes to schedule, and the size of its Run object;
//   - the manager's heap while it holds the Runs.
//
// A goroutine plays the kubelet: it moves each step pod to Running, then to Succeeded with an
// output report as Ergon's entrypoint writes it. Run it with `make bench`.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/controllers"
	runcontroller "github.com/ergon-dev/ergon/controllers/run"
	"github.com/ergon-dev/ergon/internal/authz"
	"github.com/ergon-dev/ergon/internal/naming"
	"github.com/ergon-dev/ergon/internal/outputs/wire"
	"github.com/ergon-dev/ergon/internal/slots"
	"github.com/ergon-dev/ergon/internal/tracing/otlp"
	"github.com/ergon-dev/ergon/test/testenv"
	webhookv1alpha1 "github.com/ergon-dev/ergon/webhook/v1alpha1"
)

var scheme = k8sruntime.NewScheme()

func main() {
	runs := flag.Int("runs", 100, "Runs of the 10-step Scene to execute at once")
	fanOut := flag.Int("fan-out", 1000, "steps of the fan-out Scene")
	applies := flag.Int("applies", 200, "Scenes applied at once through the admission webhook")
	active := flag.Int("active", 500, "Runs kept active while step latency is measured")
	rate := flag.Int("rate", 50, "steps a second the kubelet finishes while Runs are active")
	noFsync := flag.Bool("etcd-no-fsync", false, "run etcd without fsync, to measure the engine rather than the disk")
	scale := flag.Bool("scale", false, "run the scale suite (scale.go) against the manager binary instead")
	var so scaleOptions
	flag.StringVar(&so.curve, "scale-curve", "100,300,1000", "scale: Run counts of the time and memory curve")
	flag.IntVar(&so.active, "scale-active", 1000, "scale: Runs held active at once")
	flag.IntVar(&so.activeSteps, "scale-active-steps", 10, "scale: parallel steps of each active Run")
	flag.IntVar(&so.gates, "scale-gates", 10000, "scale: Gates pending at once")
	flag.IntVar(&so.triggers, "scale-triggers", 1000, "scale: Triggers firing every minute")
	flag.IntVar(&so.triggerMinutes, "scale-trigger-minutes", 2, "scale: minutes the Triggers are watched")
	flag.StringVar(&so.workers, "scale-workers", "4", "scale: the manager's --run-workers")
	cpuProfile := flag.String("cpuprofile", "",
		"write a CPU profile of the many-Runs and fan-out phases, or of the tracing bench's rounds (manager and bench together), to this file")
	shards := flag.String("shards", "", "run only the shard throughput bench (shards.go): the shard counts to compare, e.g. 1,2")
	shardRuns := flag.Int("shard-runs", 400, "shards: Runs of the 10-step Scene per row")
	fleetShards := flag.String("fleet", "", "run only the fleet bench (shards.go): Runs of a 3-step chain across many namespaces, "+
		"on each of these shard counts, e.g. 1,2")
	fleetRuns := flag.Int("fleet-runs", 10000, "fleet: Runs per row")
	fleetNamespaces := flag.Int("fleet-namespaces", 100, "fleet: namespaces the Runs are spread over")
	fair := flag.Bool("fair-share", false, "run only the fair-share bench (fairshare.go) at the default slot limits")
	fairTenants := flag.Int("fair-tenants", 1, "fair-share: busy tenant namespaces")
	fairUnit := flag.Duration("fair-unit", -1, "fair-share: how long a busy tenant's unit runs; negative, longer than the bench")
	fairVerbose := flag.Bool("fair-verbose", false, "fair-share: print each chain's steps")
	archiveRounds := flag.Int("archive-rounds", 0,
		"run only the archive cost bench (shards.go): this many rounds of the 10-step Runs without and with an archive")
	archiveRuns := flag.Int("archive-runs", 200, "archive cost: Runs of the 10-step Scene per round")
	authzRounds := flag.Int("authz-rounds", 0,
		"run only the authorization bench: this many rounds of the fan-out, its leaves reading a Secret and reading nothing")
	traceRounds := flag.Int("trace-rounds", 0,
		"run only the tracing bench: this many rounds of the fan-out, with the manager's traces as -traces says")
	traced := flag.Bool("traces", false, "export the manager's traces to an OTLP/HTTP receiver on loopback")
	flag.Parse()
	must(clientgoscheme.AddToScheme(scheme))
	must(ergonv1alpha1.AddToScheme(scheme))

	env := &envtest.Environment{CRDDirectoryPaths: []string{filepath.Join("config", "crd", "bases")}, ErrorIfCRDPathMissing: true,
		WebhookInstallOptions: envtest.WebhookInstallOptions{Paths: []string{filepath.Join("config", "webhook")}}}
	// A loaded machine may take a while to start kube-apiserver.
	env.ControlPlaneStartTimeout, env.ControlPlaneStopTimeout = 3*time.Minute, time.Minute
	if *scale || *shards != "" || *archiveRounds > 0 || *fleetShards != "" {
		// The manager process serves no admission webhooks (nothing would answer them).
		env.WebhookInstallOptions = envtest.WebhookInstallOptions{}
	}
	if *noFsync {
		env.ControlPlane.Etcd = &envtest.Etcd{}
		env.ControlPlane.Etcd.Configure().Append("unsafe-no-fsync", "true")
	}
	cfg, err := env.Start()
	must(err)
	defer func() { _ = env.Stop() }()
	if *scale || *shards != "" || *archiveRounds > 0 || *fleetShards != "" {
		kcfg := rest.CopyConfig(cfg)
		kcfg.QPS, kcfg.Burst = 1000, 2000
		raw, err := client.NewWithWatch(kcfg, client.Options{Scheme: scheme})
		must(err)
		c := testenv.StampingClient(raw, testenv.Admin)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		if *shards != "" {
			shardThroughput(ctx, env, c, *shards, *shardRuns, so.workers)
			return
		}
		if *fleetShards != "" {
			fleet(ctx, env, c, *fleetShards, *fleetRuns, *fleetNamespaces, so.workers)
			return
		}
		if *archiveRounds > 0 {
			archiveCost(ctx, env, c, *archiveRounds, *archiveRuns, so.workers)
			return
		}
		scaleSuite(ctx, env, c, so)
		return
	}

	writes := &writeCounter{}
	mgrCfg := rest.CopyConfig(cfg)
	mgrCfg.QPS, mgrCfg.Burst = 1000, 2000
	mgrCfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { writes.next = rt; return writes })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	limits := slots.Limits{}
	if *fair {
		limits = defaultSlots
	}
	var receiver *traceReceiver
	if *traced {
		benchTraces, receiver = startTraces(ctx)
	}
	startManager(ctx, mgrCfg, &env.WebhookInstallOptions, limits)

	kcfg := rest.CopyConfig(cfg)
	kcfg.QPS, kcfg.Burst = 1000, 2000
	raw, err := client.NewWithWatch(kcfg, client.Options{Scheme: scheme})
	must(err)
	// The bench's client is the manager's own identity, which admission never stamps: it
	// stamps the administrator's identity itself, as admission would for a person.
	c := testenv.StampingClient(raw, testenv.Admin)
	k := &kubelet{c: c, created: map[string]time.Time{}, done: map[string]time.Time{}}
	go k.run(ctx)
	if *authzRounds > 0 {
		authorizationCost(ctx, c, k, *fanOut, *authzRounds)
		return
	}
	if *traceRounds > 0 {
		// Which of the process's CPU the tracing code takes (docs/observability.md).
		defer profileCPU(*cpuProfile)()
		traceCost(ctx, c, k, *fanOut, *traceRounds, receiver)
		return
	}
	if *fair {
		fmt.Printf("Fair share at the default slot limits (%d in total, %d per namespace, %d per Run)\n",
			defaultSlots.Total, defaultSlots.PerNamespace, defaultSlots.PerRun)
		fairShare(ctx, c, k, *fairTenants, 1000, *fairUnit, *fairVerbose)
		printQueueMetrics()
		return
	}

	fmt.Printf("%d Scenes applied through the admission webhook, %d at a time\n", *applies, 10)
	webhookBurst(ctx, c, *applies)
	fmt.Printf("\n%d Runs active; their steps finish at %d a second\n", *active, *rate)
	activeRuns(ctx, c, k, *active, *rate)
	defer profileCPU(*cpuProfile)()
	fmt.Printf("\n%d Runs of 10 steps (1 -> 8 -> 1), all at once\n", *runs)
	manyRuns(ctx, c, k, writes, *runs)
	fmt.Printf("\nOne Run of %d steps (1 -> %d), every leaf reading a Secret\n", *fanOut, *fanOut-1)
	writes.reset()
	fanOutRun(ctx, c, k, *fanOut, "bench-fan-out", true)
	by := writes.reset()
	for _, r := range slices.Sorted(maps.Keys(by)) {
		fmt.Printf("    %-40s %6d\n", r, by[r])
	}
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// authorizer is the manager's, whose figures the fan-out reports.
var authorizer *authz.Authorizer

// benchTraces is the manager's trace exporter under -traces.
var benchTraces *otlp.Exporter

func startManager(ctx context.Context, cfg *rest.Config, hooks *envtest.WebhookInstallOptions, limits slots.Limits) {
	ctrl.SetLogger(logr.Discard()) // the bench prints figures, not the manager's log
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"},
		WebhookServer: webhook.NewServer(webhook.Options{
			Host: hooks.LocalServingHost, Port: hooks.LocalServingPort, CertDir: hooks.LocalServingCertDir}),
		Cache: controllers.CacheOptions(),
	})
	must(err)
	authorizer = &authz.Authorizer{Client: mgr.GetClient()}
	must((&runcontroller.RunReconciler{
		Authorizer: authorizer,
		Client:     mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder("ergon-run"),
		Clock: clock.RealClock{}, Logs: noLogs{}, Config: runcontroller.RunConfig{EntrypointImage: "ergon/manager:bench", MaxDepth: 5, Workers: 4,
			StatusInterval: time.Second, EventInterval: 10 * time.Second, // the manager's defaults (cmd/manager)
			Slots: limits, Traces: benchTraces},
	}).SetupWithManager(mgr))
	must(webhookv1alpha1.SetupSceneWebhookWithManager(mgr))
	must(webhookv1alpha1.SetupRunWebhookWithManager(mgr))
	must(webhookv1alpha1.SetupTriggerWebhookWithManager(mgr))
	must(webhookv1alpha1.SetupGateWebhookWithManager(mgr))
	go func() { must(mgr.Start(ctx)) }()
}

// writeCounter counts the manager's API writes, by resource.
type writeCounter struct {
	next http.RoundTripper
	mu   sync.Mutex
	by   map[string]int
}

func (w *writeCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet {
		// .../namespaces/NS/RESOURCE[/NAME[/SUBRESOURCE]]
		parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
		resource := parts[len(parts)-1]
		if i := slices.Index(parts, "namespaces"); i >= 0 && len(parts) > i+2 {
			resource = parts[i+2]
			if len(parts) > i+4 {
				resource += "/" + parts[i+4]
			}
		}
		w.mu.Lock()
		if w.by == nil {
			w.by = map[string]int{}
		}
		w.by[req.Method+" "+resource]++
		w.mu.Unlock()
	}
	return w.next.RoundTrip(req)
}

func (w *writeCounter) reset() map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	by := w.by
	w.by = map[string]int{}
	return by
}

type noLogs struct{}

func (noLogs) Read(context.Context, string, string, string, wire.Tail) (io.ReadCloser, error) {
	return nil, fmt.Errorf("the bench kubelet keeps outputs inline")
}

func tenSteps() []ergonv1alpha1.Step {
	step := func(name string, deps ...string) ergonv1alpha1.Step {
		return ergonv1alpha1.Step{Name: name, DependsOn: deps,
			Container: &ergonv1alpha1.ContainerStep{Image: "busybox:bench", Command: []string{"true"}}}
	}
	steps := []ergonv1alpha1.Step{step("root")}
	var mids []string
	for i := range 8 {
		name := fmt.Sprintf("mid-%d", i)
		mids = append(mids, name)
		steps = append(steps, step(name, "root"))
	}
	return append(steps, step("join", mids...))
}

func namespace(ctx context.Context, c client.Client, name string) string {
	must(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}))
	return name
}

func manyRuns(ctx context.Context, c client.Client, k *kubelet, writes *writeCounter, n int) {
	ns := namespace(ctx, c, "bench-many")
	scene := &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: "ten", Namespace: ns}}
	scene.Spec.Steps = tenSteps()
	must(c.Create(ctx, scene))
	writes.reset()
	createdAt := map[string]time.Time{}
	start := time.Now()
	for i := range n {
		run := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("r%03d", i), Namespace: ns},
			Spec: ergonv1alpha1.RunSpec{SceneRef: corev1.LocalObjectReference{Name: "ten"}}}
		must(c.Create(ctx, run))
		createdAt[run.Name] = time.Now()
	}
	waitFinished(ctx, c, ns, n)
	elapsed := time.Since(start)
	byResource := writes.reset()
	var heap runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&heap)

	var delays []time.Duration
	k.mu.Lock()
	for run, at := range createdAt {
		pod := func(step string) string { return ns + "/" + naming.StepPodName(run, step, 1) }
		delays = append(delays, k.created[pod("root")].Sub(at))
		for i := range 8 {
			delays = append(delays, k.created[pod(fmt.Sprintf("mid-%d", i))].Sub(k.done[pod("root")]))
		}
		last := time.Time{}
		for i := range 8 {
			last = later(last, k.done[pod(fmt.Sprintf("mid-%d", i))])
		}
		delays = append(delays, k.created[pod("join")].Sub(last))
	}
	k.mu.Unlock()
	slices.Sort(delays)
	steps := n * 10
	total, events := 0, 0
	for r, count := range byResource {
		total += count
		if strings.Contains(r, "events") {
			events += count
		}
	}
	fmt.Printf("  all %d Runs finished in %s\n", n, elapsed.Round(time.Millisecond))
	fmt.Printf("  dependencies done -> pod created: p50 %s, p99 %s, max %s (%d steps)\n",
		pct(delays, 50), pct(delays, 99), delays[len(delays)-1].Round(time.Millisecond), len(delays))
	fmt.Printf("  API writes per executed step: %.2f without Events, %.2f with them\n",
		float64(total-events)/float64(steps), float64(total)/float64(steps))
	for _, r := range slices.Sorted(maps.Keys(byResource)) {
		fmt.Printf("    %-40s %6d\n", r, byResource[r])
	}
	printQueueMetrics()
	fmt.Printf("  bench process heap in use (manager, kubelet and clients): %d MiB\n", heap.HeapInuse>>20)
}

func waitFinished(ctx context.Context, c client.Client, ns string, n int) {
	deadline := time.Now().Add(3 * time.Minute)
	for {
		list := &ergonv1alpha1.RunList{}
		must(c.List(ctx, list, client.InNamespace(ns)))
		done := 0
		for _, r := range list.Items {
			if r.Status.Phase.Finished() {
				done++
			}
		}
		if done == n {
			return
		}
		if time.Now().After(deadline) {
			for _, r := range list.Items {
				if !r.Status.Phase.Finished() {
					fmt.Printf("  stuck: Run %s %s %s\n", r.Name, r.Status.Phase, r.Status.Progress)
					for _, s := range r.Status.Steps {
						if s.Phase.Finished() {
							continue
						}
						pod := &corev1.Pod{}
						err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: s.PodName}, pod)
						fmt.Printf("    %s %s attempts=%d pod=%s (%s %v)\n", s.Name, s.Phase, s.Attempts, s.PodName, pod.Status.Phase, err)
					}
				}
			}
			must(fmt.Errorf("%d of %d Runs finished in 3 minutes", done, n))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func pct(sorted []time.Duration, p int) time.Duration {
	return sorted[(len(sorted)-1)*p/100].Round(100 * time.Microsecond)
}

// printQueueMetrics prints how long Runs waited in the work queue and how long reconciles
// took, from controller-runtime's own metrics.
func printQueueMetrics() {
	families, err := metrics.Registry.Gather()
	must(err)
	for _, f := range families {
		switch f.GetName() {
		case "workqueue_queue_duration_seconds", "controller_runtime_reconcile_time_seconds":
			for _, m := range f.GetMetric() {
				h := m.GetHistogram()
				if h.GetSampleCount() == 0 {
					continue
				}
				fmt.Printf("  %s: %d samples, mean %.1f ms\n", f.GetName(), h.GetSampleCount(),
					1000*h.GetSampleSum()/float64(h.GetSampleCount()))
			}
		}
	}
}

// activeRuns keeps n Runs active (each has a step that runs until the end) while the kubelet
// finishes their other steps, a chain a -> b -> c, at a steady rate, and measures the delay
// from a step finishing to the pod of the step after it being created.
func activeRuns(ctx context.Context, c client.Client, k *kubelet, n, rate int) {
	ns := namespace(ctx, c, "bench-active")
	k.pacedNS, k.paced = ns, make(chan *corev1.Pod, 100000)
	step := func(name string, deps ...string) ergonv1alpha1.Step {
		return ergonv1alpha1.Step{Name: name, DependsOn: deps,
			Container: &ergonv1alpha1.ContainerStep{Image: "busybox:bench", Command: []string{"true"}}}
	}
	scene := &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: "active", Namespace: ns}}
	scene.Spec.Steps = []ergonv1alpha1.Step{step("hold"), step("a"), step("b", "a"), step("c", "b")}
	must(c.Create(ctx, scene))
	for i := range n {
		must(c.Create(ctx, &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("a%03d", i), Namespace: ns},
			Spec: ergonv1alpha1.RunSpec{SceneRef: corev1.LocalObjectReference{Name: "active"}}}))
	}
	// The pacer starts once every Run runs, so creating them is not measured.
	waitPods(k, ns, 2*n)
	start := time.Now()
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	finishedSteps := 0
	for finishedSteps < 3*n {
		<-tick.C
		k.succeed(ctx, <-k.paced)
		finishedSteps++
	}
	elapsed := time.Since(start)
	time.Sleep(time.Second)

	var delays []time.Duration
	k.mu.Lock()
	for i := range n {
		pod := func(step string) string { return ns + "/" + naming.StepPodName(fmt.Sprintf("a%03d", i), step, 1) }
		delays = append(delays, k.created[pod("b")].Sub(k.done[pod("a")]), k.created[pod("c")].Sub(k.done[pod("b")]))
	}
	k.mu.Unlock()
	slices.Sort(delays)
	var heap runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&heap)
	fmt.Printf("  %d steps finished in %s while %d Runs were active\n", finishedSteps, elapsed.Round(time.Millisecond), n)
	fmt.Printf("  dependencies done -> pod created: p50 %s, p99 %s, max %s (%d steps)\n",
		pct(delays, 50), pct(delays, 99), delays[len(delays)-1].Round(time.Millisecond), len(delays))
	printQueueMetrics()
	fmt.Printf("  bench process heap in use (manager, kubelet and clients): %d MiB\n", heap.HeapInuse>>20)
	k.pacedNS = ""
	must(c.DeleteAllOf(ctx, &ergonv1alpha1.Run{}, client.InNamespace(ns)))
}

// waitPods waits until the kubelet has seen n pods of a namespace.
func waitPods(k *kubelet, ns string, n int) {
	for {
		k.mu.Lock()
		seen := 0
		for name := range k.created {
			if strings.HasPrefix(name, ns+"/") {
				seen++
			}
		}
		k.mu.Unlock()
		if seen >= n {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// profileCPU writes a CPU profile to path, when there is one, until the returned function is
// called.
func profileCPU(path string) func() {
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	must(err)
	must(pprof.StartCPUProfile(f))
	return func() {
		pprof.StopCPUProfile()
		must(f.Close())
	}
}
