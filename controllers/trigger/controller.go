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

package trigger

import (
	"context"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/controllers/internal/shared"
	"github.com/ergon-dev/ergon/internal/cause"
	"github.com/ergon-dev/ergon/internal/health"
	"github.com/ergon-dev/ergon/internal/naming"
	"github.com/ergon-dev/ergon/internal/triggers"
)

// TriggerReconciler starts the Runs of schedule and runCompleted Triggers, keeps their
// history within its limits, and reports every Trigger's state. Webhook deliveries start
// their Runs in the hooks server; this reconciler only checks their key Secret.
type TriggerReconciler struct {
	client.Client
	// APIReader reads the webhook key Secrets, which the manager does not cache.
	APIReader client.Reader
	Recorder  recorder.EventRecorder
	// Clock tells the time schedules are due at.
	Clock clock.Clock
	// Options are the controller's options, such as its work queue: a test whose Clock is
	// fake gives a queue whose delayed adds follow that clock.
	Options controller.Options
	// Location is the time zone of schedules without one; time.Local when nil.
	Location *time.Location

	// Archive says the archive controller archives the Runs that end: the history limits
	// delete only Runs whose record is written.
	Archive bool

	// Limits are the manager's caps on the Runs a Trigger starts (limits.go); zero
	// fields take their defaults.
	Limits cause.Limits
	// Ledger remembers the Runs created a moment ago, which the cache may not hold yet;
	// shared with the Run controller and the hooks server, or its own when nil.
	Ledger     *cause.Ledger
	ledgerOnce sync.Once

	mappings triggers.MappingCache
	// noticed remembers the events already recorded about one scheduled time of a Trigger, so
	// a Trigger whose Forbid-skipped time stays owed is not told so on every reconcile.
	noticed sync.Map // namespace/name/reason -> unix time of the scheduled time
	// secretChecked remembers when a webhook Trigger's key Secret was last found.
	secretChecked sync.Map // namespace/name -> time.Time
}

