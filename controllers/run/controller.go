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

package run

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"
	"sigs.k8s.io/controller-runtime/pkg/source"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/controllers/internal/shared"
	"github.com/ergon-dev/ergon/internal/archive"
	"github.com/ergon-dev/ergon/internal/authz"
	"github.com/ergon-dev/ergon/internal/cause"
	"github.com/ergon-dev/ergon/internal/compile"
	"github.com/ergon-dev/ergon/internal/health"
	"github.com/ergon-dev/ergon/internal/planner"
	"github.com/ergon-dev/ergon/internal/shard"
	"github.com/ergon-dev/ergon/internal/slots"
	"github.com/ergon-dev/ergon/internal/tracing"
	"github.com/ergon-dev/ergon/internal/tracing/otlp"
)

// RunConfig holds the manager-wide settings of the Run engine.
type RunConfig struct {
	// EntrypointImage is the image whose entrypoint binary step pods run: Ergon's own.
	EntrypointImage string
	// StepBinaries is how step pods get it: copied in by an init container (the zero value)
	// or mounted as an image volume.
	StepBinaries StepBinaries
	// Slots bound the step pods and child Runs running at once: in total for the shard, per
	// namespace and per Run (internal/slots); zero limits are no limits.
	Slots slots.Limits
	// Shard is the shard of namespaces this manager reconciles; the zero value is all.
	Shard shard.Shard
	// Limits bound the units a step makes and the outputs a Run keeps in ConfigMaps
	// (docs/limits.md); a zero field is no limit.
	Limits planner.Limits
	// StepDefaultResources are the requests and limits of a container step (or tool call) pod
	// whose step and Scene set none, in a namespace whose LimitRanges give containers no
	// defaults (podresources.go); empty sets none.
	StepDefaultResources corev1.ResourceRequirements
	// MaxDepth bounds the cause depth of the Runs a Run creates (how deep sub-scene and
	// Scene tool Runs nest); when 0, Causes.MaxDepth, and its default, apply.
	MaxDepth int
	// Causes caps the child Runs one Run creates and the Runs one root causes
	// (internal/cause); zero fields take their defaults.
	Causes cause.Limits
	// KeepFailedPods keeps the pods of failed attempts for debugging.
	KeepFailedPods bool
	// Archive says that the archive controller archives the Runs that end: a finished Run's
	// pods (whose log ends the record keeps) and its time to live wait for its record
	// (controllers/archive/controller.go), the pods at most ArchiveWait.
	Archive bool
	// ArchiveWait bounds how long a finished Run's pods wait for its record;
	// DefaultArchiveGiveUpAfter when zero.
	ArchiveWait time.Duration
	// Workers is how many Runs are reconciled at once.
	Workers int
	// PendingTimeout bounds how long an attempt's pod may take to start, for steps and Scenes
	// that set no pendingTimeout, and how long a Run waits for its Scene to exist; zero
	// means no bound.
	PendingTimeout time.Duration
	// ProgressInterval is how often a running agent step's log is read for its progress
	// and checkpoint (see checkpoint.go); zero means 10 s.
	ProgressInterval time.Duration
	// StatusInterval is the shortest time between two status writes of one Run when the
	// second only records what its pods did (planner.Plan.OnlyObserves): such a write waits
	// for the rest of the interval and carries whatever else was observed meanwhile. A pass
	// that acts writes at once. Zero writes every pass at once.
	StatusInterval time.Duration
	// EventInterval is the shortest time between two progress Events of one Run (steps
	// started and succeeded): progress that comes sooner is told, folded, with the next
	// (tellEvents). Zero tells each pass's progress at once.
	EventInterval time.Duration
	// Traces, when set, exports a trace of every Run: each status write emits the spans of
	// what it ended (internal/tracing builds them, internal/tracing/otlp sends them), and
	// step pods carry TRACEPARENT.
	Traces *otlp.Exporter
	// Artifacts is how step pods reach the manager's artifact endpoint (artifacts.go); nil
	// when the manager keeps no artifacts, and a step that makes or reads some fails.
	Artifacts *ArtifactsConfig
}

