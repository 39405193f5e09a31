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
	"io"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/controllers/internal/shared"
	"github.com/ergon-dev/ergon/internal/archive"
	"github.com/ergon-dev/ergon/internal/naming"
	"github.com/ergon-dev/ergon/internal/outputs"
	"github.com/ergon-dev/ergon/internal/outputs/wire"
)

// The archive controller writes every Run that ended into the archive (internal/archive)
// before Kubernetes may delete it (docs/archive.md). A Run carries the finalizer
// ergon.dev/archive from the Run controller's first pass (holdForArchive) until it is archived; then its Archived condition
// is True, and only then do its time to live and its Trigger's history limits delete it,
// and does the Run controller clean up its pods (whose log ends the record keeps). A Run
// deleted before it is archived waits for the archive at most ArchiveConfig.GiveUpAfter,
// then goes with a Warning Event and ergon_archive_abandoned_total counting it, so that a
// store that is down never holds a namespace in Terminating.

const (
	// DefaultArchiveGiveUpAfter is how long a deleted Run waits to be archived.
	DefaultArchiveGiveUpAfter = shared.DefaultArchiveGiveUpAfter
	// archiveRetry is the longest wait between two tries of a store that fails.
	archiveRetry = 30 * time.Second
	// archiveLogTail is how much of each step pod's log a record keeps.
	archiveLogLines, archiveLogBytes = 100, 16 << 10
	// archiveLogsTotal bounds the log ends of one record.
	archiveLogsTotal = 512 << 10

	reasonArchived       = "Archived"
	reasonArchiveFailed  = "ArchiveFailed"
	reasonArchiveAbandon = "ArchiveAbandoned"
	actionArchive        = "Archive"
)

var (
	archivedRuns = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ergon_archive_runs_total",
		Help: "Runs written to the archive, by outcome (archived, failed: a write that failed and is tried again).",
	}, []string{"outcome"})
	archiveAbandoned = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "ergon_archive_abandoned_total",
		Help: "Runs deleted before they could be archived, let go after the archive's wait.",
	})
	archiveLag = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "ergon_archive_lag_seconds",
		Help:    "Time from a Run's end to its record in the archive.",
		Buckets: prometheus.ExponentialBuckets(0.05, 2, 14),
	})
)

func init() {
	metrics.Registry.MustRegister(archivedRuns, archiveAbandoned, archiveLag)
}

// ArchiveConfig is the archive controller's configuration.
type ArchiveConfig struct {
	// GiveUpAfter is how long a deleted Run waits to be archived; DefaultArchiveGiveUpAfter
	// when zero.
	GiveUpAfter time.Duration
	// Workers is how many Runs are archived at once; 2 when zero.
	Workers int
}

// ArchiveReconciler archives the Runs that ended.
type ArchiveReconciler struct {
	client.Client
	APIReader client.Reader
	Recorder  events.EventRecorder
	Clock     clock.PassiveClock
	Logs      shared.PodLogs
	Store     archive.Store
	Config    ArchiveConfig
	// values reads a Run's snapshot and outputs as the Run controller does.
	values shared.RunValues
}

// +kubebuilder:rbac:groups=ergon.dev,resources=runs,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=ergon.dev,resources=runs/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=ergon.dev,resources=runs/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get

