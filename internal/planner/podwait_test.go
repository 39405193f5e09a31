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

package planner

import (
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/naming"
)

func stay(string, int32) PodPhase { return "" }

// set changes the observed state of step a's latest pod.
func (w *world) set(mutate func(p *PodState)) {
	pods := w.pods["a"]
	mutate(&pods[len(pods)-1])
}

func (w *world) events(reason string) []Event {
	var out []Event
	for _, e := range w.last.Events {
		if e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}

func pullBackOff(p *PodState) {
	p.Phase, p.Reason, p.Message = PodPending, "ImagePullBackOff", `the image "nope:1" of the step's container cannot be pulled: Back-off`
}

func retrying(limit int32) *ergonv1alpha1.RetryPolicy {
	return &ergonv1alpha1.RetryPolicy{Limit: limit}
}

func TestAStepWhosePodCannotStartIsPendingWithTheReasonToldOnce(t *testing.T) {
	w := newWorld(t, ergonv1alpha1.SceneSpec{Steps: []ergonv1alpha1.Step{step("a"), step("b", "a")}}, stay)
	w.plan()
	if s := w.status("a"); s.Phase != ergonv1alpha1.StepPending || s.Reason != ergonv1alpha1.ReasonPodStarting || s.PodName != naming.StepPodName("r", "a", 1) {
		t.Fatalf("a just created pod: step %+v, want Pending PodStarting", s)
	}
	w.set(func(p *PodState) { p.Phase, p.CreatedAt = PodPending, t0 })
	w.set(pullBackOff)
	w.now = w.now.Add(10 * time.Second)
	w.plan()
	s := w.status("a")
	if s.Phase != ergonv1alpha1.StepPending || s.Reason != "ImagePullBackOff" || !strings.Contains(s.Message, `"nope:1"`) {
		t.Fatalf("step %+v, want Pending ImagePullBackOff naming the image", s)
	}
	if e := w.events("ImagePullBackOff"); len(e) != 1 || !e[0].Warning || !strings.Contains(e[0].Message, "Step a cannot start attempt 1") {
		t.Fatalf("events %+v, want one warning", w.last.Events)
	}
	cond := meta.FindStatusCondition(w.run.Status.Conditions, ergonv1alpha1.ConditionSucceeded)
	if !strings.Contains(cond.Message, `0 of 2 steps finished; step a cannot start (ImagePullBackOff): the image "nope:1"`) {
		t.Fatalf("condition message %q does not name the step holding the Run up", cond.Message)
	}
	if w.run.Status.Phase != ergonv1alpha1.RunRunning {
		t.Fatalf("Run phase %s", w.run.Status.Phase)
	}

	// The kubelet goes back and forth between ErrImagePull and ImagePullBackOff: one problem.
	w.set(func(p *PodState) { p.Reason = "ErrImagePull" })
	w.plan()
	if s := w.status("a"); s.Reason != "ErrImagePull" || len(w.last.Events) != 0 {
		t.Fatalf("step %+v, events %+v: want the reason kept up to date without a new event", s, w.last.Events)
	}
	w.set(pullBackOff)
	w.plan()
	if len(w.last.Events) != 0 {
		t.Fatalf("events %+v on the same problem again", w.last.Events)
	}
	// Another problem is another event.
	w.set(func(p *PodState) { p.Reason, p.Message = "CreateContainerConfigError", `secret "db" not found` })
	w.plan()
	if e := w.events("CreateContainerConfigError"); len(e) != 1 || !strings.Contains(e[0].Message, `secret "db" not found`) {
		t.Fatalf("events %+v", w.last.Events)
	}
	// Once the pod runs, the step runs, and the Run's condition no longer blames it.
	w.set(func(p *PodState) { p.Phase, p.Reason, p.Message = PodRunning, "", "" })
	w.plan()
	if s := w.status("a"); s.Phase != ergonv1alpha1.StepRunning || s.Reason != "" || s.Message != "" {
		t.Fatalf("step %+v, want Running with no reason", s)
	}
	if cond := meta.FindStatusCondition(w.run.Status.Conditions, ergonv1alpha1.ConditionSucceeded); cond.Message != "0 of 2 steps finished" {
		t.Fatalf("condition message %q", cond.Message)
	}
}

func TestAPodThatDoesNotStartInTimeFailsTheAttemptWithTheReasonItWaitedFor(t *testing.T) {
	a := step("a")
	a.PendingTimeout = &metav1.Duration{Duration: 2 * time.Minute}
	a.Retry = retrying(1)
	w := newWorld(t, ergonv1alpha1.SceneSpec{Steps: []ergonv1alpha1.Step{a}}, stay)
	w.plan()
	w.set(func(p *PodState) { p.CreatedAt = t0 })
	w.set(pullBackOff)
	if p := w.plan(); p.RequeueAfter != 2*time.Minute {
		t.Fatalf("requeue after %s, want the pendingTimeout", p.RequeueAfter)
	}
	w.now = t0.Add(2 * time.Minute)
	p := w.plan()
	if !slices.Equal(p.DeletePods, []string{naming.StepPodName("r", "a", 1)}) {
		t.Fatalf("DeletePods %v, want the pod that did not start", p.DeletePods)
	}
	if len(p.Pods) != 0 {
		t.Fatalf("started %v while the old pod is being deleted", p.Pods)
	}
	s := w.status("a")
	if s.Phase != ergonv1alpha1.StepRetrying || s.Reason != "ImagePullBackOff" ||
		!strings.Contains(s.Message, "the pod did not start within the pendingTimeout of 2m0s: the image") {
		t.Fatalf("step %+v, want Retrying for ImagePullBackOff", s)
	}
	if h := s.History; len(h) != 1 || h[0].Reason != "ImagePullBackOff" || h[0].Attempt != 1 {
		t.Fatalf("history %+v", h)
	}
	// The world deleted the pod: the next attempt starts, and times out the same way.
	p = w.plan()
	if len(p.Pods) != 1 || p.Pods[0].Name != naming.StepPodName("r", "a", 2) {
		t.Fatalf("pods %+v, want attempt 2", p.Pods)
	}
	w.set(func(p *PodState) { p.CreatedAt = w.now; p.Phase = PodPending })
	w.now = w.now.Add(2 * time.Minute)
	w.plan()
	if s := w.status("a"); s.Phase != ergonv1alpha1.StepFailed || s.Reason != ergonv1alpha1.ReasonPendingTimeout ||
		!strings.Contains(s.Message, "(attempt 2 of 2)") {
		t.Fatalf("step %+v, want Failed PendingTimeout after its retry", s)
	}
	cond := meta.FindStatusCondition(w.run.Status.Conditions, ergonv1alpha1.ConditionSucceeded)
	if w.run.Status.Phase != ergonv1alpha1.RunFailed || !strings.Contains(cond.Message, "step a failed: the pod did not start") {
		t.Fatalf("Run %s: %q", w.run.Status.Phase, cond.Message)
	}
}

func TestPendingTimeoutComesFromTheStepTheSceneOrTheManager(t *testing.T) {
	minutes := func(m int) *metav1.Duration { return &metav1.Duration{Duration: time.Duration(m) * time.Minute} }
	cases := []struct {
		name         string
		step, scene  *metav1.Duration
		manager      time.Duration
		wantDeadline time.Duration // 0: no bound
	}{
		{"the step's own", minutes(1), minutes(5), 10 * time.Minute, time.Minute},
		{"the Scene's", nil, minutes(5), 10 * time.Minute, 5 * time.Minute},
		{"the manager's", nil, nil, 10 * time.Minute, 10 * time.Minute},
		{"none", nil, nil, 0, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := step("a")
			a.PendingTimeout = tc.step
			w := newWorld(t, ergonv1alpha1.SceneSpec{PendingTimeout: tc.scene, Steps: []ergonv1alpha1.Step{a}}, stay)
			w.plan()
			w.set(func(p *PodState) { p.Phase, p.CreatedAt = PodPending, t0 })
			f := &Facts{Now: t0, Run: w.run, Scene: w.scene, Pods: w.pods, PodBudget: -1, MaxDepth: 5, PendingTimeout: tc.manager}
			if p := Decide(f); p.RequeueAfter != tc.wantDeadline {
				t.Fatalf("requeue after %s, want %s", p.RequeueAfter, tc.wantDeadline)
			}
		})
	}
}

