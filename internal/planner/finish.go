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

// finish derives the Run's phase, progress, outputs and Succeeded condition from its steps.
func (p *planner) finish(status *ergonv1alpha1.RunStatus) {
	total := p.f.Scene.Graph.Len()
	finished, running, waiting := 0, 0, 0
	for _, name := range p.f.Scene.Graph.Names() {
		s := p.state(name)
		switch {
		case s == nil:
		case s.Phase.Finished():
			finished++
		case s.Phase == ergonv1alpha1.StepWaiting:
			waiting++
		default:
			running++
		}
	}
	status.Progress = fmt.Sprintf("%d/%d", finished, total)

	phase, reason, message := ergonv1alpha1.RunRunning, ergonv1alpha1.ReasonRunning, fmt.Sprintf("%d of %d steps finished", finished, total)
	done := finished == total || (p.stopReason != "" && running == 0 && waiting == 0)
	switch {
	case done && p.stopReason == ergonv1alpha1.ReasonCancelled:
		phase, reason, message = ergonv1alpha1.RunCancelled, ergonv1alpha1.ReasonCancelled, "the Run was cancelled"
	case done && p.stopReason == ergonv1alpha1.ReasonRunTimedOut:
		phase, reason, message = ergonv1alpha1.RunFailed, ergonv1alpha1.ReasonRunTimedOut,
			fmt.Sprintf("the Run ran past its timeout of %s", p.f.Run.Spec.Timeout.Duration)
	case done && p.failedStep != "":
		s := p.state(p.failedStep)
		phase, reason = ergonv1alpha1.RunFailed, ergonv1alpha1.ReasonStepFailed
		if s.Reason == ergonv1alpha1.ReasonStepTimedOut {
			reason = ergonv1alpha1.ReasonStepTimedOut
		}
		message = fmt.Sprintf("step %s failed: %s", s.Name, s.Message)
	case done:
		phase, reason, message = ergonv1alpha1.RunSucceeded, ergonv1alpha1.ReasonSucceeded, fmt.Sprintf("all %d steps finished", total)
	case running == 0 && waiting > 0:
		phase, reason, message = ergonv1alpha1.RunWaiting, ergonv1alpha1.ReasonWaiting, p.waitingOn()
	default:
		if why := p.holdingUp(); why != "" {
			message += "; " + why
		}
	}

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
