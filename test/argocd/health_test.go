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

package argocd

import (
	"testing"

	"sigs.k8s.io/yaml"
)

// The controllers' test suite runs these scripts on real objects; these cases cover the
// corners an API server does not produce on demand: no status yet, an old generation.
func TestHealthChecksSayWhatAnArgoCDUserExpects(t *testing.T) {
	for _, tc := range []struct {
		name, kind, object, want string
	}{
		{"a Scene with no status yet is progressing", "scene", `metadata: {generation: 1}`, "Progressing"},
		{"a Scene whose status describes an older generation is progressing", "scene", `
metadata: {generation: 2}
status: {observedGeneration: 1, conditions: [{type: Ready, status: "True", reason: Compiled}]}`, "Progressing"},
		{"a compiled Scene is healthy", "scene", `
metadata: {generation: 2}
status: {observedGeneration: 2, conditions: [{type: Ready, status: "True", reason: Compiled}]}`, "Healthy"},
		{"a Scene calling a missing Scene is progressing", "scene", `
metadata: {generation: 1}
status:
  observedGeneration: 1
  conditions:
  - {type: Ready, status: "False", reason: SceneRefMissing}
  - {type: Reconciling, status: "True", reason: SceneRefMissing}`, "Progressing"},
		{"a Scene that does not compile is degraded", "scene", `
metadata: {generation: 1}
status:
  observedGeneration: 1
  conditions:
  - {type: Ready, status: "False", reason: CompileFailed}
  - {type: Stalled, status: "True", reason: CompileFailed, message: bad}`, "Degraded"},
		{"a Run with no status is progressing", "run", `metadata: {generation: 1}`, "Progressing"},
		{"a running Run is progressing", "run", `status: {phase: Running}`, "Progressing"},
		{"a Run waiting on a Gate is suspended", "run", `status: {phase: Waiting}`, "Suspended"},
		{"a suspended Run is suspended", "run", `status: {phase: Suspended}`, "Suspended"},
		{"a succeeded Run is healthy", "run", `status: {phase: Succeeded}`, "Healthy"},
		{"a failed Run is degraded", "run", `
status: {phase: Failed, conditions: [{type: Succeeded, status: "False", message: step x failed}]}`, "Degraded"},
		{"a cancelled Run is degraded", "run", `status: {phase: Cancelled}`, "Degraded"},
		{"a new Gate is suspended", "gate", `spec: {message: "Publish?"}`, "Suspended"},
		{"a pending Gate is suspended", "gate", `status: {phase: Pending}`, "Suspended"},
		{"a rejected Gate is healthy", "gate", `status: {phase: Rejected, decidedBy: alice}`, "Healthy"},
		{"a Trigger with no status is progressing", "trigger", `metadata: {generation: 1}`, "Progressing"},
		{"a scheduled Trigger is healthy", "trigger", `
metadata: {generation: 1}
status: {observedGeneration: 1, conditions: [{type: Ready, status: "True", reason: Scheduled}]}`, "Healthy"},
		{"a suspended Trigger is suspended", "trigger", `
metadata: {generation: 1}
status: {observedGeneration: 1, conditions: [{type: Ready, status: "True", reason: Suspended}]}`, "Suspended"},
		{"a Trigger whose schedule does not parse is degraded", "trigger", `
metadata: {generation: 1}
status:
  observedGeneration: 1
  conditions:
  - {type: Ready, status: "False", reason: InvalidSchedule}
  - {type: Stalled, status: "True", reason: InvalidSchedule}`, "Degraded"},
		{"a Workspace the controller has not seen yet is progressing", "workspace", `metadata: {generation: 1}`, "Progressing"},
		{"a Workspace whose pod starts is progressing", "workspace", `
metadata: {generation: 1}
status: {observedGeneration: 1, phase: Pending}`, "Progressing"},
		{"a running Workspace is healthy", "workspace", `
metadata: {generation: 1}
status: {observedGeneration: 1, phase: Running}`, "Healthy"},
		{"an idle Workspace is suspended", "workspace", `
metadata: {generation: 1}
status: {observedGeneration: 1, phase: Idle}`, "Suspended"},
		{"a failed Workspace is degraded", "workspace", `
metadata: {generation: 1}
status: {observedGeneration: 1, phase: Failed}`, "Degraded"},
		{"a Workspace whose status describes an older generation is progressing", "workspace", `
metadata: {generation: 2}
status: {observedGeneration: 1, phase: Running}`, "Progressing"},
		{"a WorkspacePool the controller has not seen yet is progressing", "workspacepool", `metadata: {generation: 1}`, "Progressing"},
		{"a WorkspacePool warming is progressing", "workspacepool", `
metadata: {generation: 1}
status:
  observedGeneration: 1
  conditions:
  - {type: Ready, status: "False", reason: Warming, message: 1 of 2 warm pods ready}`, "Progressing"},
		{"a WorkspacePool with its warm pods ready is healthy", "workspacepool", `
metadata: {generation: 1}
status:
  observedGeneration: 1
  conditions:
  - {type: Ready, status: "True", reason: Ready, message: 2 of 2 warm pods ready}`, "Healthy"},
		{"a WorkspacePool whose editor may not create pods is degraded", "workspacepool", `
metadata: {generation: 1}
status:
  observedGeneration: 1
  conditions:
  - {type: Ready, status: "False", reason: NotAuthorized, message: mallory may not create pods}`, "Degraded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			script, err := Script(tc.kind)
			if err != nil {
				t.Fatal(err)
			}
			obj := map[string]any{}
			if err := yaml.Unmarshal([]byte(tc.object), &obj); err != nil {
				t.Fatal(err)
			}
			h, err := Run(script, obj)
			if err != nil {
				t.Fatal(err)
			}
			if h.Status != tc.want {
				t.Errorf("health is %s (%q), want %s", h.Status, h.Message, tc.want)
			}
		})
	}
}

func TestTheRunnerRefusesAStatusArgoCDDoesNotKnow(t *testing.T) {
	if _, err := Run(`return {status = "Fine"}`, map[string]any{}); err == nil {
		t.Error("a script returning status Fine passed")
	}
	if _, err := Run(`return string.lower("X")`, map[string]any{}); err == nil {
		t.Error("a script using the string library, which Argo CD does not open, passed")
	}
}