func TestAPodThatVanishesFailsTheAttemptAndTheNextWaitsForItToEnd(t *testing.T) {
	for _, tc := range []struct {
		name, reason string
	}{
		{"deleted by someone", ergonv1alpha1.ReasonPodDeleted},
		{"lost with its node", ergonv1alpha1.ReasonNodeLost},
		{"evicted by a drain", ergonv1alpha1.ReasonEvicted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := step("a")
			a.Retry = retrying(2)
			w := newWorld(t, ergonv1alpha1.SceneSpec{Steps: []ergonv1alpha1.Step{a}}, stay)
			w.plan()
			w.set(func(p *PodState) { p.Phase = PodRunning })
			w.plan()
			// Being deleted: its containers may run for the grace period still.
			grace := t0.Add(30 * time.Second)
			w.set(func(p *PodState) {
				p.Phase, p.Reason, p.Message, p.TerminatingUntil = PodGone, tc.reason, "gone: "+tc.reason, grace
			})
			p := w.plan()
			s := w.status("a")
			if s.Phase != ergonv1alpha1.StepRetrying || s.Reason != tc.reason || len(s.History) != 1 {
				t.Fatalf("step %+v, want Retrying for %s", s, tc.reason)
			}
			if len(p.Pods) != 0 || p.RequeueAfter != 30*time.Second {
				t.Fatalf("pods %v, requeue %s: want no new attempt before the old pod's grace period ends", p.Pods, p.RequeueAfter)
			}
			// Again, while it is still terminating: nothing new, the failure told once.
			w.now = t0.Add(10 * time.Second)
			if p := w.plan(); len(p.Pods) != 0 || len(w.events("StepRetrying")) != 0 || len(w.status("a").History) != 1 {
				t.Fatalf("pods %v events %+v history %+v", p.Pods, p.Events, w.status("a").History)
			}
			// The pod is gone for good: attempt 2 starts under a new name.
			w.pods["a"] = nil
			p = w.plan()
			if len(p.Pods) != 1 || p.Pods[0].Name != naming.StepPodName("r", "a", 2) || p.Pods[0].Attempt != 2 {
				t.Fatalf("pods %+v, want attempt 2", p.Pods)
			}
		})
	}
}

