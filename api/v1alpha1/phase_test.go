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

package v1alpha1

import "testing"

func TestPhasesKnowWhenTheyAreFinished(t *testing.T) {
	runs := map[RunPhase]bool{
		RunPending: false, RunRunning: false, RunWaiting: false,
		RunSucceeded: true, RunFailed: true, RunCancelled: true,
	}
	for phase, want := range runs {
		if got := phase.Finished(); got != want {
			t.Errorf("RunPhase(%q).Finished() = %v, want %v", phase, got, want)
		}
	}
	steps := map[StepPhase]bool{
		StepPending: false, StepRunning: false, StepWaiting: false, StepRetrying: false,
		StepSucceeded: true, StepFailed: true, StepSkipped: true, StepCancelled: true,
	}
	for phase, want := range steps {
		if got := phase.Finished(); got != want {
			t.Errorf("StepPhase(%q).Finished() = %v, want %v", phase, got, want)
		}
	}
}