// RunReconciler executes Runs: it gathers what exists, asks the planner what to do, does
// it, and writes the Run's status once.
type RunReconciler struct {
	client.Client
	// APIReader reads around the cache, to tell a pod that is gone from one not seen yet.
	APIReader client.Reader
	Recorder  recorder.EventRecorder
	Clock     clock.PassiveClock
	Logs      shared.PodLogs
	Config    RunConfig
	// Authorizer authorizes every effect of a Run against the identities it acts for
	// (authority.go); one on the reconciler's client when nil.
	Authorizer *authz.Authorizer
	authzOnce  sync.Once
	// Ledger remembers the Runs created a moment ago, which the cache may not hold yet
	// (calls.go); shared with the Trigger controller and the hooks server, or its own
	// when nil.
	Ledger     *cause.Ledger
	ledgerOnce sync.Once
	// Notifier sends the notifications of Scenes that ask for them (notify.go); none are
	// sent when nil, and a Scene that asks gets a Warning Event saying so.
	Notifier Notifier
	// Archive is where a retry finds a Run that is no longer in the cluster (retry.go);
	// a retry of a Run that is gone fails when nil.
	Archive archive.Store

	// scenes caches each running Run's compiled snapshot, so templates and conditions are
	// compiled once per Run, not once per reconcile.
	scenes sync.Map // namespace/name -> compiledScene
	// written remembers, per Run, the resourceVersion its last status write replaced. A Run
	// read from the cache at that version is stale: acting on it would create again the
	// children the write recorded. Its update is on the way and reconciles the Run again.
	written sync.Map // namespace/name -> resourceVersion
	// lastWrite is when each running Run's status was last written (holdWrite).
	lastWrite sync.Map // namespace/name -> time.Time
	// progress is what was last read of each running agent pod's log (checkpoint.go).
	progress sync.Map // pod UID -> agentSeen
	// answerKey signs the answers handed to pods that wait on questions (elicit.go);
	// made once per manager process.
	answerKey     ed25519.PrivateKey
	answerKeyOnce sync.Once
	// heldProgress is each running Run's progress Events not told yet (tellEvents).
	heldProgress sync.Map // namespace/name -> *heldProgress
	// refused is what the API server refused to create for each running Run (refusals.go).
	refused refusals
	// checkpoints are the checkpoint digests of each running Run's steps that its stored
	// status may not record yet (checkpoint.go).
	checkpoints sync.Map // namespace/name -> *keptCheckpoints
	// held are the names each running Run's creates found held, until a status write records
	// what they resolved to (squatters.go).
	held sync.Map // namespace/name -> *sync.Map of heldName
	// slots shares the step pod slots between Runs and namespaces (budget.go); slotsBuilt
	// is set once it was told what the Runs' status records (rebuildSlots).
	slots      *slots.Allocator
	slotsMu    sync.Mutex
	slotsBuilt bool
}

type compiledScene struct {
	uid   types.UID
	scene *compile.Scene
}

// +kubebuilder:rbac:groups=ergon.dev,resources=runs,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=ergon.dev,resources=runs/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=ergon.dev,resources=scenes,verbs=get;list;watch
// +kubebuilder:rbac:groups=ergon.dev,resources=gates,verbs=get;list;watch;create
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=pods/log,verbs=get
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create

// Reconcile moves one Run forward.
func (r *RunReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	run := &ergonv1alpha1.Run{}
	if err := r.Get(ctx, req.NamespacedName, run); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req)
			r.written.Delete(req.String())
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if err := r.holdForArchive(ctx, run); apierrors.IsConflict(err) {
		return ctrl.Result{}, nil // the newer Run is on its way to the cache
	} else if err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !run.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	if r.Config.Traces != nil {
		// What the pass logs joins the Run's trace.
		ctx = log.IntoContext(ctx, log.FromContext(ctx).WithValues("trace_id", tracing.RunContext(run).TraceID().String()))
	}
	if run.Status.Phase.Finished() {
		r.forget(req)
		return r.reconcileFinished(ctx, run)
	}
	if run.Status.SceneSnapshot == nil && run.Status.SceneSnapshotRef == nil {
		return r.reconcileStart(ctx, run)
	}
	return r.reconcileRunning(ctx, run.DeepCopy(), run)
}

// forget drops what the reconciler remembers of a Run that runs, once it ended or is gone. What
// it remembers of the last status write stays while the Run exists, for the pass that finds
// the cache behind it.
func (r *RunReconciler) forget(req ctrl.Request) {
	key := req.String()
	r.forgetSlots(req.Namespace, req.Name)
	r.scenes.Delete(key)
	r.lastWrite.Delete(key)
	r.heldProgress.Delete(key)
	r.refused.forget(key)
	r.checkpoints.Delete(key)
	r.held.Delete(key)
}