func TestAPodStuckTerminatingOnALostNodeHoldsTheNextAttemptOnlyForItsGracePeriod(t *testing.T) {
	a := step("a")
	a.Retry = retrying(1)
	w := newWorld(t, ergonv1alpha1.SceneSpec{Steps: []ergonv1alpha1.Step{a}}, stay)
	w.plan()
	w.set(func(p *PodState) {
		p.Phase, p.Reason, p.TerminatingUntil = PodGone, ergonv1alpha1.ReasonNodeLost, t0.Add(30*time.Second)
	})
	w.plan()
	w.now = t0.Add(30 * time.Second)
	p := w.plan()
	if len(p.Pods) != 1 || p.Pods[0].Name != naming.StepPodName("r", "a", 2) {
		t.Fatalf("pods %+v, want attempt 2 once the grace period is over", p.Pods)
	}
}

func TestAnOOMKilledStepFailsWithThatReason(t *testing.T) {
	w := newWorld(t, ergonv1alpha1.SceneSpec{Steps: []ergonv1alpha1.Step{step("a")}}, stay)
	w.plan()
	w.set(func(p *PodState) {
		p.Phase, p.Reason, p.ExitCode = PodFailed, ergonv1alpha1.ReasonOOMKilled, new(int32(137))
		p.Message = "the step ran out of memory: it reached its memory limit of 64Mi and was killed (exit code 137)"
	})
	w.plan()
	s := w.status("a")
	if s.Phase != ergonv1alpha1.StepFailed || s.Reason != ergonv1alpha1.ReasonOOMKilled || !strings.Contains(s.Message, "64Mi") {
		t.Fatalf("step %+v", s)
	}
	if h := s.History; len(h) != 1 || h[0].ExitCode == nil || *h[0].ExitCode != 137 {
		t.Fatalf("history %+v", h)
	}
}

func TestACancelledRunDeletesAPodThatHasNotStarted(t *testing.T) {
	w := newWorld(t, ergonv1alpha1.SceneSpec{Steps: []ergonv1alpha1.Step{step("a")}}, stay)
	w.plan()
	w.set(pullBackOff)
	w.plan()
	w.run.Spec.Cancel = true
	p := w.plan()
	if !slices.Equal(p.DeletePods, []string{naming.StepPodName("r", "a", 1)}) || w.phase("a") != ergonv1alpha1.StepCancelled {
		t.Fatalf("DeletePods %v, step %s", p.DeletePods, w.phase("a"))
	}
}

func TestPendingPodsCountAgainstParallelism(t *testing.T) {
	one := int32(1)
	w := newWorld(t, ergonv1alpha1.SceneSpec{Parallelism: &one, Steps: []ergonv1alpha1.Step{step("a"), step("b")}}, stay)
	if p := w.plan(); len(p.Pods) != 1 {
		t.Fatalf("pods %v", p.Pods)
	}
	w.set(pullBackOff)
	if p := w.plan(); len(p.Pods) != 0 {
		t.Fatalf("started %v while a's pod waits for its image", p.Pods)
	}
}
