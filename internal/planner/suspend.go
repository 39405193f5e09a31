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

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

// suspended reports whether the Run is paused: spec.suspend is set and nothing stops the Run.
// A suspended Run follows its running steps to their end but starts no step, attempt, retry or
// Gate. Its timeout keeps running; cancelling it stops it as usual.
func (p *planner) suspended() bool {
	return p.f.Run.Spec.Suspend && p.stopReason == "" && p.outcomes.graphStop == ""
}

// suspendedMessage says what a suspended Run still does.
func (p *planner) suspendedMessage(o outcome) string {
	running := 0
	for _, s := range p.steps {
		if !s.Phase.Finished() && s.Phase != ergonv1alpha1.StepRetrying && (s.PodActive() || s.ChildRun != "" || s.Gate != "") {
			running++
		}
	}
	return fmt.Sprintf("suspended with %d of %d steps finished: %d still running, no new step starts until spec.suspend is false",
		o.finished, o.total, running)
}

// suspensionEvents tells when the Run is suspended and when it resumes.
func (p *planner) suspensionEvents(was, now ergonv1alpha1.RunPhase) {
	switch {
	case now == ergonv1alpha1.RunSuspended && was != ergonv1alpha1.RunSuspended:
		p.event(false, "RunSuspended", "Run %s suspended: running steps finish, no new step starts", p.f.Run.Name)
	case was == ergonv1alpha1.RunSuspended && now != ergonv1alpha1.RunSuspended:
		p.event(false, "RunResumed", "Run %s resumed", p.f.Run.Name)
	}
}
