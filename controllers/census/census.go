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

// Package census counts, when Prometheus scrapes the manager, what the Runs, Gates and
// Triggers of its shard are doing and how long they have waited: the gauges an alert on stuck
// Runs or forgotten Gates reads. It reads the manager's cache and writes nothing.
//
// Only the manager that leads its shard counts: a standby has the same cache, and two replicas
// reporting the same Runs would double every sum.
package census

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/shard"
)

// Census is the leader-elected runnable whose cache the collector reads while it runs.
type Census struct {
	// Reader is the manager's cache.
	Reader client.Reader
	// Shard is the namespaces this manager reconciles.
	Shard shard.Shard
	Clock clock.PassiveClock
}

// current is the Census the collector reads: the one running, while it leads; nil otherwise.
var current atomic.Pointer[Census]

// Start makes c the one the collector reads, until ctx ends.
func (c *Census) Start(ctx context.Context) error {
	current.Store(c)
	<-ctx.Done()
	current.CompareAndSwap(c, nil)
	return nil
}

// NeedLeaderElection is true: only the leader of a shard counts its objects.
func (c *Census) NeedLeaderElection() bool { return true }

// scrapeTimeout bounds how long a scrape waits for the cache.
const scrapeTimeout = 10 * time.Second

const labelNamespace = "namespace"

var (
	runsDesc = prometheus.NewDesc("ergon_runs",
		"Runs that have not finished, by namespace and phase (Pending, Running, Waiting, Suspended).",
		[]string{labelNamespace, "phase"}, nil)
	runsOldestDesc = prometheus.NewDesc("ergon_runs_oldest_seconds",
		"Age of the oldest Run of a namespace in a phase that has not finished.",
		[]string{labelNamespace, "phase"}, nil)
	runsIdleDesc = prometheus.NewDesc("ergon_runs_idle_seconds",
		"The longest any Running Run of a namespace has gone without a step or attempt starting or ending.",
		[]string{labelNamespace}, nil)
	gatesPendingDesc = prometheus.NewDesc("ergon_gates_pending",
		"Gates of a namespace waiting for a decision.",
		[]string{labelNamespace}, nil)
	gatesOldestDesc = prometheus.NewDesc("ergon_gates_oldest_pending_seconds",
		"Age of the oldest Gate of a namespace that waits for a decision.",
		[]string{labelNamespace}, nil)
	triggersOverBudgetDesc = prometheus.NewDesc("ergon_triggers_over_budget",
		"Triggers of a namespace that start no Run because their Runs spent the budget (condition BudgetExceeded).",
		[]string{labelNamespace}, nil)
)

// collector sends the census of the Census running now, if any.
type collector struct{}

func init() { metrics.Registry.MustRegister(collector{}) }

// Describe sends the descriptions of the census' metrics.
func (collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{runsDesc, runsOldestDesc, runsIdleDesc, gatesPendingDesc, gatesOldestDesc,
		triggersOverBudgetDesc} {
		ch <- d
	}
}

// Collect counts the objects of the running Census' cache.
func (collector) Collect(ch chan<- prometheus.Metric) {
	c := current.Load()
	if c == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	for _, s := range c.count(ctx) {
		ch <- prometheus.MustNewConstMetric(s.desc, prometheus.GaugeValue, s.value, s.labels...)
	}
}

// count reads the cache and counts; a kind it cannot list is left out, with a log line.
func (c *Census) count(ctx context.Context) []sample {
	now := c.Clock.Now()
	runs, gates, triggers := &ergonv1alpha1.RunList{}, &ergonv1alpha1.GateList{}, &ergonv1alpha1.TriggerList{}
	var out []sample
	for _, kind := range []struct {
		name  string
		list  client.ObjectList
		count func() []sample
	}{
		{"Runs", runs, func() []sample { return countRuns(runs.Items, c.Shard, now) }},
		{"Gates", gates, func() []sample { return countGates(gates.Items, c.Shard, now) }},
		{"Triggers", triggers, func() []sample { return countTriggers(triggers.Items, c.Shard) }},
	} {
		// Read only: the cache's objects are counted, not copied.
		if err := c.Reader.List(ctx, kind.list, client.UnsafeDisableDeepCopy); err != nil {
			log.FromContext(ctx).Error(err, "Counting "+kind.name+" for the metrics")
			continue
		}
		out = append(out, kind.count()...)
	}
	return out
}
