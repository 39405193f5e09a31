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
	"math"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/agentspec"
	"github.com/ergon-dev/ergon/internal/compile"
	"github.com/ergon-dev/ergon/internal/naming"
	"github.com/ergon-dev/ergon/internal/outputs"
)

// decidePodStep moves a container or agent step: start an attempt, follow its pod, retry or
// end it.
func (p *planner) decidePodStep(step *compile.Step, s *ergonv1alpha1.StepStatus) {
	latest := latestPod(p.f.Pods[step.Name])
	if latest == nil && (s == nil || (s.Phase == ergonv1alpha1.StepPending && s.PodName == "")) {
		if !p.ready(step) {
			return
		}
		if !p.hasCapacity() {
			p.waitForSlot(step)
			return
		}
		p.startAttempt(step, p.record(step.Name), 1)
		return
	}
	if s == nil {
		// A pod exists that the status does not know: the last status write was lost.
		// Adopt the pod rather than start the attempt again.
		s = p.record(step.Name)
	}
	if latest != nil && (latest.Attempt > s.Attempts || (latest.Attempt == s.Attempts && !ended(s, latest.Attempt))) {
		s.Attempts = latest.Attempt
		p.follow(step, s, latest)
		return
	}
	if waitingForToolCalls(s) {
		p.decideToolCalls(step, s)
		return
	}
	if s.Phase == ergonv1alpha1.StepWaiting {
		// Waiting for its Workspace: the attempt after the last one, when it may.
		p.startAttempt(step, s, s.Attempts+1)
		return
	}
	if s.Phase == ergonv1alpha1.StepRetrying && s.NextAttemptAt != nil {
		if p.f.Now.Before(s.NextAttemptAt.Time) {
			p.wakeAt(s.NextAttemptAt.Time)
			return
		}
		p.startAttempt(step, s, s.Attempts+1)
		return
	}
	if s.PodActive() && latest == nil {
		// The pod of the current attempt is gone: the controller looked it up live, so
		// it was deleted by someone else.
		p.attemptFailed(step, s, PodState{Name: s.PodName, Attempt: s.Attempts, Phase: PodGone,
			Reason: ergonv1alpha1.ReasonPodDeleted, Message: messageDeleted})
	}
}

// hasCapacity reports whether the Run's parallelism and the manager's slots allow one more
// pod or child Run: a scene step counts against both as a pod does, so that a fan-out of
// sub-scenes is bounded like a fan-out of pods. A refusal for want of a slot is counted
// (Plan.WaitingForSlots) and remembered in slotRefused for the caller's message.
func (p *planner) hasCapacity() bool {
	p.slotRefused = false
	if p.suspended() {
		return false
	}
	if par := p.f.Scene.Spec.Parallelism; par != nil && p.active >= int(*par) {
		return false
	}
	if p.f.Slots != nil && !p.slotsAsked {
		p.slotsAsked = true
		p.f.PodBudget, p.f.SlotWait = p.f.Slots(p.active)
	}
	if p.f.PodBudget == 0 {
		p.slotRefused = true
		p.plan.WaitingForSlots++
		return false
	}
	return true
}

// waitForSlot records that a step that may start waits for a step pod slot, and tells it once
// per wait.
func (p *planner) waitForSlot(step *compile.Step) {
	if !p.slotRefused {
		return
	}
	s := p.record(step.Name)
	if s.Reason != ergonv1alpha1.ReasonWaitingForSlot {
		p.event(false, ergonv1alpha1.ReasonWaitingForSlot, "Step %s %s", step.Name, p.slotMessage())
	}
	s.Reason, s.Message = ergonv1alpha1.ReasonWaitingForSlot, p.slotMessage()
}

// slotMessage says which limit keeps a step waiting for a slot.
func (p *planner) slotMessage() string {
	return "waits for a step pod slot" + p.slotLimit()
}

// slotLimit names the limit that keeps work waiting for a slot, after a colon; empty when
// the facts do not say.
func (p *planner) slotLimit() string {
	if p.f.SlotWait == "" {
		return ""
	}
	return ": " + p.f.SlotWait
}