// Reconcile archives one Run when it has ended or is being deleted.
func (r *ArchiveReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	run := &ergonv1alpha1.Run{}
	if err := r.Get(ctx, req.NamespacedName, run); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	deleting := !run.DeletionTimestamp.IsZero()
	has := controllerutil.ContainsFinalizer(run, ergonv1alpha1.FinalizerArchive)
	switch {
	case shared.Archived(run):
		return ctrl.Result{}, r.release(ctx, run)
	case deleting && !has:
		return ctrl.Result{}, nil // deleted before it was ever archived here: nothing holds it
	case !deleting && !run.Status.Phase.Finished():
		return ctrl.Result{}, nil // the Run controller holds it with the finalizer (holdForArchive)
	}
	rec, err := r.record(ctx, run)
	if err == nil {
		err = r.Store.Put(ctx, rec)
	}
	if err != nil {
		archivedRuns.WithLabelValues("failed").Inc()
		return r.failed(ctx, run, err)
	}
	archivedRuns.WithLabelValues("archived").Inc()
	if run.Status.FinishedAt != nil {
		archiveLag.Observe(r.Clock.Since(run.Status.FinishedAt.Time).Seconds())
	}
	log.FromContext(ctx).V(1).Info("Archived the Run")
	if !deleting {
		base := run.DeepCopy()
		meta.SetStatusCondition(&run.Status.Conditions, metav1.Condition{Type: ergonv1alpha1.ConditionArchived,
			Status: metav1.ConditionTrue, Reason: reasonArchived, ObservedGeneration: run.Generation,
			LastTransitionTime: metav1.NewTime(r.Clock.Now()),
			Message:            fmt.Sprintf("written to the %s archive", r.Store.Kind())})
		// Locked: a merge patch replaces the whole list of conditions.
		err := r.Status().Patch(ctx, run, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
		if apierrors.IsConflict(err) {
			return ctrl.Result{RequeueAfter: time.Second}, nil // written again, harmlessly, from the newer Run
		}
		if err != nil {
			return ctrl.Result{}, client.IgnoreNotFound(err)
		}
	}
	return ctrl.Result{}, r.release(ctx, run)
}

// release removes the archive's finalizer, if the Run has it.
func (r *ArchiveReconciler) release(ctx context.Context, run *ergonv1alpha1.Run) error {
	if !controllerutil.ContainsFinalizer(run, ergonv1alpha1.FinalizerArchive) {
		return nil
	}
	patch := client.MergeFromWithOptions(run.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.RemoveFinalizer(run, ergonv1alpha1.FinalizerArchive)
	return client.IgnoreNotFound(r.Patch(ctx, run, patch))
}

// failed handles a record that could not be written: tried again, and a deleted Run is let
// go once it has waited GiveUpAfter.
func (r *ArchiveReconciler) failed(ctx context.Context, run *ergonv1alpha1.Run, err error) (ctrl.Result, error) {
	wait := r.Config.GiveUpAfter
	if wait <= 0 {
		wait = DefaultArchiveGiveUpAfter
	}
	if !run.DeletionTimestamp.IsZero() {
		left := run.DeletionTimestamp.Add(wait).Sub(r.Clock.Now())
		if left <= 0 {
			archiveAbandoned.Inc()
			r.Recorder.Eventf(run, nil, corev1.EventTypeWarning, reasonArchiveAbandon, actionArchive,
				"Run %s was deleted and could not be archived within %s; it is gone without a record: %s",
				run.Name, wait, err.Error())
			return ctrl.Result{}, r.release(ctx, run)
		}
		log.FromContext(ctx).Info("Archiving a deleted Run failed; trying again", "error", err.Error(), "lettingGoIn", left)
		return ctrl.Result{RequeueAfter: min(archiveRetry, left)}, nil
	}
	log.FromContext(ctx).Info("Archiving the Run failed; trying again", "error", err.Error())
	r.Recorder.Eventf(run, nil, corev1.EventTypeWarning, reasonArchiveFailed, actionArchive,
		"Run %s could not be archived yet; trying again: %s", run.Name, err.Error())
	return ctrl.Result{RequeueAfter: archiveRetry}, nil
}

// record gathers what the archive keeps of a Run. What cannot be read is named in Missing;
// only a failure to read the namespace fails the record.
func (r *ArchiveReconciler) record(ctx context.Context, run *ergonv1alpha1.Run) (*archive.Record, error) {
	ns := &corev1.Namespace{}
	if err := r.APIReader.Get(ctx, client.ObjectKey{Name: run.Namespace}, ns); err != nil {
		return nil, fmt.Errorf("reading namespace %s: %w", run.Namespace, err)
	}
	rec := &archive.Record{NamespaceUID: string(ns.UID), Run: *run.DeepCopy(), Values: map[string]string{}}
	rec.Run.ManagedFields = nil
	missing := func(format string, args ...any) { rec.Missing = append(rec.Missing, fmt.Sprintf(format, args...)) }
	switch {
	case run.Status.SceneSnapshot != nil:
		rec.Snapshot = run.Status.SceneSnapshot
		rec.Run.Status.SceneSnapshot = nil // kept once
	case run.Status.SceneSnapshotRef != nil:
		spec, err := r.values.ReadSnapshot(ctx, run)
		if err != nil {
			missing("the snapshot: %v", err)
		}
		rec.Snapshot = spec
	}
	value := func(key string, v *ergonv1alpha1.OutputValue) {
		if v == nil {
			return
		}
		s, err := r.values.OutputValue(ctx, run, v)
		if err != nil {
			missing("%s: %v", key, err)
			return
		}
		rec.Values[key] = s
	}
	for i := range run.Status.Steps {
		s := &run.Status.Steps[i]
		value(archive.ValueKey(s.Name, ""), s.Output)
		value(archive.ValueKey(s.Name, outputs.KeyTranscript), s.Transcript)
	}
	gates := &ergonv1alpha1.GateList{}
	if err := r.List(ctx, gates, client.InNamespace(run.Namespace),
		client.MatchingLabels{ergonv1alpha1.LabelRun: naming.LabelValue(run.Name)}); err != nil {
		missing("the Gates: %v", err)
	}
	for _, g := range gates.Items {
		if shared.ControlledBy(&g, run.UID) {
			g.ManagedFields = nil
			rec.Gates = append(rec.Gates, g)
		}
	}
	r.logEnds(ctx, run, rec, missing)
	return rec, nil
}

// logEnds keeps the end of the log of each of the Run's step pods that still exist.
func (r *ArchiveReconciler) logEnds(ctx context.Context, run *ergonv1alpha1.Run, rec *archive.Record, missing func(string, ...any)) {
	pods := &corev1.PodList{}
	if err := r.List(ctx, pods, client.InNamespace(run.Namespace),
		client.MatchingLabels{ergonv1alpha1.LabelRun: naming.LabelValue(run.Name)}); err != nil {
		missing("the step logs: %v", err)
		return
	}
	slices.SortFunc(pods.Items, func(a, b corev1.Pod) int { return a.CreationTimestamp.Compare(b.CreationTimestamp.Time) })
	total := 0
	for i := range pods.Items {
		pod := &pods.Items[i]
		if !shared.ControlledBy(pod, run.UID) || pod.Status.Phase == corev1.PodPending {
			continue
		}
		if total >= archiveLogsTotal {
			missing("the logs of pod %s and after: the record keeps %d bytes of logs", pod.Name, archiveLogsTotal)
			return
		}
		rc, err := r.Logs.Read(ctx, run.Namespace, pod.Name, shared.StepContainer, wire.Tail{Lines: archiveLogLines, Bytes: archiveLogBytes})
		if err != nil {
			missing("the log of pod %s: %v", pod.Name, err)
			continue
		}
		b, err := io.ReadAll(io.LimitReader(rc, archiveLogBytes))
		_ = rc.Close()
		if err != nil {
			missing("the log of pod %s: %v", pod.Name, err)
			continue
		}
		if rec.Logs == nil {
			rec.Logs = map[string]string{}
		}
		rec.Logs[pod.Name] = string(b)
		total += len(b)
	}
}

// SetupWithManager watches Runs.
func (r *ArchiveReconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.values = shared.RunValues{Cached: r.Client, Live: r.APIReader}
	workers := r.Config.Workers
	if workers <= 0 {
		workers = 2
	}
	return ctrl.NewControllerManagedBy(mgr).Named("archive").
		For(&ergonv1alpha1.Run{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		Complete(r)
}
