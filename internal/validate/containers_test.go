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
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

func TestImageReferences(t *testing.T) {
	for _, good := range []string{"busybox", "busybox:1.36", "busybox:test", "library/busybox", "ghcr.io/org/tool:v1.2.3-rc.1",
		"registry.example:5000/team/tool", "localhost:5000/x_y/z__w", "a.b-c.d/e/f:g", "ergon/manager:compare-1796158054",
		"alpine@sha256:" + strings.Repeat("ab", 32), "alpine:3.20@sha256:" + strings.Repeat("0f", 32)} {
		if !imageReference.MatchString(good) {
			t.Errorf("%q refused", good)
		}
	}
	for _, bad := range []string{"Busybox", "busybox:", "bad image", "busybox::1", "-x/y", "x/Y",
		"busybox@sha256:12", "x:tag/more", " busybox"} {
		if imageReference.MatchString(bad) {
			t.Errorf("%q admitted", bad)
		}
	}
}

func TestValidateContainersNamesTheField(t *testing.T) {
	c := &ergonv1alpha1.ContainerStep{Image: "Bad Image", Command: []string{"true"},
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("64Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("64Mi")}},
		Env: []corev1.EnvVar{{Name: "1BAD"}, {Name: "TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "Not_A_Name"}, Key: "a/b"}}},
			{Name: "ERGON_OUTPUT", Value: "/tmp/elsewhere"}, {Name: "NOT_ERGON_OUTPUT", Value: "fine"}},
		EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "ok-name"}}}},
	}
	errs := validateContainers(&ergonv1alpha1.SceneSpec{Finally: []ergonv1alpha1.Step{{Name: "a", Container: c}}})
	got := errs.ToAggregate().Error()
	for _, want := range []string{
		"spec.finally[0].container.image", "InvalidImageName",
		"spec.finally[0].container.resources.requests[cpu]", "the limit (1)",
		"spec.finally[0].container.env[0].name",
		"spec.finally[0].container.env[1].valueFrom.secretKeyRef.name", "no Secret can have this name",
		"spec.finally[0].container.env[1].valueFrom.secretKeyRef.key",
		"spec.finally[0].container.env[2].name: Invalid value: \"ERGON_OUTPUT\": names beginning with ERGON_ are the step contract's",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("%q lacks %q", got, want)
		}
	}
	if strings.Contains(got, "memory") || strings.Contains(got, "envFrom") || strings.Contains(got, "env[3]") {
		t.Errorf("a request equal to its limit or a good name refused: %q", got)
	}
}

func TestValidateContainersNamesTheResourceDefaults(t *testing.T) {
	q := resource.MustParse
	spec := &ergonv1alpha1.SceneSpec{
		StepResources: &corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceMemory: q("1Gi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: q("512Mi")}},
		Steps: []ergonv1alpha1.Step{
			{Name: "think", Agent: &ergonv1alpha1.AgentStep{Prompt: "p", Resources: &corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: q("-1")}}}},
			{Name: "fine", Agent: &ergonv1alpha1.AgentStep{Prompt: "p", Resources: &corev1.ResourceRequirements{}}},
			{Name: "zero", Container: &ergonv1alpha1.ContainerStep{Image: "busybox", Command: []string{"true"},
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: q("0")}}}},
		},
	}
	got := validateContainers(spec).ToAggregate().Error()
	for _, want := range []string{
		"spec.stepResources.requests[memory]", "the limit (512Mi)",
		"spec.steps[0].agent.resources.requests[cpu]", "must not be negative",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("%q lacks %q", got, want)
		}
	}
	if strings.Contains(got, "steps[1]") || strings.Contains(got, "steps[2]") {
		t.Errorf("empty or zero resources refused: %q", got)
	}
}
