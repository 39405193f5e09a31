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
	"bufio"
	"bytes"
	"cmp"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// recorder watches the pods of a namespace and notes, by group and step, when each was first
// seen and when it was first seen Succeeded: both on this machine's clock, from one watch.
type recorder struct {
	key     func(*corev1.Pod) (string, string, bool)
	mu      sync.Mutex
	created map[string]time.Time
	done    map[string]time.Time
	failed  []string
	onDone  func(group, step string)
}

func record(ctx context.Context, cs kubernetes.Interface, ns string, key func(*corev1.Pod) (string, string, bool)) *recorder {
	r := &recorder{key: key, created: map[string]time.Time{}, done: map[string]time.Time{}}
	f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns))
	inf := f.Core().V1().Pods().Informer()
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { r.see(o.(*corev1.Pod)) },
		UpdateFunc: func(_, o any) { r.see(o.(*corev1.Pod)) },
	})
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
	return r
}

func (r *recorder) see(pod *corev1.Pod) {
	group, step, ok := r.key(pod)
	if !ok {
		return
	}
	k := group + "/" + step
	now := time.Now()
	r.mu.Lock()
	if _, seen := r.created[k]; !seen {
		r.created[k] = now
	}
	var notify func(string, string)
	switch {
	case pod.Status.Phase == corev1.PodSucceeded || endedCleanly(pod):
		if _, seen := r.done[k]; !seen {
			r.done[k] = now
			notify = r.onDone
		}
	case pod.Status.Phase == corev1.PodFailed:
		r.failed = append(r.failed, k)
	}
	r.mu.Unlock()
	if notify != nil {
		notify(group, step)
	}
}

// endedCleanly reports whether a pod the kubelet still calls Running has done its work: it
// restarts nothing and every container ended with exit code 0. The kubelet calls it
// Succeeded only once it has stopped the pod's sandbox, one or two of its one-second relists
// later; Ergon's controller takes a step as done on its container's end (and its
// entrypoint's report), so bare pods are done by the same sign.
func endedCleanly(pod *corev1.Pod) bool {
	if pod.Status.Phase != corev1.PodRunning || pod.Spec.RestartPolicy != corev1.RestartPolicyNever ||
		len(pod.Status.ContainerStatuses) != len(pod.Spec.Containers) {
		return false
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if t := cs.State.Terminated; t == nil || t.ExitCode != 0 {
			return false
		}
	}
	return true
}

func (r *recorder) setOnDone(f func(group, step string)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.onDone = f
}

func (r *recorder) isDone(group, step string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.done[group+"/"+step]
	return ok
}

func (r *recorder) fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failed = append(r.failed, err.Error())
}

func (r *recorder) status() (done int, failed []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.done), slices.Clone(r.failed)
}

// delays is "dependencies done -> pod created" for every step: from the last dependency seen
// Succeeded, or from submit for a step without one.
func (r *recorder) delays(w workload, submitted time.Time) []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []time.Duration
	for g := range w.groups {
		for _, s := range w.steps {
			created, ok := r.created[groupName(g)+"/"+s.name]
			if !ok {
				continue
			}
			ready := submitted
			for _, d := range s.deps {
				ready = later(ready, r.done[groupName(g)+"/"+d])
			}
			out = append(out, created.Sub(ready))
		}
	}
	slices.Sort(out)
	return out
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func pct(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[(len(sorted)-1)*p/100]
}

// apiRequests sums the API server's apiserver_request_total: all requests, and the writes by
// kind ("POST pods", "PATCH pods/status", ...), which writes.total sums.
func apiRequests(ctx context.Context, cs kubernetes.Interface) (all float64, writes writeCounts, err error) {
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return 0, nil, err
	}
	writes = writeCounts{}
	s := bufio.NewScanner(bytes.NewReader(raw))
	s.Buffer(make([]byte, 1<<20), 1<<22)
	for s.Scan() {
		line := s.Text()
		if !strings.HasPrefix(line, "apiserver_request_total{") {
			continue
		}
		i := strings.LastIndex(line, " ")
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		all += v
		if kind, ok := writeKind(line[:i]); ok {
			writes[kind] += v
		}
	}
	return all, writes, s.Err()
}

// writeCounts counts API writes by kind: the verb, then the resource and any subresource.
type writeCounts map[string]float64

// writeKind is the kind of the write an apiserver_request_total series counts ("PATCH
// pods/status"), or false when the series counts reads.
func writeKind(series string) (string, bool) {
	label := func(name string) string {
		_, rest, ok := strings.Cut(series, name+`="`)
		if !ok {
			return ""
		}
		v, _, _ := strings.Cut(rest, `"`)
		return v
	}
	verb := label("verb")
	switch verb {
	case "POST", "PUT", "PATCH", "DELETE", "APPLY":
	default:
		return "", false
	}
	resource := label("resource")
	if sub := label("subresource"); sub != "" {
		resource += "/" + sub
	}
	return verb + " " + resource, true
}

