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

package run

import (
	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/compile"
)

// finallyPending reports whether a finally step has not started yet: it may read the output
// of any step of the graph, so their whole outputs are gathered for it.
func finallyPending(scene *compile.Scene, phases map[string]ergonv1alpha1.StepPhase) bool {
	if scene.Finally == nil {
		return false
	}
	for _, name := range scene.Finally.Names() {
		if p := phases[name]; p == "" || p == ergonv1alpha1.StepPending {
			return true
		}
	}
	return false
}
