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
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// managerProcess is the manager binary (cmd/manager) running against envtest in a process of
// its own, so that its heap, RSS and CPU are the manager's alone, read from its own metrics.
type managerProcess struct {
	cmd     *exec.Cmd
	metrics string // http://127.0.0.1:PORT/metrics

}

// startManagerProcess builds the manager and runs it with args besides the bench's own.
func startManagerProcess(ctx context.Context, env *envtest.Environment, dir string, args ...string) *managerProcess {
	bin := filepath.Join(dir, "manager")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/manager")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	must(build.Run())
	user, err := env.AddUser(envtest.User{Name: "bench-manager", Groups: []string{"system:masters"}}, nil)
	must(err)
	kubeconfig, err := user.KubeConfig()
	must(err)
	must(os.WriteFile(filepath.Join(dir, "kubeconfig"), kubeconfig, 0o600))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(err)
	port := l.Addr().(*net.TCPAddr).Port
	must(l.Close())
	log, err := os.Create(filepath.Join(dir, "manager.log"))
	must(err)
	cmd := exec.CommandContext(ctx, bin, append([]string{
		"--kubeconfig", filepath.Join(dir, "kubeconfig"),
		"--metrics-bind-address", fmt.Sprintf("127.0.0.1:%d", port), "--metrics-secure=false",
		"--health-probe-bind-address=0", "--hooks-bind-address=0", "--enable-webhooks=false",
		"--entrypoint-image=ergon/manager:bench", "--zap-log-level=error",
		// The scale suite holds 10,000 step pods running at once to measure the engine, far past
		// the default step pod slots (docs/limits.md); bench-fairshare measures those.
		"--max-step-pods=0", "--max-step-pods-per-namespace=0", "--max-step-pods-per-run=0",
	}, args...)...)
	cmd.Stdout, cmd.Stderr = log, log
	must(cmd.Start())
	m := &managerProcess{cmd: cmd, metrics: fmt.Sprintf("http://127.0.0.1:%d/metrics", port)}
	for range 300 {
		if _, err := m.read(); err == nil {
			return m
		}
		time.Sleep(100 * time.Millisecond)
	}
	must(fmt.Errorf("the manager did not serve metrics; see %s", log.Name()))
	return nil
}

func (m *managerProcess) stop() {
	_ = m.cmd.Process.Signal(os.Interrupt)
	_ = m.cmd.Wait()
}

// usage is what the manager process reports of itself: its API writes are the requests of its
// clients that are not reads (client-go's rest_client_requests_total by method).
type usage struct{ heap, rss, cpu, writes float64 }

func (m *managerProcess) read() (usage, error) {
	resp, err := http.Get(m.metrics) //nolint:gosec,noctx // loopback, the bench's own child
	if err != nil {
		return usage{}, err
	}
	defer func() { _ = resp.Body.Close() }()
	var u usage
	s := bufio.NewScanner(resp.Body)
	s.Buffer(make([]byte, 1<<20), 1<<20)
	for s.Scan() {
		name, value, ok := strings.Cut(s.Text(), " ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			continue
		}
		if metric, labels, ok := strings.Cut(name, "{"); ok && metric == "rest_client_requests_total" {
			for _, method := range []string{"POST", "PUT", "PATCH", "DELETE"} {
				if strings.Contains(labels, `method="`+method+`"`) {
					u.writes += v
				}
			}
			continue
		}
		switch name {
		case "go_memstats_heap_inuse_bytes":
			u.heap = v
		case "process_resident_memory_bytes":
			u.rss = v
		case "process_cpu_seconds_total":
			u.cpu = v
		}
	}
	return u, s.Err()
}

// phase samples the manager's heap and RSS every 250 ms until the returned function is called,
// which returns the peaks and the CPU seconds spent meanwhile.
func (m *managerProcess) phase() func() (peak usage) {
	before, err := m.read()
	must(err)
	ctx, cancel := context.WithCancel(context.Background())
	var peak usage
	var mu sync.Mutex
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			if u, err := m.read(); err == nil {
				mu.Lock()
				peak.heap, peak.rss = max(peak.heap, u.heap), max(peak.rss, u.rss)
				mu.Unlock()
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return func() usage {
		cancel()
		<-done
		after, err := m.read()
		must(err)
		mu.Lock()
		defer mu.Unlock()
		peak.cpu = after.cpu - before.cpu
		peak.writes = after.writes - before.writes
		return peak
	}
}

func mib(b float64) string { return fmt.Sprintf("%.0f MiB", b/(1<<20)) }
