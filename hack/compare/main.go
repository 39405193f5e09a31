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

// Command compare runs the same workloads through Ergon, Argo Workflows and bare pods on one
// cluster and prints a table of wall time, "dependencies done -> pod created", API requests per
// step and the controllers' CPU and peak RSS. hack/compare/compare.sh installs what it needs;
// see docs/performance.md. It is a benchmark, never part of make test.
//
//	compare -workloads fan-out-100,chain-20 -engines ergon,argo,bare -repeat 1
//	compare argo-manifests -controller-image I -executor-image I < cluster-install.yaml
package main

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// result is one run of one workload by one engine.
type result struct {
	workload, engine string
	steps            int
	wall             time.Duration
	p50, p99         time.Duration
	requests, writes float64
	writeKinds       writeCounts // writes per step by kind
	cpu              float64     // controller CPU seconds; -1 when there is no controller
	peakRSS          int64
	node             nodeCPU // the node's CPU over the run, by component
	err              error
}

// usage is the controller's CPU and peak RSS, or nothing when there is no controller.
func (r result) usage() string {
	if r.cpu < 0 {
		return ""
	}
	return fmt.Sprintf(", controller CPU %.1f s, peak RSS %d MiB", r.cpu, r.peakRSS>>20)
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "argo-manifests" {
		if err := argoManifests(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "compare:", err)
			os.Exit(1)
		}
		return
	}
	workloads := flag.String("workloads", "fan-out-100,fan-out-500,chain-20,diamond-x50,outputs-10", "workloads to run")
	engines := flag.String("engines", "ergon,argo,bare", "engines to run each workload through")
	repeat := flag.Int("repeat", 1, "runs of each workload by each engine; the engines' order rotates each time")
	image := flag.String("image", "ergon/busybox:dev", "the image every step runs (busybox: sh, true, head, tr)")
	ergonImage := flag.String("ergon-image", "", "the Ergon manager image installed (finds its process)")
	timeout := flag.Duration("timeout", 30*time.Minute, "the longest one workload may take")
	flag.Parse()
	if err := run(*workloads, *engines, *image, *ergonImage, *repeat, *timeout); err != nil {
		fmt.Fprintln(os.Stderr, "compare:", err)
		os.Exit(1)
	}
}

func run(workloadList, engineList, image, ergonImage string, repeat int, timeout time.Duration) error {
	ws, err := parseWorkloads(workloadList)
	if err != nil {
		return err
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(clientcmd.NewDefaultClientConfigLoadingRules(),
		&clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = 200, 400
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	all := map[string]engine{
		"ergon": ergon{dyn: dyn, image: image},
		"argo":  argo{cs: cs, dyn: dyn, image: image},
	}
	for name, shape := range bareShapes {
		all[name] = bare{cs: cs, image: image, engine: name, shape: shape, ergonImage: ergonImage}
	}
	var order []engine
	for name := range strings.SplitSeq(engineList, ",") {
		e, ok := all[strings.TrimSpace(name)]
		if !ok {
			return fmt.Errorf("unknown engine %q (one of %s)", name, strings.Join(slices.Sorted(maps.Keys(all)), ", "))
		}
		order = append(order, e)
	}
	procs := map[string]func([]string) bool{
		"ergon": func(args []string) bool {
			return args[0] == "/manager" && slices.Contains(args, "--entrypoint-image="+ergonImage)
		},
		"argo": func(args []string) bool { return strings.HasSuffix(args[0], "workflow-controller") },
	}
	ctx := context.Background()
	var results []result
	for r := range repeat {
		for _, w := range ws {
			for i := range order {
				e := order[(i+r)%len(order)]
				res := runOne(ctx, cs, e, w, procs[e.name()], timeout)
				fmt.Fprintf(os.Stderr, "%s %s: wall %s p50 %s p99 %s, %.1f requests/step (%.1f writes)%s, node CPU s %s %v\n",
					w.name, e.name(), res.wall.Round(100*time.Millisecond), res.p50.Round(time.Millisecond),
					res.p99.Round(time.Millisecond), res.requests, res.writes, res.usage(), res.node, errText(res.err))
				if res.err == nil {
					fmt.Fprintf(os.Stderr, "  writes per step: %s\n", res.writeKinds)
				}
				results = append(results, res)
			}
		}
	}
	fmt.Print(table(ws, order, results))
	return nil
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return "FAILED: " + err.Error()
}

// deleteNamespace deletes a run's namespace and waits, at most five minutes, until it is gone.
func deleteNamespace(cs kubernetes.Interface, ns string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	_ = cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
	for ctx.Err() == nil {
		if _, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			return
		}
		time.Sleep(time.Second)
	}
}

// baselineWindow is how long the cluster's background request rate is measured before each run.
const baselineWindow = 20 * time.Second

func runOne(ctx context.Context, cs kubernetes.Interface, e engine, w workload, proc func([]string) bool, timeout time.Duration) result {
	res := result{workload: w.name, engine: e.name(), steps: w.size(), cpu: -1}
	ns := fmt.Sprintf("cmp-%s-%s-%04d", e.name(), w.name, rand.IntN(10000))
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns,
		Labels: map[string]string{"compare.ergon.dev/run": "true"}}}, metav1.CreateOptions{}); err != nil {
		res.err = err
		return res
	}
	// The namespace goes, and is waited for, after the measurement: its pods' deletion must not
	// count as the next run's background.
	defer deleteNamespace(cs, ns)
	// The default ServiceAccount appears a moment after the namespace.
	for range 100 {
		if _, err := cs.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{}); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if res.err = e.prepare(ctx, ns, w); res.err != nil {
		return res
	}
	time.Sleep(2 * time.Second) // a Scene compiled, RBAC in the caches
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	rec := record(wctx, cs, ns, e.key)
	var p controllerProcess
	var cpu0 float64
	if proc != nil {
		var err error
		if p, err = findProcess(proc); err == nil && p.resetPeak() == nil {
			cpu0, _, _ = p.usage()
		} else {
			p.pid = 0
		}
	}
	// The cluster's own background requests (kubelet, leases, the idle controllers' resyncs),
	// measured over a quiet 20 s before the submit, are subtracted per second of the run, so
	// that a slower engine is not charged for the background its longer run saw.
	base0, bwr0, err := apiRequests(ctx, cs)
	if err != nil {
		res.err = err
		return res
	}
	time.Sleep(baselineWindow)
	req0, wr0, err := apiRequests(ctx, cs)
	if err != nil {
		res.err = err
		return res
	}
	rate, wrate := (req0-base0)/baselineWindow.Seconds(), wr0.rate(bwr0, baselineWindow)
	node0, err := readNodeCPU()
	if err != nil {
		res.err = err
		return res
	}
	start := time.Now()
	if res.err = e.submit(wctx, ns, w, rec); res.err != nil {
		return res
	}
	for {
		var done bool
		if _, ok := e.(bare); ok {
			n, _ := rec.status()
			done = n == w.size()
		} else if done, res.err = e.finished(wctx, ns, w); res.err != nil {
			return res
		}
		if _, failed := rec.status(); len(failed) > 0 {
			res.err = fmt.Errorf("failed: %s", strings.Join(failed, ", "))
			return res
		}
		if done {
			break
		}
		if wctx.Err() != nil {
			res.err = fmt.Errorf("not finished after %s", timeout)
			return res
		}
		time.Sleep(250 * time.Millisecond)
	}
	res.wall = time.Since(start)
	if node1, err := readNodeCPU(); err == nil {
		res.node = node1.since(node0)
	}
	req1, wr1, err := apiRequests(ctx, cs)
	if err == nil {
		bg, wbg := rate*res.wall.Seconds(), wrate.total()*res.wall.Seconds()
		res.requests = max(req1-req0-bg, 0) / float64(w.size())
		res.writes = max(wr1.total()-wr0.total()-wbg, 0) / float64(w.size())
		res.writeKinds = wr1.perStep(wr0, wrate, res.wall, w.size())
	}
	if p.pid != 0 {
		cpu1, peak, err := p.usage()
		if err == nil {
			res.cpu, res.peakRSS = cpu1-cpu0, peak
		}
	}
	d := rec.delays(w, start)
	res.p50, res.p99 = pct(d, 50), pct(d, 99)
	return res
}

