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

package triggers

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/naming"
)

// created is when every scheduled Trigger of the table was created: an hour boundary.
var created = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

func scheduled(mutate func(*ergonv1alpha1.Trigger)) *ergonv1alpha1.Trigger {
	t := &ergonv1alpha1.Trigger{
		ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: "team", UID: "t-1", Generation: 2,
			CreationTimestamp: metav1.NewTime(created)},
		Spec: ergonv1alpha1.TriggerSpec{
			SceneRef: corev1.LocalObjectReference{Name: "report"},
			Schedule: &ergonv1alpha1.ScheduleSource{Cron: "*/10 * * * *"},
		},
	}
	if mutate != nil {
		mutate(t)
	}
	return t
}

func activeRun(name string) *ergonv1alpha1.Run {
	return &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team"}}
}

func TestPlanSchedule(t *testing.T) {
	at := func(minutes int) time.Time { return created.Add(time.Duration(minutes) * time.Minute) }
	dueName := func(minutes int) string { return naming.ScheduledRunName("nightly", at(minutes)) }
	tests := []struct {
		name    string
		trigger *ergonv1alpha1.Trigger
		active  []*ergonv1alpha1.Run
		now     time.Time

		wantStart    string // the Run created, "" for none
		wantRecorded string // the Run recorded as the last scheduled one, "" for none
		standsFor    string // the predictable name wantRecorded stands for, when it is an alternate
		wantCancel   []string
		wantReady    string // reason
		wantEvents   []string
		wantRequeue  time.Duration
		wantNext     bool
	}{{
		name: "nothing due before the first time", trigger: scheduled(nil), now: at(5),
		wantReady: ergonv1alpha1.ReasonScheduled, wantRequeue: 5 * time.Minute, wantNext: true,
	}, {
		name: "the first time is due", trigger: scheduled(nil), now: at(10),
		wantStart: dueName(10), wantRecorded: dueName(10),
		wantReady: ergonv1alpha1.ReasonScheduled, wantRequeue: 10 * time.Minute, wantNext: true,
	}, {
		name: "a late look starts only the most recent missed time", trigger: scheduled(nil), now: at(35),
		wantStart: dueName(30), wantRecorded: dueName(30),
		wantReady: ergonv1alpha1.ReasonScheduled, wantRequeue: 5 * time.Minute, wantNext: true,
	}, {
		name: "a time already recorded is not due again",
		trigger: scheduled(func(t *ergonv1alpha1.Trigger) {
			t.Status.LastScheduleTime = &metav1.Time{Time: at(10)}
		}), now: at(15),
		wantReady: ergonv1alpha1.ReasonScheduled, wantRequeue: 5 * time.Minute, wantNext: true,
	}, {
		name: "a Run created on an earlier look is recorded, not created again", trigger: scheduled(nil),
		active: []*ergonv1alpha1.Run{activeRun(dueName(10))}, now: at(10),
		wantRecorded: dueName(10),
		wantReady:    ergonv1alpha1.ReasonScheduled, wantRequeue: 10 * time.Minute, wantNext: true,
	}, {
		name:    "a Run created under an alternate name on an earlier look is recorded by that name, not created again",
		trigger: scheduled(nil), now: at(10),
		active: []*ergonv1alpha1.Run{func() *ergonv1alpha1.Run {
			r := activeRun("nightly-alternate")
			r.Annotations = map[string]string{ergonv1alpha1.AnnotationStandsFor: dueName(10)}
			return r
		}()},
		wantRecorded: "nightly-alternate", standsFor: dueName(10),
		wantReady: ergonv1alpha1.ReasonScheduled, wantRequeue: 10 * time.Minute, wantNext: true,
	}, {
		name:   "Allow starts beside an active Run",
		active: []*ergonv1alpha1.Run{activeRun("older")}, trigger: scheduled(nil), now: at(10),
		wantStart: dueName(10), wantRecorded: dueName(10),
		wantReady: ergonv1alpha1.ReasonScheduled, wantRequeue: 10 * time.Minute, wantNext: true,
	}, {
		name: "Forbid skips while a Run is active and records nothing",
		trigger: scheduled(func(t *ergonv1alpha1.Trigger) {
			t.Spec.Schedule.ConcurrencyPolicy = ergonv1alpha1.ForbidConcurrent
		}),
		active: []*ergonv1alpha1.Run{activeRun("older")}, now: at(10),
		wantReady: ergonv1alpha1.ReasonScheduled, wantEvents: []string{EventRunSkipped},
		wantRequeue: 10 * time.Minute, wantNext: true,
	}, {
		name: "Replace cancels the active Runs not yet cancelled, then starts",
		trigger: scheduled(func(t *ergonv1alpha1.Trigger) {
			t.Spec.Schedule.ConcurrencyPolicy = ergonv1alpha1.ReplaceConcurrent
		}),
		active: []*ergonv1alpha1.Run{activeRun("older"), func() *ergonv1alpha1.Run {
			r := activeRun("cancelling")
			r.Spec.Cancel = true
			return r
		}()}, now: at(10),
		wantStart: dueName(10), wantRecorded: dueName(10), wantCancel: []string{"older"},
		wantReady: ergonv1alpha1.ReasonScheduled, wantEvents: []string{EventRunReplaced},
		wantRequeue: 10 * time.Minute, wantNext: true,
	}, {
		name: "a starting deadline gives up a time too old to start",
		trigger: scheduled(func(t *ergonv1alpha1.Trigger) {
			t.Spec.Schedule.StartingDeadlineSeconds = ptr.To[int64](60)
		}), now: at(13),
		wantReady: ergonv1alpha1.ReasonScheduled, wantRequeue: 7 * time.Minute, wantNext: true,
	}, {
		name: "more than 100 missed times warn and start the most recent",
		trigger: scheduled(func(t *ergonv1alpha1.Trigger) {
			t.Spec.Schedule.Cron = "* * * * *"
		}), now: at(200),
		wantStart: dueName(200), wantRecorded: dueName(200),
		wantReady: ergonv1alpha1.ReasonScheduled, wantEvents: []string{EventTooManyMissed},
		wantRequeue: time.Minute, wantNext: true,
	}, {
		name: "suspended starts nothing and never looks again on its own",
		trigger: scheduled(func(t *ergonv1alpha1.Trigger) {
			t.Spec.Suspend = new(true)
		}), now: at(30),
		wantReady: ergonv1alpha1.ReasonSuspended,
	}, {
		name: "a schedule that does not parse is not Ready and names the field",
		trigger: scheduled(func(t *ergonv1alpha1.Trigger) {
			t.Spec.Schedule.Cron = "every tuesday"
		}), now: at(30),
		wantReady: ergonv1alpha1.ReasonInvalidSchedule,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan := PlanSchedule(ScheduleFacts{Trigger: tt.trigger, Active: tt.active, Now: tt.now, Location: time.UTC})
			gotStart := ""
			if plan.Start != nil {
				gotStart = plan.Start.Name
				if ref := metav1.GetControllerOf(plan.Start); ref == nil || ref.UID != tt.trigger.UID {
					t.Errorf("the started Run is not controlled by the Trigger: %+v", ref)
				}
			}
			if gotStart != tt.wantStart {
				t.Errorf("Start = %q, want %q", gotStart, tt.wantStart)
			}
			if plan.RunName != tt.wantRecorded {
				t.Errorf("RunName = %q, want %q", plan.RunName, tt.wantRecorded)
			}
			predictable := tt.wantRecorded
			if tt.standsFor != "" {
				predictable = tt.standsFor
			}
			if predictable != "" && naming.ScheduledRunName("nightly", plan.Scheduled) != predictable {
				t.Errorf("Scheduled = %v does not name %q", plan.Scheduled, predictable)
			}
			var cancelled []string
			for _, r := range plan.Cancel {
				cancelled = append(cancelled, r.Name)
			}
			if strings.Join(cancelled, ",") != strings.Join(tt.wantCancel, ",") {
				t.Errorf("Cancel = %v, want %v", cancelled, tt.wantCancel)
			}
			if plan.Ready.Reason != tt.wantReady {
				t.Errorf("Ready reason = %q (%s), want %q", plan.Ready.Reason, plan.Ready.Message, tt.wantReady)
			}
			if tt.wantReady == ergonv1alpha1.ReasonInvalidSchedule &&
				(plan.Ready.Status != metav1.ConditionFalse || !strings.Contains(plan.Ready.Message, "spec.schedule")) {
				t.Errorf("Ready = %+v, want False naming spec.schedule", plan.Ready)
			}
			var reasons []string
			for _, e := range plan.Events {
				reasons = append(reasons, e.Reason)
			}
			if strings.Join(reasons, ",") != strings.Join(tt.wantEvents, ",") {
				t.Errorf("Events = %v, want %v", reasons, tt.wantEvents)
			}
			if plan.RequeueAfter != tt.wantRequeue {
				t.Errorf("RequeueAfter = %v, want %v", plan.RequeueAfter, tt.wantRequeue)
			}
			if (plan.NextScheduleTime != nil) != tt.wantNext {
				t.Errorf("NextScheduleTime = %v, want set: %v", plan.NextScheduleTime, tt.wantNext)
			}
		})
	}
}

// TestPlanScheduleIsPure plans twice from the same facts and gets the same plan, and leaves the
// Trigger as it was.
func TestPlanScheduleIsPure(t *testing.T) {
	tr := scheduled(nil)
	before := tr.DeepCopy()
	now := created.Add(10 * time.Minute)
	a := PlanSchedule(ScheduleFacts{Trigger: tr, Now: now, Location: time.UTC})
	b := PlanSchedule(ScheduleFacts{Trigger: tr, Now: now, Location: time.UTC})
	if a.Start == nil || b.Start == nil || a.Start.Name != b.Start.Name || a.RequeueAfter != b.RequeueAfter {
		t.Errorf("two plans from the same facts differ: %+v, %+v", a, b)
	}
	if tr.Status.LastScheduleTime != nil || tr.Generation != before.Generation || len(tr.Status.Active) != 0 {
		t.Error("PlanSchedule changed the Trigger")
	}
}