// startAttempt asks for the pod of an attempt when the Run's and the manager's limits allow.
func (p *planner) startAttempt(step *compile.Step, s *ergonv1alpha1.StepStatus, attempt int32) {
	if !p.hasCapacity() || p.blocked(step) {
		return
	}
	name := naming.StepPodName(p.f.Run.Name, step.Name, attempt)
	if !p.workspaceAllows(step, s, name) {
		return
	}
	r, ok := p.render(step)
	if !ok {
		return
	}
	p.take()
	// The pod is asked for, not running: the step is Pending until the kubelet starts it.
	s.Phase, s.Reason, s.Message = ergonv1alpha1.StepPending, ergonv1alpha1.ReasonPodStarting, "the attempt's pod was created"
	s.Attempts, s.PodName, s.NextAttemptAt = attempt, name, nil
	p.start(s)
	p.plan.Pods = append(p.plan.Pods, PodRequest{Name: name, Step: step, Attempt: attempt, Rendered: r, Inputs: p.inputs(step)})
}

// take counts a started pod or child Run against the Run's parallelism and the manager's cap.
func (p *planner) take() {
	if p.f.PodBudget > 0 {
		p.f.PodBudget--
	}
	p.active++
}

// inputs are the outputs of a step's succeeded dependencies.
func (p *planner) inputs(step *compile.Step) []Input {
	var inputs []Input
	for _, d := range p.f.Scene.Dependencies(step.Name) {
		s := p.state(d)
		if s == nil || s.Phase != ergonv1alpha1.StepSucceeded || s.Output == nil {
			continue
		}
		in := Input{Step: d, Ref: s.Output.Ref}
		if in.Ref == nil {
			in.Value = p.value(d, s)
		}
		inputs = append(inputs, in)
	}
	return inputs
}

// follow mirrors the pod of the current attempt into the step's status.
func (p *planner) follow(step *compile.Step, s *ergonv1alpha1.StepStatus, pod *PodState) {
	if !s.PodActive() {
		// The step takes a pod's place from now: a pod the status did not record, or a
		// newer attempt's. Running until the pod's phase says better below.
		p.active++
		s.Phase = ergonv1alpha1.StepRunning
	}
	s.PodName = pod.Name
	switch pod.Phase {
	case PodPending:
		if p.pendingTimedOut(step, s, pod) {
			return
		}
		p.waitForPod(step, s, pod)
	case PodRunning:
		s.Phase, s.Reason, s.Message, s.NextAttemptAt = ergonv1alpha1.StepRunning, "", "", nil
		p.start(s)
	case PodSucceeded:
		out, collected := p.f.Outputs[pod.Name]
		if !collected {
			return // the controller collects it before the next plan
		}
		if out.Err != "" {
			pod.Phase, pod.Reason, pod.Message = PodFailed, ergonv1alpha1.ReasonOutputError, out.Err
			if out.Reason != "" {
				pod.Reason = out.Reason
			}
			p.attemptFailed(step, s, *pod)
			return
		}
		if s.PodActive() {
			p.active--
		}
		p.start(s)
		transcript, reason, message := p.keepStepOutput(s, naming.OutputConfigMapName(p.f.Run.Name, step.Name), out)
		if reason != "" {
			p.fail(s, step, reason, message)
			return
		}
		s.Output = outputs.Value(p.f.Run.Name, step.Name, out.Value)
		s.Usage, s.Transcript = out.Usage, outputs.Transcript(p.f.Run.Name, step.Name, transcript)
		s.Artifacts = out.Artifacts
		p.end(s, ergonv1alpha1.StepSucceeded, "", "")
	case PodFailed, PodGone:
		if pod.Phase == PodFailed && pod.Reason == agentspec.ReasonToolCallsPending {
			p.toolCallsHandedOver(step, s, *pod)
			return
		}
		p.attemptFailed(step, s, *pod)
	}
}

