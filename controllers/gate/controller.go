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

package gate

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/gatepolicy"
)

// GateReconciler keeps a Gate's status: Pending until a decision, a quorum of approvals or
// the timeout decides it, then Approved, Rejected or TimedOut for good; or Closed for good
// when its Run ends first (close.go). The Run waiting on the Gate reads that status and
// goes on.
type GateReconciler struct {
	client.Client
	Recorder recorder.EventRecorder
	// Options are the controller's options, such as how many Gates are reconciled at once.
	Options controller.Options
	Clock   clock.PassiveClock
}

// +kubebuilder:rbac:groups=ergon.dev,resources=gates,verbs=get;list;watch
// +kubebuilder:rbac:groups=ergon.dev,resources=gates/status,verbs=get;update;patch

// Reconcile decides one Gate.
func (r *GateReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	gate := &ergonv1alpha1.Gate{}
	if err := r.Get(ctx, req.NamespacedName, gate); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	now := r.Clock.Now()
	var run *ergonv1alpha1.Run
	if gate.Status.Phase.Open() {
		var err error
		if run, err = r.runOf(ctx, gate); err != nil {
			return ctrl.Result{}, err
		}
	}
	status, outcome := decideGate(gate, gatepolicy.PersonOf(run), now)
	// A decision that comes as the Run ends decides nothing: the Run reads only a decided
	// status, which it never saw.
	end := runEnd(run)
	if end != "" {
		status, outcome = closeGate(gate, status, end, now), nil
	}
	if !equality.Semantic.DeepEqual(&gate.Status, &status) {
		base := gate.DeepCopy()
		gate.Status = status
		if err := r.Status().Patch(ctx, gate, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
			if apierrors.IsConflict(err) {
				return ctrl.Result{}, nil // a newer Gate is on its way to the cache
			}
			return ctrl.Result{}, client.IgnoreNotFound(err)
		}
		if base.Status.Phase == "" && status.Phase == ergonv1alpha1.GatePending {
			r.announceOpened(gate)
		}
		if outcome != nil {
			r.announce(gate, outcome)
		}
		if end != "" {
			r.announceClosed(gate, end)
		}
	}
	if status.Phase == ergonv1alpha1.GatePending && status.ExpiresAt != nil {
		return ctrl.Result{RequeueAfter: status.ExpiresAt.Sub(now)}, nil
	}
	return ctrl.Result{}, nil
}

// announce records the decision as an Event on the Gate and on its Run.
func (r *GateReconciler) announce(gate *ergonv1alpha1.Gate, o *gatepolicy.Outcome) {
	eventType := corev1.EventTypeNormal
	if o.Phase != ergonv1alpha1.GateApproved {
		eventType = corev1.EventTypeWarning
	}
	note := "Gate %s %s by %s: option %q"
	args := []any{gate.Name, o.Phase, o.DecidedBy, o.Option}
	if o.Comment != "" {
		note += ", comment %q"
		args = append(args, o.Comment)
	}
	r.Recorder.Eventf(gate, nil, eventType, "Gate"+string(o.Phase), "Decide", note, args...)
	run := &ergonv1alpha1.Run{}
	run.Name, run.Namespace = gate.Spec.RunRef.Name, gate.Namespace
	r.Recorder.Eventf(run, gate, eventType, "Gate"+string(o.Phase), "Decide", note, args...)
}

// announceOpened records, on the Gate and on its Run, that a Gate waits: for an answer (an
// input Gate) or a decision, with the first line of what it asks.
func (r *GateReconciler) announceOpened(gate *ergonv1alpha1.Gate) {
	waits := "a decision"
	if gate.Spec.Input != nil {
		waits = "an answer"
	}
	question, _, _ := strings.Cut(gate.Spec.Message, "\n")
	if len(question) > maxEventQuestion {
		question = strings.ToValidUTF8(question[:maxEventQuestion], "") + " […]"
	}
	note := "Gate %s of step %s waits for %s: %q"
	args := []any{gate.Name, gate.Spec.Step, waits, question}
	r.Recorder.Eventf(gate, nil, corev1.EventTypeNormal, "GateOpened", "Open", note, args...)
	run := &ergonv1alpha1.Run{}
	run.Name, run.Namespace = gate.Spec.RunRef.Name, gate.Namespace
	r.Recorder.Eventf(run, gate, corev1.EventTypeNormal, "GateOpened", "Open", note, args...)
}

// maxEventQuestion bounds the question an Event quotes.
const maxEventQuestion = 200

// SetupWithManager registers the controller.
func (r *GateReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).For(&ergonv1alpha1.Gate{}).Named("gate").
		Watches(&ergonv1alpha1.Run{}, handler.EnqueueRequestsFromMapFunc(r.gatesOfRun), builder.WithPredicates(runEnded)).
		WithOptions(r.Options).
		Complete(r)
}
