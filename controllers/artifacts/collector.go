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

// Package artifacts collects the artifacts of Runs that are gone from the artifact store
// (docs/artifacts.md, "Lifecycle").
package artifacts

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/archive"
	"github.com/ergon-dev/ergon/internal/artifacts"
	"github.com/ergon-dev/ergon/internal/artifacts/store"
	"github.com/ergon-dev/ergon/internal/shard"
)

// Defaults of the collector.
const (
	// DefaultInterval is the time between two passes.
	DefaultInterval = 10 * time.Minute
	// DefaultGrace keeps what was written this recently whatever else holds: a Run the
	// manager's cache does not show yet, an upload of a Run being created.
	DefaultGrace = 10 * time.Minute
)

var (
	collectedRuns = prometheus.NewCounter(prometheus.CounterOpts{Name: "ergon_artifacts_collected_runs_total",
		Help: "Runs whose artifacts the collector deleted from the store."})
	collectFailures = prometheus.NewCounter(prometheus.CounterOpts{Name: "ergon_artifacts_collect_failures_total",
		Help: "Passes of the artifact collector that failed (the store or the archive did not answer)."})
)

func init() {
	metrics.Registry.MustRegister(collectedRuns, collectFailures)
}

// Collector deletes the artifacts of Runs that are gone: neither in the cluster nor in the
// archive. It holds nothing else back: a Run that reuses another's artifacts (a rerun) has
// copies of its own. A store or an archive that does not answer costs a pass, not an artifact.
type Collector struct {
	Store *store.Store
	// Reader lists Runs (the manager's cache), APIReader Namespaces (which it does not cache).
	Reader, APIReader client.Reader
	// Archive keeps the artifacts of the Runs it holds a record of; nil when there is none.
	Archive archive.Store
	Clock   clock.PassiveClock
	// Interval and Grace: DefaultInterval and DefaultGrace when zero.
	Interval, Grace time.Duration
	// Shard is the shard this manager collects for; the first also collects the artifacts of
	// namespaces that are gone.
	Shard shard.Shard
}

// NeedLeaderElection makes one manager of a shard collect.
func (c *Collector) NeedLeaderElection() bool { return true }

// Start collects every Interval until ctx ends.
func (c *Collector) Start(ctx context.Context) error {
	interval := c.Interval
	if interval == 0 {
		interval = DefaultInterval
	}
	log := ctrl.LoggerFrom(ctx).WithName("artifact-collector")
	for {
		if n, err := c.CollectOnce(ctx); err != nil {
			collectFailures.Inc()
			log.Error(err, "Collecting artifacts", "runs", n)
		} else if n > 0 {
			log.Info("Deleted the artifacts of Runs that are gone", "runs", n)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(interval):
		}
	}
}

// CollectOnce makes one pass and returns the number of Runs whose artifacts it deleted.
func (c *Collector) CollectOnce(ctx context.Context) (int, error) {
	grace := c.Grace
	if grace == 0 {
		grace = DefaultGrace
	}
	namespaces := &corev1.NamespaceList{}
	if err := c.APIReader.List(ctx, namespaces); err != nil {
		return 0, err
	}
	owned := map[string]bool{}
	for _, ns := range namespaces.Items {
		owned[string(ns.UID)] = c.Shard.Count <= 1 || c.Shard.Owns(ns.Name)
	}
	runs := &ergonv1alpha1.RunList{}
	if err := c.Reader.List(ctx, runs); err != nil {
		return 0, err
	}
	live := map[string]bool{}
	for _, r := range runs.Items {
		live[string(r.UID)] = true
	}
	entries, err := c.Store.Runs(ctx)
	if err != nil {
		return 0, fmt.Errorf("listing the artifact store: %w", err)
	}
	n := 0
	var errs []error
	for _, e := range entries {
		mine, known := owned[e.NamespaceUID]
		if (known && !mine) || (!known && c.Shard.Count > 1 && c.Shard.Index != 0) || live[e.RunUID] {
			continue
		}
		if c.Archive != nil {
			kept, err := c.Archive.Has(ctx, e.RunUID)
			if err != nil {
				errs = append(errs, fmt.Errorf("asking the archive: %w", err))
				continue
			}
			if kept {
				continue
			}
		}
		prefix := artifacts.RunPrefix(types.UID(e.NamespaceUID), types.UID(e.RunUID))
		newest, err := c.Store.Newest(ctx, prefix)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if c.Clock.Since(newest) < grace {
			continue
		}
		if _, err := c.Store.Delete(ctx, prefix); err != nil {
			errs = append(errs, err)
			continue
		}
		collectedRuns.Inc()
		n++
	}
	return n, errors.Join(errs...)
}
