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

package compile

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

func TestArtifactsAreCheckedWithTheirFieldPath(t *testing.T) {
	makes := func(name string, arts ...ergonv1alpha1.Artifact) ergonv1alpha1.Step {
		s := run(name, "x")
		s.Artifacts = arts
		return s
	}
	reads := func(name string, deps []string, in ...ergonv1alpha1.InputArtifact) ergonv1alpha1.Step {
		s := run(name, "x", deps...)
		s.InputArtifacts = in
		return s
	}
	report := ergonv1alpha1.Artifact{Name: "report.md"}
	gate := ergonv1alpha1.Step{Name: "g", Gate: &ergonv1alpha1.GateStep{Message: "ok?"}, Artifacts: []ergonv1alpha1.Artifact{report}}
	fan := makes("fan", report)
	fan.ForEach = &ergonv1alpha1.ForEach{Items: &apiextensionsv1.JSON{Raw: []byte(`["a"]`)}}
	cases := []struct {
		name      string
		workspace bool
		steps     []ergonv1alpha1.Step
		want      []string
	}{
		{"a gate with artifacts", false, []ergonv1alpha1.Step{gate}, []string{"spec.steps[0].artifacts", "only a container or agent step"}},
		{"a forEach with artifacts", false, []ergonv1alpha1.Step{fan}, []string{"spec.steps[0].artifacts", "without forEach or loop"}},
		{"an agent writing outside a Workspace", false, []ergonv1alpha1.Step{{Name: "a", Agent: &ergonv1alpha1.AgentStep{Prompt: "x"},
			Artifacts: []ergonv1alpha1.Artifact{{Name: "notes.md", Path: "/tmp/notes.md"}}}},
			[]string{"spec.steps[0].artifacts[0].path", "in its Workspace"}},
		{"an agent writing to the default directory", true, []ergonv1alpha1.Step{{Name: "a", Agent: &ergonv1alpha1.AgentStep{Prompt: "x"},
			Artifacts: []ergonv1alpha1.Artifact{{Name: "notes.md"}}}},
			[]string{"spec.steps[0].artifacts[0].path", "under /workspace/"}},
		{"a bad name", false, []ergonv1alpha1.Step{makes("a", ergonv1alpha1.Artifact{Name: "../x"})},
			[]string{"spec.steps[0].artifacts[0].name", "not an artifact name"}},
		{"a name twice", false, []ergonv1alpha1.Step{makes("a", report, report)},
			[]string{"spec.steps[0].artifacts[1].name", "Duplicate"}},
		{"a path outside /tmp", false, []ergonv1alpha1.Step{makes("a", ergonv1alpha1.Artifact{Name: "x", Path: "/etc/passwd"})},
			[]string{"spec.steps[0].artifacts[0].path", "must be under /tmp/"}},
		{"/workspace without a Workspace", false, []ergonv1alpha1.Step{makes("a", ergonv1alpha1.Artifact{Name: "x", Path: "/workspace/x"})},
			[]string{"spec.steps[0].artifacts[0].path", "must be under /tmp/"}},
		{"a path that climbs", false, []ergonv1alpha1.Step{makes("a", ergonv1alpha1.Artifact{Name: "x", Path: "/tmp/../etc/x"})},
			[]string{"spec.steps[0].artifacts[0].path", "clean"}},
		{"a relative path", false, []ergonv1alpha1.Step{makes("a", ergonv1alpha1.Artifact{Name: "x", Path: "tmp/x"})},
			[]string{"spec.steps[0].artifacts[0].path", "absolute"}},
		{"one path twice", false, []ergonv1alpha1.Step{makes("a", report), reads("b", []string{"a"},
			ergonv1alpha1.InputArtifact{Step: "a", Name: "report.md", Path: "/tmp/x"},
			ergonv1alpha1.InputArtifact{Step: "a", Name: "report.md", Path: "/tmp/x"})},
			[]string{"spec.steps[1].inputArtifacts[1].path", "also the path of spec.steps[1].inputArtifacts[0].path"}},
		{"an input of a step that does not run before", false, []ergonv1alpha1.Step{makes("a", report),
			reads("b", nil, ergonv1alpha1.InputArtifact{Step: "a", Name: "report.md"})},
			[]string{"spec.steps[1].inputArtifacts[0].step", "does not run before"}},
		{"an input of an unknown step", false, []ergonv1alpha1.Step{reads("b", nil, ergonv1alpha1.InputArtifact{Step: "a", Name: "x"})},
			[]string{"spec.steps[0].inputArtifacts[0].step", "Not found"}},
		{"an input the step does not make", false, []ergonv1alpha1.Step{makes("a", report),
			reads("b", []string{"a"}, ergonv1alpha1.InputArtifact{Step: "a", Name: "other.md"})},
			[]string{"spec.steps[1].inputArtifacts[0].name", `step a declares no artifact "other.md"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := &ergonv1alpha1.SceneSpec{Steps: tc.steps}
			if tc.workspace {
				spec.Workspace = &corev1.LocalObjectReference{Name: "w"}
			}
			_, errs := Compile(spec)
			if len(errs) == 0 {
				t.Fatal("the Scene compiled")
			}
			msg := errs.ToAggregate().Error()
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not contain %q", msg, w)
				}
			}
		})
	}

	// What is right compiles: an input through another step, paths under /tmp and the
	// Workspace, defaults.
	ok := &ergonv1alpha1.SceneSpec{Workspace: &corev1.LocalObjectReference{Name: "w"}, Steps: []ergonv1alpha1.Step{
		makes("a", report, ergonv1alpha1.Artifact{Name: "chart.svg", Path: "/workspace/out/chart.svg", MediaType: "image/svg+xml"}),
		run("mid", "x", "a"),
		reads("b", []string{"mid"}, ergonv1alpha1.InputArtifact{Step: "a", Name: "report.md"},
			ergonv1alpha1.InputArtifact{Step: "a", Name: "chart.svg", Path: "/tmp/in/chart.svg"}),
	}}
	ok.Steps = append(ok.Steps, ergonv1alpha1.Step{Name: "look", DependsOn: []string{"b"}, Agent: &ergonv1alpha1.AgentStep{Prompt: "x"},
		InputArtifacts: []ergonv1alpha1.InputArtifact{{Step: "a", Name: "chart.svg"}},
		Artifacts:      []ergonv1alpha1.Artifact{{Name: "review.md", Path: "/workspace/review.md"}}})
	if _, errs := Compile(ok); len(errs) > 0 {
		t.Fatalf("a right Scene was refused: %v", errs.ToAggregate())
	}
}
