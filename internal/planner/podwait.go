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
	"fmt"
	"slices"
	"time"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/compile"
)

// waitForPod shows a pod that has not started in the step's status: Pending, with the
// kubelet's or the scheduler's reason. A new problem is told once, as an Event; the kubelet's
// back-and-forth between ErrImagePull and ImagePullBackOff is one problem.
func (p *planner) waitForPod(step *compile.Step, s *ergonv1alpha1.StepStatus, pod *PodState) {
	was := s.Reason
	if s.Phase != ergonv1alpha1.StepPending {
		was = ""
	}
	reason, message := pod.Reason, pod.Message
	if reason == "" {
		reason, message = ergonv1alpha1.ReasonPodStarting, "the attempt's pod was created"
	}
	s.Phase, s.Reason, s.Message, s.NextAttemptAt = ergonv1alpha1.StepPending, reason, message, nil
	p.start(s)
	if PendingProblem(reason) && problemKind(reason) != problemKind(was) {
		p.event(true, reason, "Step %s cannot start attempt %d: %s", step.Name, s.Attempts, message)
	}
}

// problemKind groups the reasons that are one problem seen at different moments.
func problemKind(reason string) string {
	switch reason {
	case "ErrImagePull", "ImagePullBackOff":
		return "ImagePull"
	}
	return reason
}

// pendingTimeout is how long an attempt's pod may take to start: the step's, the Scene's or
// the manager's bound; zero means none.
func (p *planner) pendingTimeout(step *compile.Step) time.Duration {
	if d := step.Spec.PendingTimeout; d != nil {
		return d.Duration
	}
	if d := p.f.Scene.Spec.PendingTimeout; d != nil {
		return d.Duration
	}
	return p.f.PendingTimeout
}

// pendingTimedOut fails the attempt of a pod that did not start within the step's
// pendingTimeout, with the reason it was waiting for, and deletes the pod. It reports
// whether it did; otherwise it wakes the Run when the time is up.
func (p *planner) pendingTimedOut(step *compile.Step, s *ergonv1alpha1.StepStatus, pod *PodState) bool {
	timeout := p.pendingTimeout(step)
	if timeout <= 0 || pod.CreatedAt.IsZero() {
		return false
	}
	deadline := pod.CreatedAt.Add(timeout)
	if p.f.Now.Before(deadline) {
		p.wakeAt(deadline)
		return false
	}
	failed := *pod
	failed.Phase, failed.Reason = PodFailed, pod.Reason
	if !PendingProblem(failed.Reason) {
		failed.Reason = ergonv1alpha1.ReasonPendingTimeout
	}
	waiting := pod.Message
	if waiting == "" {
		waiting = "it waited to be scheduled"
	}
	failed.Message = fmt.Sprintf("the pod did not start within the pendingTimeout of %s: %s", timeout, waiting)
	p.plan.DeletePods = append(p.plan.DeletePods, pod.Name)
	p.attemptFailed(step, s, failed)
	return true
}

// blocked reports whether an earlier pod of the step may still be running: one being
// deleted in its grace period, or one this plan deletes. The next attempt waits for it,
// so a step never runs twice at once; the pod's deletion wakes the Run, and so does the end
// of its grace period, after which the kubelet has killed its containers.
func (p *planner) blocked(step *compile.Step) bool {
	for _, pod := range p.f.Pods[step.Name] {
		switch {
		case slices.Contains(p.plan.DeletePods, pod.Name), pod.Phase == PodPending, pod.Phase == PodRunning:
			return true
		case pod.Phase == PodGone && p.f.Now.Before(pod.TerminatingUntil):
			p.wakeAt(pod.TerminatingUntil)
			return true
		}
	}
	return false
}

// holdingUp says which step holds the Run up and why, for the Run's condition: a step whose
// pod cannot start, else a step waiting to try again; "" when none does.
func (p *planner) holdingUp() string {
	for _, name := range p.order {
		if s := p.steps[name]; s.Phase == ergonv1alpha1.StepPending && s.PodName != "" && PendingProblem(s.Reason) {
			return fmt.Sprintf("step %s cannot start (%s): %s", name, s.Reason, s.Message)
		}
	}
	for _, name := range p.order {
		if s := p.steps[name]; s.Phase == ergonv1alpha1.StepRetrying {
			return fmt.Sprintf("step %s is retrying after attempt %d failed (%s): %s", name, s.Attempts, s.Reason, s.Message)
		}
	}
	for _, name := range p.order {
		if s := p.steps[name]; !s.Phase.Finished() && s.Reason == ergonv1alpha1.ReasonWaitingForSlot {
			return fmt.Sprintf("step %s: %s", name, s.Message)
		}
	}
	return ""
}
