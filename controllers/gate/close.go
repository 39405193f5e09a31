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
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/controllers/internal/shared"
	"github.com/ergon-dev/ergon/internal/health"
	"github.com/ergon-dev/ergon/internal/naming"
)

// Closing Gates: a Gate nobody decided before its Run ended (cancelled, timed out, failed) is
// moot, so the Gate controller closes it: phase Closed, the Decided condition False with
// reason RunFinished, an Event on the Gate and on the Run. A Closed Gate no longer counts as
// pending (kubectl ergon gates, the console), and admission refuses a decision or vote on it.
// The Gate stays, with the question asked and any vote cast, as the record of what was
// asked; it goes with its Run, which owns it.

// +kubebuilder:rbac:groups=ergon.dev,resources=runs,verbs=get;list;watch

// closeGate returns the status of an undecided Gate whose Run ended in phase end: Closed,
// and its Decided condition False with reason RunFinished. It is pure.
func closeGate(gate *ergonv1alpha1.Gate, status ergonv1alpha1.GateStatus, end ergonv1alpha1.RunPhase,
	now time.Time) ergonv1alpha1.GateStatus {
	status.Phase = ergonv1alpha1.GateClosed
	meta.SetStatusCondition(&status.Conditions, metav1.Condition{Type: ergonv1alpha1.ConditionDecided,
		Status: metav1.ConditionFalse, ObservedGeneration: gate.Generation, LastTransitionTime: metav1.NewTime(now),
		Reason: ergonv1alpha1.ReasonRunFinished, Message: closedMessage(gate, end)})
	health.Set(&status.Conditions, gate.Generation, metav1.NewTime(now), health.Gate(&status))
	return status
}

func closedMessage(gate *ergonv1alpha1.Gate, end ergonv1alpha1.RunPhase) string {
	return fmt.Sprintf("Run %s ended %s before anyone decided; the Gate is closed and can no longer be decided",
		gate.Spec.RunRef.Name, end)
}

// runOf is the Run that waits on the Gate, or nil. A Run that is gone, or is another Run of
// the name (the Gate's owner was deleted), is none: the garbage collector deletes the Gate with
// its owner.
func (r *GateReconciler) runOf(ctx context.Context, gate *ergonv1alpha1.Gate) (*ergonv1alpha1.Run, error) {
	run := &ergonv1alpha1.Run{}
	err := r.Get(ctx, client.ObjectKey{Namespace: gate.Namespace, Name: gate.Spec.RunRef.Name}, run)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if !shared.ControlledBy(gate, run.UID) {
		return nil, nil
	}
	return run, nil
}

// runEnd is the phase the Gate's Run ended in, or "" while it runs or when there is none.
func runEnd(run *ergonv1alpha1.Run) ergonv1alpha1.RunPhase {
	if run == nil || !run.Status.Phase.Finished() {
		return ""
	}
	return run.Status.Phase
}

// announceClosed records the closing as an Event on the Gate and on its Run.
func (r *GateReconciler) announceClosed(gate *ergonv1alpha1.Gate, end ergonv1alpha1.RunPhase) {
	note := "Gate %s closed undecided: Run %s ended %s"
	r.Recorder.Eventf(gate, nil, corev1.EventTypeNormal, "GateClosed", "Close", note, gate.Name, gate.Spec.RunRef.Name, end)
	run := &ergonv1alpha1.Run{}
	run.Name, run.Namespace = gate.Spec.RunRef.Name, gate.Namespace
	r.Recorder.Eventf(run, gate, corev1.EventTypeNormal, "GateClosed", "Close", note, gate.Name, gate.Spec.RunRef.Name, end)
}

// gatesOfRun maps a Run to its undecided Gates, for the Gate controller to close them when the
// Run ends.
func (r *GateReconciler) gatesOfRun(ctx context.Context, obj client.Object) []reconcile.Request {
	gates := &ergonv1alpha1.GateList{}
	if err := r.List(ctx, gates, client.InNamespace(obj.GetNamespace()),
		client.MatchingLabels{ergonv1alpha1.LabelRun: naming.LabelValue(obj.GetName())}); err != nil {
		return nil
	}
	var reqs []reconcile.Request
	for i := range gates.Items {
		g := &gates.Items[i]
		if shared.ControlledBy(g, obj.GetUID()) && g.Status.Phase.Open() {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(g)})
		}
	}
	return reqs
}

// runEnded passes the update of a Run that ends. The Gates of Runs that ended while the
// manager was down are closed when it starts, as each Gate is reconciled then.
var runEnded = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return false },
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		old, okOld := e.ObjectOld.(*ergonv1alpha1.Run)
		run, ok := e.ObjectNew.(*ergonv1alpha1.Run)
		return okOld && ok && !old.Status.Phase.Finished() && run.Status.Phase.Finished()
	},
}