// holdForArchive gives a Run that has not ended the archive's finalizer, when the archive is
// on, so that it is not deleted before it is archived (controllers/archive/controller.go). The patch
// updates run, whose status the pass then writes against the new resourceVersion: this
// controller adds the finalizer, not the archive's, so that its first status write never
// conflicts with it.
//
// With the archive off (a manager that archived before), nobody would ever remove the
// finalizer: a Run still holding it lets go of it here, so that it can be deleted.
func (r *RunReconciler) holdForArchive(ctx context.Context, run *ergonv1alpha1.Run) error {
	has := controllerutil.ContainsFinalizer(run, ergonv1alpha1.FinalizerArchive)
	patch := client.MergeFromWithOptions(run.DeepCopy(), client.MergeFromWithOptimisticLock{})
	switch {
	case !r.Config.Archive && has:
		controllerutil.RemoveFinalizer(run, ergonv1alpha1.FinalizerArchive)
	case r.Config.Archive && !has && !run.Status.Phase.Finished() && run.DeletionTimestamp.IsZero():
		controllerutil.AddFinalizer(run, ergonv1alpha1.FinalizerArchive)
	default:
		return nil
	}
	return r.Patch(ctx, run, patch)
}

// reconcileRunning plans and acts on a Run that has its snapshot. base is the Run as stored,
// which the status patch is computed against.
func (r *RunReconciler) reconcileRunning(ctx context.Context, base, run *ergonv1alpha1.Run) (ctrl.Result, error) {
	key := client.ObjectKeyFromObject(run).String()
	if replaced, ok := r.written.Load(key); ok {
		if replaced == base.ResourceVersion {
			log.FromContext(ctx).V(1).Info("The cache has not seen the last status write yet; waiting for it")
			return ctrl.Result{}, nil
		}
		r.written.Delete(key)
	}
	scene, err := r.compiled(ctx, run)
	if apierrors.IsNotFound(err) {
		return ctrl.Result{}, err // the snapshot's ConfigMap, written just before; retry
	}
	if _, conflict := errors.AsType[*shared.ConflictError](err); conflict {
		return r.failUnstarted(ctx, run, ergonv1alpha1.ReasonNameConflict, err.Error())
	}
	if err != nil {
		return r.failUnstarted(ctx, run, ergonv1alpha1.ReasonInvalidScene, err.Error())
	}
	if err := r.rebuildSlots(ctx); err != nil {
		return ctrl.Result{}, err
	}
	var plan *planner.Plan
	// Whatever the pass ends with, the allocator learns what the Run holds and waits for.
	defer func() { r.settleSlots(run, scene, &base.Status, plan) }()
	facts, plan, err := r.plan(ctx, r.Client, run, scene)
	if err != nil {
		return ctrl.Result{}, err
	}
	if plan.Status.Phase.Finished() {
		// A Run ends once, so its end is decided on the API server's own objects: the cache
		// may not hold yet a pod created a moment ago, which would then be neither recorded
		// nor stopped.
		if facts, plan, err = r.plan(ctx, r.APIReader, run, scene); err != nil {
			return ctrl.Result{}, err
		}
	}
	if wait := r.holdWrite(key, &base.Status, plan); wait > 0 {
		// Nothing to do but record what the pods did, and the last write was a moment
		// ago: a burst of pod changes (a fan-out's steps starting and ending) becomes one
		// write per interval instead of one per change. The pass runs again when the
		// interval ends, or sooner when a change asks for action.
		log.FromContext(ctx).V(1).Info("Holding the status write back", "for", wait)
		if plan.RequeueAfter > 0 && plan.RequeueAfter < wait {
			wait = plan.RequeueAfter
		}
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	// What the agent pods say in their logs, read only when the status is about to be written.
	r.gatherAgents(ctx, run, scene, facts)
	planner.ObserveAgents(facts, plan)
	// What the plan's pods are built from and the memory they read, read before act so that
	// act only writes.
	parts, err := r.podParts(ctx, run, facts, plan)
	if err != nil {
		return ctrl.Result{}, err
	}
	if err := r.gatherMemory(ctx, run, facts, plan); err != nil {
		return ctrl.Result{}, err
	}
	planner.DecideMemory(facts, plan)
	if err := r.actor().act(ctx, run, scene, facts, plan, parts); err != nil {
		held, isHeld := errors.AsType[*namesHeldError](err)
		if isHeld {
			r.rememberHeld(key, held.names)
		}
		if _, contended := errors.AsType[*contendedError](err); contended || isHeld {
			log.FromContext(ctx).V(1).Info("Planning again", "reason", err.Error())
			return ctrl.Result{RequeueAfter: shared.ContendedRetry}, nil
		}
		return ctrl.Result{}, err
	}
	r.settleAgents(run, facts, plan)
	if err := r.patchStatus(ctx, base, run, &plan.Status); err != nil {
		if apierrors.IsConflict(err) {
			// The plan was made from a stale Run; the newer one is on its way to the
			// cache and will be reconciled when it arrives.
			log.FromContext(ctx).V(1).Info("Run changed since it was read; planning again when the cache has it")
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	// The status records what the held names resolved to.
	r.held.Delete(key)
	if wait := r.tellEvents(run, key, plan.Events, plan.Status.Phase.Finished()); wait > 0 &&
		(plan.RequeueAfter == 0 || wait < plan.RequeueAfter) {
		plan.RequeueAfter = wait
	}
	observeTransitions(run.Namespace, &base.Status, &plan.Status, scene)
	r.trace(run, &base.Status, &plan.Status, scene, facts)
	return ctrl.Result{RequeueAfter: plan.RequeueAfter}, nil
}

// plan gathers the facts of a Run through reader and decides what to do with them.
func (r *RunReconciler) plan(ctx context.Context, reader client.Reader, run *ergonv1alpha1.Run,
	scene *compile.Scene) (*planner.Facts, *planner.Plan, error) {
	facts, err := r.gather(ctx, reader, run, scene)
	if err != nil {
		return nil, nil, err
	}
	facts.PendingTimeout = r.Config.PendingTimeout
	facts.KeepFailedPods = r.Config.KeepFailedPods
	if r.slots != nil && !r.Config.Slots.Unlimited() {
		facts.Slots = r.slotGrant(run)
	}
	return facts, planner.Decide(facts), nil
}

// compiled returns the Run's compiled snapshot.
func (r *RunReconciler) compiled(ctx context.Context, run *ergonv1alpha1.Run) (*compile.Scene, error) {
	key := client.ObjectKeyFromObject(run).String()
	if c, ok := r.scenes.Load(key); ok && c.(compiledScene).uid == run.UID {
		return c.(compiledScene).scene, nil
	}
	spec := run.Status.SceneSnapshot
	if spec == nil {
		var err error
		if spec, err = r.values().ReadSnapshot(ctx, run); err != nil {
			return nil, err
		}
	}
	scene, errs := compile.Compile(spec)
	if len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	r.scenes.Store(key, compiledScene{uid: run.UID, scene: scene})
	return scene, nil
}

// patchStatus writes the status once, when it differs from base's, with an optimistic lock:
// a plan made from a stale cache is refused and made again. It adds the kstatus conditions
// every path that writes a Run's status needs.
func (r *RunReconciler) patchStatus(ctx context.Context, base, run *ergonv1alpha1.Run, status *ergonv1alpha1.RunStatus) error {
	health.Set(&status.Conditions, run.Generation, metav1.NewTime(r.Clock.Now()), health.Run(status))
	if equality.Semantic.DeepEqual(&base.Status, status) {
		return nil
	}
	run.Status = *status
	if err := r.Status().Patch(ctx, run, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil &&
		!r.appliedAnyway(ctx, run, status, err) {
		return err
	}
	key := client.ObjectKeyFromObject(run).String()
	r.written.Store(key, base.ResourceVersion)
	r.lastWrite.Store(key, r.Clock.Now())
	return nil
}

// appliedAnyway reports whether a status write that failed without the API server's answer
// took effect all the same: the connection broke, or the pass's context ended (a manager that
// stops) after the server had the patch. What the write ended (its spans, its Events) is then
// told once, here, and not lost: the next pass, in this manager or the next, finds it already
// written. It reads the Run back with a context of its own, for at most readBackTimeout; a
// refusal the server answered was not applied.
func (r *RunReconciler) appliedAnyway(ctx context.Context, run *ergonv1alpha1.Run, want *ergonv1alpha1.RunStatus, err error) bool {
	if answer := apierrors.APIStatus(nil); errors.As(err, &answer) {
		return false
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), readBackTimeout)
	defer cancel()
	stored := &ergonv1alpha1.Run{}
	if r.APIReader.Get(rctx, client.ObjectKeyFromObject(run), stored) != nil || stored.UID != run.UID {
		return false
	}
	// As stored: the server keeps times to the second, as JSON does.
	got, gerr := json.Marshal(&stored.Status)
	sent, serr := json.Marshal(want)
	if gerr != nil || serr != nil || !bytes.Equal(got, sent) {
		return false
	}
	log.FromContext(ctx).V(1).Info("The status write's answer was lost, but the Run has it", "error", err.Error())
	run.ResourceVersion = stored.ResourceVersion
	return true
}

// readBackTimeout bounds how long a pass reads back a status write whose answer was lost.
const readBackTimeout = 5 * time.Second

// holdWrite is how long a pass should wait before it writes the Run's status: the rest of
// Config.StatusInterval since the last write, when the plan only observes; else zero.
func (r *RunReconciler) holdWrite(key string, stored *ergonv1alpha1.RunStatus, plan *planner.Plan) time.Duration {
	if r.Config.StatusInterval <= 0 || !plan.OnlyObserves(stored) {
		return 0
	}
	last, ok := r.lastWrite.Load(key)
	if !ok {
		return 0
	}
	return max(r.Config.StatusInterval-r.Clock.Since(last.(time.Time)), 0)
}

// reconcileFinished deletes the pods a finished Run no longer needs, and the Run itself once
// its time to live has passed. With the archive on, both wait for the Run's record: the pods
// at most ArchiveWait, the Run for as long as it takes (the archive controller's update of
// its Archived condition brings the Run back here).
func (r *RunReconciler) reconcileFinished(ctx context.Context, run *ergonv1alpha1.Run) (ctrl.Result, error) {
	unarchived := r.Config.Archive && !shared.Archived(run)
	if unarchived && run.Status.FinishedAt != nil {
		wait := r.Config.ArchiveWait
		if wait <= 0 {
			wait = shared.DefaultArchiveGiveUpAfter
		}
		if left := run.Status.FinishedAt.Add(wait).Sub(r.Clock.Now()); left > 0 {
			return ctrl.Result{RequeueAfter: left}, nil
		}
	}
	if err := r.cleanupFinished(ctx, run); err != nil {
		return ctrl.Result{}, err
	}
	if unarchived || run.Spec.TTLSecondsAfterFinished == nil || run.Status.FinishedAt == nil {
		return ctrl.Result{}, nil
	}
	expires := run.Status.FinishedAt.Add(time.Duration(*run.Spec.TTLSecondsAfterFinished) * time.Second)
	if wait := expires.Sub(r.Clock.Now()); wait > 0 {
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	log.FromContext(ctx).Info("Deleting finished Run after its time to live")
	err := r.Delete(ctx, run, client.Preconditions{UID: &run.UID}, client.PropagationPolicy("Background"))
	return ctrl.Result{}, client.IgnoreNotFound(err)
}

// values reads what the Run keeps outside its status, verified (RunValues).
func (r *RunReconciler) values() shared.RunValues {
	return shared.RunValues{Cached: r.Client, Live: r.APIReader}
}

// SetupWithManager registers the controller: Runs, the pods, Gates and child Runs they own,
// and Scenes, so that a Run waiting for its Scene starts as soon as the Scene appears.
func (r *RunReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := shared.SetupIndexes(mgr); err != nil {
		return err
	}
	wake := r.newSlots()
	return ctrl.NewControllerManagedBy(mgr).
		For(&ergonv1alpha1.Run{}).
		WatchesRawSource(source.Channel(wake, &handler.EnqueueRequestForObject{})).
		Watches(&ergonv1alpha1.Scene{}, handler.EnqueueRequestsFromMapFunc(r.runsWaitingFor)).
		Owns(&corev1.Pod{}).
		Owns(&ergonv1alpha1.Run{}).
		Owns(&ergonv1alpha1.Gate{}).
		Watches(&coordinationv1.Lease{}, handler.EnqueueRequestsFromMapFunc(runsOfLease)).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(r.Config.Workers, 1)}).
		Named("run").
		Complete(shared.QuietWhileNamespaceEnds(r))
}

// runsWaitingFor maps a Scene to the Runs of it that have not started yet.
func (r *RunReconciler) runsWaitingFor(ctx context.Context, scene client.Object) []reconcile.Request {
	runs := &ergonv1alpha1.RunList{}
	if err := r.List(ctx, runs, client.InNamespace(scene.GetNamespace()),
		client.MatchingFields{shared.SceneRefField: scene.GetName()}); err != nil {
		log.FromContext(ctx).Error(err, "Listing the Runs of a Scene", "scene", scene.GetName())
		return nil
	}
	var requests []reconcile.Request
	for _, run := range runs.Items {
		if run.Status.SceneSnapshot == nil && run.Status.SceneSnapshotRef == nil && !run.Status.Phase.Finished() {
			requests = append(requests, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&run)})
		}
	}
	return requests
}
