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
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/compile"
	"github.com/ergon-dev/ergon/internal/planner"
	"github.com/ergon-dev/ergon/internal/stepcontract"
)

func TestResolveStepBinaries(t *testing.T) {
	cases := []struct {
		mode, version string
		want          StepBinaries
		err           bool
	}{
		{"copy", "", BinariesCopy, false},
		{"image-volume", "", BinariesImageVolume, false},
		{"auto", "v1.35.0", BinariesImageVolume, false},
		{"auto", "v1.37.2+k3s1", BinariesImageVolume, false},
		{"auto", "v1.34.9", BinariesCopy, false},
		{"auto", "v1.9.0", BinariesCopy, false},
		{"auto", "garbage", "", true},
		{"mount", "v1.35.0", "", true},
	}
	for _, c := range cases {
		got, err := ResolveStepBinaries(c.mode, c.version)
		if (err != nil) != c.err || got != c.want {
			t.Errorf("ResolveStepBinaries(%q, %q) = %q, %v; want %q, error %v", c.mode, c.version, got, err, c.want, c.err)
		}
	}
}

// TestStepPodBinaries builds a container step's pod both ways: the entrypoint the step
// container runs must be where the pod puts it, read-only, and the pod must meet the
// restricted profile either way.
func TestStepPodBinaries(t *testing.T) {
	evaluator, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	run := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "ns", UID: "u"}}
	step := &compile.Step{Name: "s", Spec: &ergonv1alpha1.Step{Name: "s",
		Container: &ergonv1alpha1.ContainerStep{Image: "busybox", Command: []string{"true"}}}}
	req := planner.PodRequest{Name: "r-s-1", Step: step, Attempt: 1, Rendered: &compile.Rendered{Command: []string{"true"}}}
	for _, mode := range []StepBinaries{BinariesCopy, BinariesImageVolume} {
		t.Run(string(mode), func(t *testing.T) {
			pod := stepPod(run, &compile.Scene{}, req, podParts{bins: ergonBinaries{Image: "ergon/manager:v1", Mode: mode}})
			main := pod.Spec.Containers[0]
			var bin *corev1.Volume
			for i := range pod.Spec.Volumes {
				if pod.Spec.Volumes[i].Name == binVolume {
					bin = &pod.Spec.Volumes[i]
				}
			}
			if bin == nil || !slices.ContainsFunc(main.VolumeMounts, func(m corev1.VolumeMount) bool {
				return m.Name == binVolume && m.MountPath == stepcontract.BinDir && m.ReadOnly
			}) {
				t.Fatalf("the step container does not mount %s read-only at %s", binVolume, stepcontract.BinDir)
			}
			switch mode {
			case BinariesCopy:
				if bin.EmptyDir == nil || len(pod.Spec.InitContainers) != 1 || main.Command[0] != entrypointPath {
					t.Errorf("copy: volume %+v, %d init containers, command %q", bin.VolumeSource, len(pod.Spec.InitContainers), main.Command)
				}
			case BinariesImageVolume:
				if bin.Image == nil || bin.Image.Reference != "ergon/manager:v1" || len(pod.Spec.InitContainers) != 0 ||
					main.Command[0] != stepcontract.BinDir+EntrypointInImage {
					t.Errorf("image volume: volume %+v, %d init containers, command %q", bin.VolumeSource, len(pod.Spec.InitContainers), main.Command)
				}
			}
			res := policy.AggregateCheckResults(evaluator.EvaluatePod(
				api.LevelVersion{Level: api.LevelRestricted, Version: api.LatestVersion()}, &pod.ObjectMeta, &pod.Spec))
			if !res.Allowed {
				t.Errorf("breaks the restricted profile: %s: %s", res.ForbiddenReason(), res.ForbiddenDetail())
			}
		})
	}
}