// table is the Markdown table of the medians (min-max when repeated) and the ratios.
func table(ws []workload, order []engine, results []result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "| workload | engine | runs | wall (median, min-max) | deps done -> pod created p50 / p99 "+
		"| API requests / step (writes) | controller CPU s | controller peak RSS |\n")
	fmt.Fprintf(&b, "|---|---|---|---|---|---|---|---|\n")
	medianWall := map[string]time.Duration{}
	median := map[string]result{}
	for _, w := range ws {
		for _, e := range order {
			var rs []result
			for _, r := range results {
				if r.workload == w.name && r.engine == e.name() && r.err == nil {
					rs = append(rs, r)
				}
			}
			if len(rs) == 0 {
				fmt.Fprintf(&b, "| %s | %s | 0 | failed | | | | |\n", w.name, e.name())
				continue
			}
			slices.SortFunc(rs, func(x, y result) int { return int(x.wall - y.wall) })
			// The run in the middle; with an even number, the lower of the middle two, and
			// the wall median is the mean of both.
			m := rs[(len(rs)-1)/2]
			m.wall = (m.wall + rs[len(rs)/2].wall) / 2
			medianWall[w.name+"/"+e.name()] = m.wall
			median[w.name+"/"+e.name()] = m
			cpu, rss := "-", "-"
			if m.cpu >= 0 {
				cpu, rss = fmt.Sprintf("%.1f", m.cpu), fmt.Sprintf("%d MiB", m.peakRSS>>20)
			}
			fmt.Fprintf(&b, "| %s | %s | %d | %.1f s (%.1f-%.1f) | %s / %s | %.1f (%.1f) | %s | %s |\n", w.name, e.name(), len(rs),
				m.wall.Seconds(), rs[0].wall.Seconds(), rs[len(rs)-1].wall.Seconds(),
				m.p50.Round(time.Millisecond), m.p99.Round(time.Millisecond), m.requests, m.writes, cpu, rss)
		}
	}
	fmt.Fprintf(&b, "\nThe node's CPU seconds over the median run: all busy time, then %s and the rest "+
		"(shims, runc, CNI, the pods, the engines' controllers).\n\n| workload | engine | node busy | %s | rest |\n|---|---|---|%s---|\n",
		strings.Join(nodeComponents, ", "), strings.Join(nodeComponents, " | "), strings.Repeat("---|", len(nodeComponents)))
	for _, w := range ws {
		for _, e := range order {
			if m, ok := median[w.name+"/"+e.name()]; ok {
				fmt.Fprintf(&b, "| %s | %s | %s |\n", w.name, e.name(), m.node)
			}
		}
	}
	fmt.Fprintf(&b, "\n| workload | Ergon / Argo | Ergon / bare pods |\n|---|---|---|\n")
	for _, w := range ws {
		ratio := func(other string) string {
			e, o := medianWall[w.name+"/ergon"], medianWall[w.name+"/"+other]
			if e == 0 || o == 0 {
				return "-"
			}
			return fmt.Sprintf("%.2f", e.Seconds()/o.Seconds())
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", w.name, ratio("argo"), ratio("bare"))
	}
	return b.String()
}
