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

import (
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/closure"
)

func TestObjectReadsFindEverySecretAndConfigMapASceneReads(t *testing.T) {
	key := func(name string) *corev1.SecretKeySelector {
		return &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: "k"}
	}
	withSecrets := ergonv1alpha1.Step{Name: "c", Container: &ergonv1alpha1.ContainerStep{Image: "x", Command: []string{"true"},
		Env: []corev1.EnvVar{
			{Name: "PLAIN", Value: "v"},
			{Name: "CM", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}, Key: "k"}}},
			{Name: "S", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: key("env")}},
		},
		EnvFrom: []corev1.EnvFromSource{
			{ConfigMapRef: &corev1.ConfigMapEnvSource{}},
			{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "envfrom"}}},
		}}}
	caller := scene("caller", withSecrets, callStep("call", "child"))
	caller.Spec.Params = []ergonv1alpha1.ParamSpec{{Name: "p"},
		{Name: "s", ValueFrom: &ergonv1alpha1.ParamValueSource{SecretKeyRef: *key("param")}}}
	caller.Spec.Models = map[string]ergonv1alpha1.ModelSpec{
		"b": {APIKeySecretRef: key("model-b")}, "a": {APIKeySecretRef: key("model-a")}, "none": {}}
	child := scene("child", callStep("call", "grandchild"), callStep("back", "caller"))
	child.Spec.Models = map[string]ergonv1alpha1.ModelSpec{"default": {APIKeySecretRef: key("child-key")}}
	grandchild := scene("grandchild", withSecrets)

	c, err := closure.Walk(caller.Name, &caller.Spec, closure.Objects([]ergonv1alpha1.Scene{caller, child, grandchild}, nil))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, u := range ObjectReads(c) {
		got = append(got, fmt.Sprintf("%s %s %s %s", u.Path, u.Kind, u.Name, u.Via))
	}
	want := []string{
		"spec.params[1].valueFrom.secretKeyRef Secret param ",
		"spec.models[a].apiKeySecretRef Secret model-a ",
		"spec.models[b].apiKeySecretRef Secret model-b ",
		"spec.steps[0].container.env[1].valueFrom.configMapKeyRef ConfigMap settings ",
		"spec.steps[0].container.env[2].valueFrom.secretKeyRef Secret env ",
		"spec.steps[0].container.envFrom[0].configMapRef ConfigMap  ",
		"spec.steps[0].container.envFrom[1].secretRef Secret envfrom ",
		"spec.steps[1].scene.name Secret child-key Scene child's spec.models[default].apiKeySecretRef",
		"spec.steps[1].scene.name ConfigMap settings Scene grandchild's spec.steps[0].container.env[1].valueFrom.configMapKeyRef",
		"spec.steps[1].scene.name Secret env Scene grandchild's spec.steps[0].container.env[2].valueFrom.secretKeyRef",
		"spec.steps[1].scene.name ConfigMap  Scene grandchild's spec.steps[0].container.envFrom[0].configMapRef",
		"spec.steps[1].scene.name Secret envfrom Scene grandchild's spec.steps[0].container.envFrom[1].secretRef",
		// Scene child calls caller back: a cycle admission refuses, and the walk lists caller once.
	}
	if c.Cycle == nil || fmt.Sprint(c.Cycle.Scenes) != "[caller child caller]" {
		t.Errorf("cycle %+v, want caller -> child -> caller", c.Cycle)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("got\n%q\nwant\n%q", got, want)
	}
}
