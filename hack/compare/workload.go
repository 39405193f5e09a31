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
	"fmt"
	"strings"
)

// A workload is the same DAG of steps for every engine: groups copies of it run at once
// (Runs, Workflows, or sets of bare pods).
type workload struct {
	name   string
	groups int
	steps  []step
}

// A step runs `true`, or `sleep` for sleep seconds, or, with output set, reads its
// dependency's output and writes 100 KiB.
type step struct {
	name   string
	deps   []string
	output bool
	sleep  float64
}

const outputBytes = 100 << 10

func (w workload) size() int { return w.groups * len(w.steps) }

// independent reports whether no step depends on another or passes an output: a fan-out.
func (w workload) independent() bool {
	for _, s := range w.steps {
		if len(s.deps) > 0 || s.output {
			return false
		}
	}
	return true
}

func fanOut(n int) workload {
	w := workload{name: fmt.Sprintf("fan-out-%d", n), groups: 1}
	for i := range n {
		w.steps = append(w.steps, step{name: fmt.Sprintf("s%03d", i)})
	}
	return w
}

func chain(n int, output bool) workload {
	w := workload{name: fmt.Sprintf("chain-%d", n), groups: 1}
	if output {
		w.name = fmt.Sprintf("outputs-%d", n)
	}
	for i := range n {
		s := step{name: fmt.Sprintf("s%03d", i), output: output}
		if i > 0 {
			s.deps = []string{fmt.Sprintf("s%03d", i-1)}
		}
		w.steps = append(w.steps, s)
	}
	return w
}

func diamonds(n int) workload {
	return workload{name: fmt.Sprintf("diamond-x%d", n), groups: n, steps: []step{
		{name: "a"}, {name: "b", deps: []string{"a"}}, {name: "c", deps: []string{"a"}}, {name: "d", deps: []string{"b", "c"}},
	}}
}

// chains is n chains of m steps, each its own Workflow/Run, all started together: many small
// Runs, as a Trigger or an evaluation starts them.
func chains(n, m int) workload {
	w := chain(m, false)
	w.name, w.groups = fmt.Sprintf("chains-%dx%d", n, m), n
	return w
}

// parseWorkloads reads "fan-out-100,chain-20,diamond-x50,outputs-10,chains-200x3".
func parseWorkloads(list string) ([]workload, error) {
	var out []workload
	for name := range strings.SplitSeq(list, ",") {
		var n, ms int
		switch name = strings.TrimSpace(name); {
		case scan(name, "fan-out-%d", &n):
			out = append(out, fanOut(n))
		case scan(name, "chain-%d", &n):
			out = append(out, chain(n, false))
		case scanSleepy(name, &n, &ms):
			w := chain(n, false)
			w.name = name
			for i := range w.steps {
				w.steps[i].sleep = float64(ms) / 1000
			}
			out = append(out, w)
		case scan(name, "outputs-%d", &n):
			out = append(out, chain(n, true))
		case scan(name, "diamond-x%d", &n):
			out = append(out, diamonds(n))
		case scanChains(name, &n, &ms):
			out = append(out, chains(n, ms))
		default:
			return nil, fmt.Errorf("unknown workload %q (fan-out-N, chain-N, chain-N-sleepMSms, diamond-xN, outputs-N, chains-NxM)", name)
		}
	}
	return out, nil
}

func scan(s, format string, n *int) bool {
	_, err := fmt.Sscanf(s, format, n)
	return err == nil && *n > 0 && fmt.Sprintf(format, *n) == s
}

// scanChains reads chains-NxM: N Runs of a chain of M steps.
func scanChains(s string, n, m *int) bool {
	const format = "chains-%dx%d"
	_, err := fmt.Sscanf(s, format, n, m)
	return err == nil && *n > 0 && *m > 0 && fmt.Sprintf(format, *n, *m) == s
}

// scanSleepy reads chain-N-sleepMSms: a chain of N steps that each sleep MS milliseconds.
func scanSleepy(s string, n, ms *int) bool {
	const format = "chain-%d-sleep%dms"
	_, err := fmt.Sscanf(s, format, n, ms)
	return err == nil && *n > 0 && *ms > 0 && fmt.Sprintf(format, *n, *ms) == s
}

// script is the shell program of a step; prev is how the engine hands it its dependency's
// output as "$1" (empty when there is none).
func (s step) script() string {
	if s.sleep > 0 {
		return fmt.Sprintf("sleep %g", s.sleep)
	}
	if !s.output {
		return "true"
	}
	return fmt.Sprintf(`test -z "$1" || printf %%s "$1" | wc -c >/dev/null; head -c %d /dev/zero | tr '\0' a`, outputBytes)
}