func (w writeCounts) total() float64 {
	var t float64
	for _, v := range w {
		t += v
	}
	return t
}

// perStep is what the writes of a run (after, less before) add up to per step, less the
// background the cluster writes at rate (per second, by kind) over the run's wall time.
func (w writeCounts) perStep(before, rate writeCounts, wall time.Duration, steps int) writeCounts {
	d := writeCounts{}
	for k, v := range w {
		if n := (v - before[k] - rate[k]*wall.Seconds()) / float64(steps); n >= 0.05 {
			d[k] = n
		}
	}
	return d
}

// String lists the kinds, the most frequent first.
func (w writeCounts) String() string {
	kinds := slices.SortedFunc(maps.Keys(w), func(a, b string) int {
		if c := cmp.Compare(w[b], w[a]); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = fmt.Sprintf("%s %.1f", k, w[k])
	}
	return strings.Join(parts, ", ")
}

// rate is the writes per second by kind between before and w, over d.
func (w writeCounts) rate(before writeCounts, d time.Duration) writeCounts {
	r := writeCounts{}
	for k, v := range w {
		r[k] = (v - before[k]) / d.Seconds()
	}
	return r
}

// controllerProcess is a controller's process on this node, found by its command line in /proc
// (the local cluster's pods share the host's PID namespace tree).
type controllerProcess struct{ pid int }

func findProcess(match func(args []string) bool) (controllerProcess, error) {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		raw, err := os.ReadFile(filepath.Join(d, "cmdline"))
		if err != nil || len(raw) == 0 {
			continue
		}
		if match(strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")) {
			pid, _ := strconv.Atoi(filepath.Base(d))
			return controllerProcess{pid: pid}, nil
		}
	}
	return controllerProcess{}, fmt.Errorf("no such process")
}

// resetPeak restarts the kernel's peak RSS (VmHWM) count of the process.
func (p controllerProcess) resetPeak() error {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", p.pid), []byte("5"), 0)
}

// usage is the CPU seconds the process has used and its peak RSS in bytes since resetPeak.
func (p controllerProcess) usage() (cpu float64, peak int64, err error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.pid))
	if err != nil {
		return 0, 0, err
	}
	fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+2:]))
	utime, _ := strconv.ParseFloat(fields[11], 64)
	stime, _ := strconv.ParseFloat(fields[12], 64)
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.pid))
	if err != nil {
		return 0, 0, err
	}
	for line := range strings.SplitSeq(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			peak = kb << 10
		}
	}
	return (utime + stime) / 100, peak, nil // USER_HZ is 100 on Linux
}

// nodeComponents are the node's long-lived processes whose CPU the node table breaks out, by
// the base name of their executable. What is left (containerd's shims, runc, the CNI plugins,
// the pods themselves, the engines' controllers) is the rest of the node's busy time.
var nodeComponents = []string{"kube-apiserver", "etcd", "kubelet", "containerd"}

// nodeCPU is the CPU seconds the whole node has been busy (/proc/stat: everything but idle and
// iowait) and the CPU seconds of each of nodeComponents, since boot.
type nodeCPU struct {
	busy  float64
	parts map[string]float64
}

func readNodeCPU() (nodeCPU, error) {
	n := nodeCPU{parts: map[string]float64{}}
	stat, err := os.ReadFile("/proc/stat")
	if err != nil {
		return n, err
	}
	line, _, _ := strings.Cut(string(stat), "\n")
	fields := strings.Fields(line) // cpu user nice system idle iowait irq softirq steal ...
	for i, f := range fields[1:] {
		if i == 3 || i == 4 {
			continue
		}
		v, _ := strconv.ParseFloat(f, 64)
		n.busy += v / 100
	}
	for _, name := range nodeComponents {
		p, err := findProcess(func(args []string) bool { return filepath.Base(args[0]) == name })
		if err != nil {
			continue
		}
		if cpu, _, err := p.usage(); err == nil {
			n.parts[name] = cpu
		}
	}
	return n, nil
}

// since is the node's CPU use from before to n.
func (n nodeCPU) since(before nodeCPU) nodeCPU {
	d := nodeCPU{busy: n.busy - before.busy, parts: map[string]float64{}}
	for name, v := range n.parts {
		d.parts[name] = v - before.parts[name]
	}
	return d
}

// String is the node's busy CPU seconds and the share of it each component took.
func (n nodeCPU) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%.1f", n.busy)
	rest := n.busy
	for _, name := range nodeComponents {
		fmt.Fprintf(&b, " | %.1f", n.parts[name])
		rest -= n.parts[name]
	}
	fmt.Fprintf(&b, " | %.1f", rest)
	return b.String()
}