// attemptFailed records a failed attempt, then retries the step or fails it.
func (p *planner) attemptFailed(step *compile.Step, s *ergonv1alpha1.StepStatus, pod PodState) {
	reason, message := ergonv1alpha1.ReasonStepFailed, pod.Message
	switch {
	case pod.Reason == "DeadlineExceeded":
		reason, message = ergonv1alpha1.ReasonStepTimedOut, fmt.Sprintf("the attempt ran past its timeout of %s", step.Spec.Timeout.Duration)
	case pod.Reason != "":
		reason = pod.Reason
	}
	if message == "" && pod.ExitCode != nil {
		message = fmt.Sprintf("the command exited with code %d", *pod.ExitCode)
	}
	if s.PodActive() {
		p.active--
	}
	p.history(s, &pod, ergonv1alpha1.StepFailed, reason, message)
	p.start(s)
	retry := step.Spec.Retry
	// Attempts that handed tool calls over (toolcalls.go) use no retry.
	if failures := s.Attempts - handedOver(s); retry == nil || failures > retry.Limit {
		if retry != nil {
			message = fmt.Sprintf("%s (attempt %d of %d)", message, failures, retry.Limit+1)
		}
		p.keepFailedTranscript(step, s, pod)
		p.fail(s, step, reason, message)
		return
	}
	finished := pod.FinishedAt
	if finished.IsZero() {
		finished = p.f.Now
	}
	next := finished.Add(Backoff(retry.Backoff, s.Attempts))
	s.Phase, s.Reason, s.Message = ergonv1alpha1.StepRetrying, reason, message
	s.NextAttemptAt = &metav1.Time{Time: next}
	p.event(true, "StepRetrying", "Step %s attempt %d failed (%s); attempt %d starts at %s",
		step.Name, s.Attempts, message, s.Attempts+1, next.UTC().Format(time.RFC3339))
	if p.f.Now.Before(next) {
		p.wakeAt(next)
		return
	}
	p.startAttempt(step, s, s.Attempts+1)
}

// keepFailedTranscript keeps the transcript of an agent step's last attempt when the step fails
// for good, as a succeeded step's is kept: it says why the agent failed (a tool that did not
// answer, answers that did not fit the output contract). Within the Run's output limits.
func (p *planner) keepFailedTranscript(step *compile.Step, s *ergonv1alpha1.StepStatus, pod PodState) {
	out, ok := p.f.Outputs[pod.Name]
	if !ok || out.Transcript == "" || step.Spec.Agent == nil {
		return
	}
	transcript, reason, _ := p.keepStepOutput(s, naming.OutputConfigMapName(p.f.Run.Name, step.Name), Output{Transcript: out.Transcript})
	if reason == "" {
		s.Transcript = outputs.Transcript(p.f.Run.Name, step.Name, transcript)
	}
}

// history records how a failed attempt ended, once. The attempt a step ends with is told by
// the step's own fields; history keeps the ones before it, and the Run object small.
func (p *planner) history(s *ergonv1alpha1.StepStatus, pod *PodState, phase ergonv1alpha1.StepPhase, reason, message string) {
	if ended(s, pod.Attempt) {
		return
	}
	h := ergonv1alpha1.AttemptStatus{
		Attempt: pod.Attempt, PodName: pod.Name, Phase: phase, Reason: reason, Message: message,
		ExitCode: pod.ExitCode, FinishedAt: &p.now,
	}
	if !pod.StartedAt.IsZero() {
		h.StartedAt = &metav1.Time{Time: pod.StartedAt}
	}
	if !pod.FinishedAt.IsZero() {
		h.FinishedAt = &metav1.Time{Time: pod.FinishedAt}
	}
	s.History = append(s.History, h)
}

// ended reports whether the status already records how an attempt ended.
func ended(s *ergonv1alpha1.StepStatus, attempt int32) bool {
	for _, h := range s.History {
		if h.Attempt == attempt {
			return true
		}
	}
	return false
}

// latestPod is the pod of the highest attempt.
func latestPod(pods []PodState) *PodState {
	var latest *PodState
	for i := range pods {
		if latest == nil || pods[i].Attempt > latest.Attempt {
			latest = &pods[i]
		}
	}
	return latest
}

// Backoff is the delay before the attempt after the given failed one: duration times factor
// to the power of the failed attempts before it, capped at maxDuration.
func Backoff(b *ergonv1alpha1.Backoff, failedAttempt int32) time.Duration {
	if b == nil || b.Duration == nil {
		return 0
	}
	factor := int32(2)
	if b.Factor != nil {
		factor = *b.Factor
	}
	limit := time.Duration(math.MaxInt64)
	if b.MaxDuration != nil {
		limit = b.MaxDuration.Duration
	}
	d := b.Duration.Duration
	for i := int32(1); i < failedAttempt && d < limit; i++ {
		if d > limit/time.Duration(factor) {
			d = limit
			break
		}
		d *= time.Duration(factor)
	}
	return min(d, limit)
}
