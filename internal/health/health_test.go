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

package health

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

func cond(t string, s metav1.ConditionStatus, reason string) metav1.Condition {
	return metav1.Condition{Type: t, Status: s, Reason: reason, Message: "m", ObservedGeneration: 1}
}

// kstatusOf sets the health conditions as the controllers do and computes what kstatus says.
func kstatusOf(t *testing.T, obj runtime.Object, conditions *[]metav1.Condition, h Health) status.Status {
	t.Helper()
	Set(conditions, 1, metav1.NewTime(time.Unix(0, 0)), h)
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: raw}
	u.SetGeneration(1)
	if err := unstructured.SetNestedField(u.Object, int64(1), "status", "observedGeneration"); err != nil {
		t.Fatal(err)
	}
	res, err := status.Compute(u)
	if err != nil {
		t.Fatal(err)
	}
	return res.Status
}

func TestKstatusSeesEveryPhaseOfARunAsAFluxUserExpects(t *testing.T) {
	succeeded := func(s metav1.ConditionStatus, reason string) []metav1.Condition {
		return []metav1.Condition{cond(ergonv1alpha1.ConditionSucceeded, s, reason)}
	}
	for _, tc := range []struct {
		name  string
		phase ergonv1alpha1.RunPhase
		conds []metav1.Condition
		want  status.Status
	}{
		{"a Run nothing has looked at yet is in progress", "", nil, status.InProgressStatus},
		{"a Run waiting for its Scene is in progress", ergonv1alpha1.RunPending, succeeded(metav1.ConditionUnknown, ergonv1alpha1.ReasonSceneNotFound), status.InProgressStatus},
		{"a running Run is in progress", ergonv1alpha1.RunRunning, succeeded(metav1.ConditionUnknown, ergonv1alpha1.ReasonRunning), status.InProgressStatus},
		{"a Run waiting on a Gate is in progress", ergonv1alpha1.RunWaiting, succeeded(metav1.ConditionUnknown, ergonv1alpha1.ReasonWaiting), status.InProgressStatus},
		{"a suspended Run is in progress: it has not ended, and resumes", ergonv1alpha1.RunSuspended, succeeded(metav1.ConditionUnknown, ergonv1alpha1.ReasonSuspended), status.InProgressStatus},
		{"a Run running its finally steps is in progress", ergonv1alpha1.RunRunning, succeeded(metav1.ConditionUnknown, ergonv1alpha1.ReasonFinalizing), status.InProgressStatus},
		{"a succeeded Run is current", ergonv1alpha1.RunSucceeded, succeeded(metav1.ConditionTrue, ergonv1alpha1.ReasonSucceeded), status.CurrentStatus},
		{"a failed Run has failed", ergonv1alpha1.RunFailed, succeeded(metav1.ConditionFalse, ergonv1alpha1.ReasonStepFailed), status.FailedStatus},
		{"a cancelled Run has failed", ergonv1alpha1.RunCancelled, succeeded(metav1.ConditionFalse, ergonv1alpha1.ReasonCancelled), status.FailedStatus},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := &ergonv1alpha1.Run{Status: ergonv1alpha1.RunStatus{Phase: tc.phase, Conditions: tc.conds}}
			if got := kstatusOf(t, run, &run.Status.Conditions, Run(&run.Status)); got != tc.want {
				t.Errorf("kstatus says %s, want %s (conditions %v)", got, tc.want, run.Status.Conditions)
			}
		})
	}
}

func TestKstatusSeesAGateInProgressUntilDecided(t *testing.T) {
	for _, tc := range []struct {
		name  string
		conds []metav1.Condition
		want  status.Status
		phase ergonv1alpha1.GatePhase
	}{
		{"a new Gate is in progress", nil, status.InProgressStatus, ""},
		{"a Gate awaiting a decision is in progress", []metav1.Condition{cond(ergonv1alpha1.ConditionDecided, metav1.ConditionFalse, ergonv1alpha1.ReasonAwaitingDecision)}, status.InProgressStatus, ""},
		{"an approved Gate is current", []metav1.Condition{cond(ergonv1alpha1.ConditionDecided, metav1.ConditionTrue, ergonv1alpha1.ReasonApproved)}, status.CurrentStatus, ""},
		{"a rejected Gate is current: the Run tells what it meant", []metav1.Condition{cond(ergonv1alpha1.ConditionDecided, metav1.ConditionTrue, ergonv1alpha1.ReasonRejected)}, status.CurrentStatus, ""},
		{"a timed-out Gate is current", []metav1.Condition{cond(ergonv1alpha1.ConditionDecided, metav1.ConditionTrue, ergonv1alpha1.ReasonTimedOut)}, status.CurrentStatus, ""},
		{"a Gate closed when its Run ended is current: nobody can decide it any more", []metav1.Condition{cond(ergonv1alpha1.ConditionDecided,
			metav1.ConditionFalse, ergonv1alpha1.ReasonRunFinished)}, status.CurrentStatus, ergonv1alpha1.GateClosed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gate := &ergonv1alpha1.Gate{Status: ergonv1alpha1.GateStatus{Conditions: tc.conds, Phase: tc.phase}}
			if got := kstatusOf(t, gate, &gate.Status.Conditions, Gate(&gate.Status)); got != tc.want {
				t.Errorf("kstatus says %s, want %s", got, tc.want)
			}
		})
	}
}

