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

package kubectlergon

import (
	"bytes"
	"strings"
	"testing"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

func TestWriteArtifacts(t *testing.T) {
	run := &ergonv1alpha1.Run{}
	var out bytes.Buffer
	if writeArtifacts(&out, run) || out.Len() != 0 {
		t.Fatalf("a Run without artifacts printed %q", out.String())
	}
	sum := strings.Repeat("ab", 32)
	run.Status.Steps = []ergonv1alpha1.StepStatus{
		{Name: "render", Artifacts: []ergonv1alpha1.ArtifactStatus{
			{Name: "report.md", Attempt: 2, Size: 48213, SHA256: sum, MediaType: "text/markdown"},
			{Name: "data.bin", Attempt: 2, Size: 20 << 20, SHA256: sum},
		}},
		{Name: "plain"},
	}
	if !writeArtifacts(&out, run) {
		t.Fatal("the artifacts were not printed")
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "STEP") {
		t.Fatalf("printed %q", out.String())
	}
	for i, want := range [][]string{{"render", "2", "report.md", "48213", "text/markdown", sum}, {"render", "2", "data.bin", "20Mi", "-", sum}} {
		if got := strings.Fields(lines[i+1]); strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("line %d = %q, want %q", i+1, got, want)
		}
	}
}
