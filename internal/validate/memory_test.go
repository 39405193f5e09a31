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

package validate

import (
	"testing"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

func TestTheRememberToolNeedsAMemory(t *testing.T) {
	model := map[string]ergonv1alpha1.ModelSpec{"default": {BaseURL: "http://llm/v1", Model: "m"}}
	steps := []ergonv1alpha1.Step{agentStep("a", ergonv1alpha1.ToolHTTPFetch), agentStep("b", ergonv1alpha1.ToolRemember)}
	expectErrors(t, Scene(&ergonv1alpha1.SceneSpec{Models: model, Steps: steps}),
		[]string{"spec.steps[1].agent.tools[0]", "set spec.memory"})
	expectErrors(t, Scene(&ergonv1alpha1.SceneSpec{Models: model, Steps: steps,
		Memory: &ergonv1alpha1.SceneMemory{Name: "notes"}}), nil)
}