func TestKstatusReadsTriggersAndScenesFromTheirReadyCondition(t *testing.T) {
	ready := func(s metav1.ConditionStatus, reason string) []metav1.Condition {
		return []metav1.Condition{cond(ergonv1alpha1.ConditionReady, s, reason)}
	}
	for _, tc := range []struct {
		name  string
		scene bool
		conds []metav1.Condition
		want  status.Status
	}{
		{"a scheduled Trigger is current", false, ready(metav1.ConditionTrue, ergonv1alpha1.ReasonScheduled), status.CurrentStatus},
		{"a suspended Trigger is current: it is what its spec asks", false, ready(metav1.ConditionTrue, ergonv1alpha1.ReasonSuspended), status.CurrentStatus},
		{"a webhook Trigger waiting for its Secret is in progress", false, ready(metav1.ConditionFalse, ergonv1alpha1.ReasonSecretNotFound), status.InProgressStatus},
		{"a Trigger whose schedule does not parse has failed", false, ready(metav1.ConditionFalse, ergonv1alpha1.ReasonInvalidSchedule), status.FailedStatus},
		{"a Trigger nothing has looked at yet is in progress", false, nil, status.InProgressStatus},
		{"a compiled Scene is current", true, ready(metav1.ConditionTrue, ergonv1alpha1.ReasonCompiled), status.CurrentStatus},
		{"a Scene calling a missing Scene is in progress", true, ready(metav1.ConditionFalse, ergonv1alpha1.ReasonSceneRefMissing), status.InProgressStatus},
		{"a Scene naming a missing Workspace is in progress", true, ready(metav1.ConditionFalse, ergonv1alpha1.ReasonWorkspaceMissing), status.InProgressStatus},
		{"a Scene that does not compile has failed", true, ready(metav1.ConditionFalse, ergonv1alpha1.ReasonCompileFailed), status.FailedStatus},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got status.Status
			if tc.scene {
				s := &ergonv1alpha1.Scene{Status: ergonv1alpha1.SceneStatus{Conditions: tc.conds}}
				got = kstatusOf(t, s, &s.Status.Conditions, Scene(&s.Status))
			} else {
				tr := &ergonv1alpha1.Trigger{Status: ergonv1alpha1.TriggerStatus{Conditions: tc.conds}}
				got = kstatusOf(t, tr, &tr.Status.Conditions, Trigger(&tr.Status))
			}
			if got != tc.want {
				t.Errorf("kstatus says %s, want %s", got, tc.want)
			}
		})
	}
}

func TestSetKeepsOnlyTheTrueConditionAndItsTransitionTime(t *testing.T) {
	var conds []metav1.Condition
	first := metav1.NewTime(time.Unix(100, 0))
	Set(&conds, 1, first, Health{State: Reconciling, Reason: "Running", Message: "a"})
	Set(&conds, 2, metav1.NewTime(time.Unix(200, 0)), Health{State: Reconciling, Reason: "Waiting", Message: "b"})
	r := meta.FindStatusCondition(conds, ergonv1alpha1.ConditionReconciling)
	if r == nil || r.Reason != "Waiting" || r.ObservedGeneration != 2 || !r.LastTransitionTime.Equal(&first) {
		t.Fatalf("Reconciling = %+v, want reason Waiting, generation 2, transition time kept", r)
	}
	Set(&conds, 2, metav1.NewTime(time.Unix(300, 0)), Health{State: Stalled, Reason: "StepFailed"})
	if meta.FindStatusCondition(conds, ergonv1alpha1.ConditionReconciling) != nil || len(conds) != 1 ||
		conds[0].Type != ergonv1alpha1.ConditionStalled {
		t.Fatalf("conditions = %+v, want only Stalled", conds)
	}
	Set(&conds, 2, metav1.NewTime(time.Unix(400, 0)), Health{State: Current})
	if len(conds) != 0 {
		t.Fatalf("conditions = %+v, want none once current", conds)
	}
}
