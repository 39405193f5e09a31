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

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

// MaxRunOutputs is how many final steps' outputs a Run repeats in status.outputs: a wide
// fan-out would otherwise double the size of its status.
const MaxRunOutputs = 16

// outcome is where the graph of a Run stands: its step counts and the phase, reason and
// message the Run has from them (finally steps aside).
type outcome struct {
	finished, running, waiting, total int
	done                              bool
	phase                             ergonv1alpha1.RunPhase
	reason, message                   string
}

// graphOutcome derives the outcome of the graph from its steps.
func (p *planner) graphOutcome() outcome {
	o := outcome{total: p.f.Scene.Graph.Len()}
	for _, name := range p.f.Scene.Graph.Names() {
		s := p.state(name)
		switch {
		case s == nil:
		case s.Phase.Finished():
			o.finished++
		case s.Phase == ergonv1alpha1.StepWaiting:
			o.waiting++
		default:
			o.running++
		}
	}
	o.phase, o.reason, o.message = ergonv1alpha1.RunRunning, ergonv1alpha1.ReasonRunning, fmt.Sprintf("%d of %d steps finished", o.finished, o.total)
	o.done = o.finished == o.total || (p.stopReason != "" && o.running == 0 && o.waiting == 0)
	unhandled := ""
	if o.done && p.failedStep == "" {
		unhandled = p.unhandledFailure()
	}
	switch {
	case o.done && p.stopReason == ergonv1alpha1.ReasonCancelled:
		o.phase, o.reason, o.message = ergonv1alpha1.RunCancelled, ergonv1alpha1.ReasonCancelled, "the Run was cancelled"
	case o.done && p.stopReason == ergonv1alpha1.ReasonRunTimedOut:
		o.phase, o.reason, o.message = ergonv1alpha1.RunFailed, ergonv1alpha1.ReasonRunTimedOut,
			fmt.Sprintf("the Run ran past its timeout of %s", p.f.Run.Spec.Timeout.Duration)
	case o.done && p.failedStep != "":
		s := p.state(p.failedStep)
		o.phase, o.reason = ergonv1alpha1.RunFailed, ergonv1alpha1.ReasonStepFailed
		if s.Reason == ergonv1alpha1.ReasonStepTimedOut {
			o.reason = ergonv1alpha1.ReasonStepTimedOut
		}
		o.message = fmt.Sprintf("step %s failed: %s", s.Name, s.Message)
	case unhandled != "":
		o.phase, o.reason = ergonv1alpha1.RunFailed, ergonv1alpha1.ReasonFailureUnhandled
		o.message = fmt.Sprintf("step %s failed and no failure branch handled it: %s", unhandled, p.state(unhandled).Message)
	case o.done:
		o.phase, o.reason, o.message = ergonv1alpha1.RunSucceeded, ergonv1alpha1.ReasonSucceeded, fmt.Sprintf("all %d steps finished", o.total)
	}
	return o
}

// finish derives the Run's phase, progress, outputs and Succeeded condition from its steps.
func (p *planner) finish(status *ergonv1alpha1.RunStatus) {
	o := p.graphOutcome()
	phase, reason, message := o.phase, o.reason, o.message
	finished, total := o.finished, o.total
	if fin := p.f.Scene.Finally; fin != nil {
		total += fin.Len() // finally steps count from the start, so the total never grows
	}
	if o.done {
		// The Run ends with the graph's outcome once its finally steps have ended too.
		phase, reason, message, finished, total = p.finalizingPhase(o)
	}
	status.Progress = fmt.Sprintf("%d/%d", finished, total)
	switch {
	case phase.Finished():
	case p.suspended():
		phase, reason, message = ergonv1alpha1.RunSuspended, ergonv1alpha1.ReasonSuspended, p.suspendedMessage(o)
	case o.done:
	case o.running == 0 && o.waiting > 0:
		phase, reason, message = ergonv1alpha1.RunWaiting, ergonv1alpha1.ReasonWaiting, p.waitingOn()
	default:
		if why := p.holdingUp(); why != "" {
			message += "; " + why
		}
	}
	p.suspensionEvents(status.Phase, phase)

	if phase != status.Phase && phase.Finished() {
		now := p.now
		status.FinishedAt = &now
		p.event(phase != ergonv1alpha1.RunSucceeded, "Run"+string(phase), "Run %s %s: %s", p.f.Run.Name, phase, message)
	}
	status.Phase = phase
	if sinks := p.f.Scene.Graph.Sinks(); phase == ergonv1alpha1.RunSucceeded && len(sinks) <= MaxRunOutputs {
		status.Outputs = map[string]ergonv1alpha1.OutputValue{}
		for _, name := range sinks {
			if s := p.state(name); s != nil && s.Output != nil {
				status.Outputs[name] = *s.Output
			}
		}
	}
	cond := metav1.Condition{
		Type: ergonv1alpha1.ConditionSucceeded, Status: metav1.ConditionUnknown,
		Reason: reason, Message: message, ObservedGeneration: p.f.Run.Generation, LastTransitionTime: p.now,
	}
	if phase.Finished() {
		cond.Status = metav1.ConditionFalse
		if phase == ergonv1alpha1.RunSucceeded {
			cond.Status = metav1.ConditionTrue
		}
	}
	meta.SetStatusCondition(&status.Conditions, cond)
}

// waitingOn says what a Run whose steps all wait is waiting on: a Gate, or a Workspace.
func (p *planner) waitingOn() string {
	for _, name := range p.order {
		if s := p.steps[name]; s.Phase == ergonv1alpha1.StepWaiting && s.Gate == "" {
			return fmt.Sprintf("step %s waits (%s): %s", name, s.Reason, s.Message)
		}
	}
	return "waiting on a Gate"
}