// +kubebuilder:rbac:groups=ergon.dev,resources=triggers,verbs=get;list;watch
// +kubebuilder:rbac:groups=ergon.dev,resources=triggers/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=ergon.dev,resources=runs,verbs=get;list;watch;create;update;patch;delete
// Reading the webhook key Secrets (get, never list or watch) is granted by hand, cluster-wide
// or per namespace: config/rbac/trigger_key_reader_role.yaml and the chart's hooks.keySecrets.
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile brings one Trigger up to date.
func (r *TriggerReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	trigger := &ergonv1alpha1.Trigger{}
	if err := r.Get(ctx, req.NamespacedName, trigger); err != nil {
		if apierrors.IsNotFound(err) {
			r.mappings.Forget(req.Namespace, req.Name)
			r.secretChecked.Delete(req.String())
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !trigger.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	facts, err := r.gather(ctx, trigger)
	if err != nil {
		return ctrl.Result{}, err
	}
	status := trigger.Status.DeepCopy()
	status.ObservedGeneration = trigger.Generation
	setRunHistory(status, facts)
	if err := r.deleteHistory(ctx, trigger, facts); err != nil {
		return ctrl.Result{}, err
	}
	spent := r.planBudget(trigger, facts, status)
	facts.overBudget = spent.Exceeded
	var rateFrees time.Duration
	facts.look.Rate, rateFrees = r.rate(trigger, facts)

	var result ctrl.Result
	switch {
	case trigger.Spec.Schedule != nil:
		result, err = r.reconcileSchedule(ctx, trigger, facts, status)
	case trigger.Spec.Webhook != nil:
		result, err = r.reconcileWebhook(ctx, trigger, status)
	case trigger.Spec.RunCompleted != nil:
		err = r.reconcileChain(ctx, trigger, status, facts)
	}
	if facts.look.Started {
		// A Run started in this look may have filled the minute.
		facts.look.Rate, rateFrees = r.rate(trigger, facts)
	}
	r.setLimitCondition(trigger, status, facts.look)
	result.RequeueAfter = sooner(sooner(result.RequeueAfter, spent.RequeueAfter), rateFrees)
	// Runs started before an error are recorded all the same.
	if patchErr := r.patchStatus(ctx, trigger, status); patchErr != nil && err == nil {
		err = patchErr
	}
	return result, err
}

// patchStatus writes the status once, when it changed, with the kstatus conditions. It is a merge patch of the fields that
// changed, so it never undoes the hooks server's lastDelivery.
func (r *TriggerReconciler) patchStatus(ctx context.Context, trigger *ergonv1alpha1.Trigger, status *ergonv1alpha1.TriggerStatus) error {
	health.Set(&status.Conditions, trigger.Generation, metav1.NewTime(r.Clock.Now()), health.Trigger(status))
	if equality.Semantic.DeepEqual(&trigger.Status, status) {
		return nil
	}
	base := trigger.DeepCopy()
	trigger.Status = *status
	return client.IgnoreNotFound(r.Status().Patch(ctx, trigger, client.MergeFrom(base)))
}

// createRun creates a Run a Trigger starts; one that exists already was started by an
// earlier reconcile, another replica or the manager before a restart, and is success. The
// Run is remembered in the ledger, under the Trigger and under its cause's root, until the
// cache surely holds it.
func (r *TriggerReconciler) createRun(ctx context.Context, trigger *ergonv1alpha1.Trigger, facts *triggerFacts,
	run *ergonv1alpha1.Run, why string) error {
	log.FromContext(ctx).Info("Creating Run", "run", run.Name, "why", why)
	predictable := run.Name
	// Under its name or, when a Run the Trigger does not own holds it, an alternate
	// (controllers/run/squatters.go); run.Name is then the name used.
	held, err := shared.CreateOwned(ctx, r.Client, r.APIReader, trigger.UID, shared.KindRun, run, naming.MaxLabelLength)
	if len(held) > 0 && err == nil {
		r.Recorder.Eventf(trigger, nil, corev1.EventTypeWarning, ergonv1alpha1.ReasonNameSquatted, "CreateUnderAlternateName",
			"%s holds the name of the Run %s; Ergon leaves it alone and uses Run %s", strings.Join(held, "; "), why, run.Name)
	}
	if err != nil {
		return err
	}
	now := r.Clock.Now()
	r.ledger().Record(cause.TriggerKey(trigger), run.Name, now)
	if root := run.Annotations[ergonv1alpha1.AnnotationCauseRoot]; root != "" {
		r.ledger().Record(cause.RootLedgerKey(root), run.Name, now)
	}
	facts.look.Started = true
	if run.UID == "" {
		log.FromContext(ctx).V(1).Info("Run exists already", "run", run.Name, "standsFor", predictable)
		return nil
	}
	r.Recorder.Eventf(trigger, run, corev1.EventTypeNormal, EventRunStarted, "Start",
		"Started Run %s %s", run.Name, why)
	return nil
}

// Event reasons of the Trigger controller.
const (
	EventRunStarted    = triggers.EventRunStarted
	EventRunSkipped    = triggers.EventRunSkipped
	EventRunReplaced   = triggers.EventRunReplaced
	EventTooManyMissed = triggers.EventTooManyMissed
	EventMappingFailed = "MappingFailed"
	EventRunDeleted    = "RunDeleted"
)

// SetupWithManager registers the controller: Triggers, the Runs they own, and every finished
// Run of a Scene a runCompleted Trigger waits for. It relies on the Run controller's index of
// Runs by Scene.
func (r *TriggerReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Location == nil {
		r.Location = time.Local
	}
	if err := shared.SetupIndexes(mgr); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&ergonv1alpha1.Trigger{}).
		Owns(&ergonv1alpha1.Run{}).
		Watches(&ergonv1alpha1.Run{}, handler.EnqueueRequestsFromMapFunc(r.triggersWaitingFor)).
		WithOptions(r.Options).
		Named("trigger").
		Complete(shared.QuietWhileNamespaceEnds(r))
}

// triggersWaitingFor maps a finished Run to the runCompleted Triggers of its Scene.
func (r *TriggerReconciler) triggersWaitingFor(ctx context.Context, obj client.Object) []reconcile.Request {
	run := obj.(*ergonv1alpha1.Run)
	if !run.Status.Phase.Finished() {
		return nil
	}
	list := &ergonv1alpha1.TriggerList{}
	if err := r.List(ctx, list, client.InNamespace(run.Namespace),
		client.MatchingFields{shared.RunCompletedSceneField: run.Spec.SceneRef.Name}); err != nil {
		log.FromContext(ctx).Error(err, "Listing the Triggers waiting for a Scene", "scene", run.Spec.SceneRef.Name)
		return nil
	}
	requests := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		requests = append(requests, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return requests
}

// triggerLabelSelector selects the Runs a Trigger started.
func triggerLabelSelector(trigger *ergonv1alpha1.Trigger) client.MatchingLabels {
	return client.MatchingLabels{ergonv1alpha1.LabelTrigger: naming.LabelValue(trigger.Name)}
}
