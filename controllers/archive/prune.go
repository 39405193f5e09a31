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
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/ergon-dev/ergon/internal/archive"
	"github.com/ergon-dev/ergon/internal/shard"
)

// The annotations of a Namespace that set its archive's retention. Only who may update
// Namespaces (the cluster admin, not a namespace's editors or admins) sets them: the archive
// holds the history of approvals, which a tenant must not be able to shorten.
const (
	// AnnotationArchiveRetention keeps a namespace's archived Runs this long after they
	// finished: a Go duration (2160h) or days (90d); "forever" keeps them.
	AnnotationArchiveRetention = "archive.ergon.dev/retention"
	// AnnotationArchiveKeep keeps at most this many of a namespace's archived Runs, the newest.
	AnnotationArchiveKeep = "archive.ergon.dev/keep"
)

// Defaults of the archive's retention (the manager's --archive-retention, --archive-keep).
const (
	DefaultArchiveRetention     = 90 * 24 * time.Hour
	DefaultArchivePruneInterval = time.Hour
)

var (
	archiveRecords = prometheus.NewGauge(prometheus.GaugeOpts{Name: "ergon_archive_records",
		Help: "Archived Runs in the store, as of the last pruning pass."})
	archiveBytes = prometheus.NewGauge(prometheus.GaugeOpts{Name: "ergon_archive_bytes",
		Help: "Bytes of the archived Runs' records (compressed), as of the last pruning pass."})
	archivePruned = prometheus.NewCounter(prometheus.CounterOpts{Name: "ergon_archive_pruned_total",
		Help: "Archived Runs deleted by retention."})
)

func init() {
	metrics.Registry.MustRegister(archiveRecords, archiveBytes, archivePruned)
}

// ArchivePruner deletes the archived Runs past their namespace's retention, in the background,
// and reports the archive's size.
type ArchivePruner struct {
	Store  archive.Store
	Reader client.Reader
	Clock  clock.PassiveClock
	// Interval between passes; DefaultArchivePruneInterval when zero.
	Interval time.Duration
	// Retention and Keep apply to namespaces without the annotations, and to the records of
	// namespaces that are gone. Retention 0 keeps forever; Keep 0 keeps any number.
	Retention time.Duration
	Keep      int
	// Shard is the shard this manager prunes; the first shard also prunes the records of
	// namespaces that are gone.
	Shard shard.Shard
}

// NeedLeaderElection makes one manager of a shard prune.
func (p *ArchivePruner) NeedLeaderElection() bool { return true }

// Start prunes every Interval until ctx ends.
func (p *ArchivePruner) Start(ctx context.Context) error {
	interval := p.Interval
	if interval == 0 {
		interval = DefaultArchivePruneInterval
	}
	log := ctrl.LoggerFrom(ctx).WithName("archive-pruner")
	for {
		if n, err := p.PruneOnce(ctx); err != nil {
			log.Error(err, "Pruning the archive", "deleted", n)
		} else if n > 0 {
			log.Info("Pruned the archive", "deleted", n)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(interval):
		}
	}
}

// retention is what one namespace keeps: records newer than olderThan (zero: any age), at
// most keep (-1: any number).
type retention struct {
	olderThan time.Time
	keep      int
}

// PruneOnce makes one pass and returns how many records it deleted.
func (p *ArchivePruner) PruneOnce(ctx context.Context) (int, error) {
	namespaces := &corev1.NamespaceList{}
	if err := p.Reader.List(ctx, namespaces); err != nil {
		return 0, err
	}
	now := p.Clock.Now()
	defaults := retention{keep: -1}
	if p.Retention > 0 {
		defaults.olderThan = now.Add(-p.Retention)
	}
	if p.Keep > 0 {
		defaults.keep = p.Keep
	}
	plans := map[string]retention{}
	var errs []string
	for _, ns := range namespaces.Items {
		if p.Shard.Count > 1 && !p.Shard.Owns(ns.Name) {
			plans[string(ns.UID)] = retention{keep: -2} // another shard's
			continue
		}
		r, err := retentionOf(&ns, defaults, now)
		if err != nil {
			errs = append(errs, err.Error())
		}
		plans[string(ns.UID)] = r
	}
	uids, err := p.Store.Namespaces(ctx)
	if err != nil {
		return 0, err
	}
	deleted := 0
	for _, uid := range uids {
		r, live := plans[uid]
		switch {
		case r.keep == -2:
			continue
		case !live && p.Shard.Count > 1 && p.Shard.Index != 0:
			continue
		case !live:
			r = defaults
		}
		if r.olderThan.IsZero() && r.keep < 0 {
			continue
		}
		n, err := p.Store.Prune(ctx, uid, r.olderThan, r.keep)
		deleted += n
		archivePruned.Add(float64(n))
		if err != nil {
			return deleted, err
		}
	}
	if st, err := p.Store.Stats(ctx); err == nil {
		archiveRecords.Set(float64(st.Runs))
		archiveBytes.Set(float64(st.Bytes))
	}
	if len(errs) > 0 {
		return deleted, fmt.Errorf("namespaces with an invalid retention keep the default: %s", strings.Join(errs, "; "))
	}
	return deleted, nil
}

// retentionOf reads a namespace's retention from its annotations; an annotation that does not
// parse keeps the default, and says so.
func retentionOf(ns *corev1.Namespace, defaults retention, now time.Time) (retention, error) {
	r := defaults
	var errs []string
	if v, ok := ns.Annotations[AnnotationArchiveRetention]; ok {
		d, forever, err := ParseRetention(v)
		switch {
		case err != nil:
			errs = append(errs, fmt.Sprintf("%s: %s: %v", ns.Name, AnnotationArchiveRetention, err))
		case forever:
			r.olderThan = time.Time{}
		default:
			r.olderThan = now.Add(-d)
		}
	}
	if v, ok := ns.Annotations[AnnotationArchiveKeep]; ok {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 1 {
			errs = append(errs, fmt.Sprintf("%s: %s: want a count of 1 or more, not %q", ns.Name, AnnotationArchiveKeep, v))
		} else {
			r.keep = n
		}
	}
	if len(errs) > 0 {
		return r, fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return r, nil
}

// ParseRetention reads a retention: a Go duration (2160h), days (90d), or "forever".
func ParseRetention(v string) (d time.Duration, forever bool, err error) {
	v = strings.TrimSpace(v)
	if v == "forever" {
		return 0, true, nil
	}
	if days, ok := strings.CutSuffix(v, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n < 1 {
			return 0, false, fmt.Errorf("want a duration (2160h), days (90d) or forever, not %q", v)
		}
		return time.Duration(n) * 24 * time.Hour, false, nil
	}
	d, err = time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, false, fmt.Errorf("want a duration (2160h), days (90d) or forever, not %q", v)
	}
	return d, false, nil
}
