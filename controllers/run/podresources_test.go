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
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestDefaultedResources(t *testing.T) {
	q := resource.MustParse
	own := corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: q("1Gi")}}
	scene := &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: q("250m")}}
	manager := &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: q("100m")}}
	for _, tc := range []struct {
		name           string
		own            corev1.ResourceRequirements
		scene, manager *corev1.ResourceRequirements
		want           corev1.ResourceRequirements
	}{
		{"the step's own resources win", own, scene, manager, own},
		{"the Scene's stepResources come next", corev1.ResourceRequirements{}, scene, manager, *scene},
		{"an empty stepResources asks for nothing", corev1.ResourceRequirements{}, &corev1.ResourceRequirements{}, manager,
			corev1.ResourceRequirements{}},
		{"the manager's defaults apply when neither sets any", corev1.ResourceRequirements{}, nil, manager, *manager},
		{"nothing is set where a LimitRange gives the defaults", corev1.ResourceRequirements{}, nil, nil,
			corev1.ResourceRequirements{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := defaultedResources(tc.own, tc.scene, tc.manager); !equality.Semantic.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestHasContainerDefaults(t *testing.T) {
	item := func(typ corev1.LimitType, def corev1.ResourceList) corev1.LimitRange {
		return corev1.LimitRange{Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{Type: typ, DefaultRequest: def}}}}
	}
	cpu := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
	for _, tc := range []struct {
		name   string
		ranges []corev1.LimitRange
		want   bool
	}{
		{"no LimitRange gives no defaults", nil, false},
		{"a container default request is a default", []corev1.LimitRange{item(corev1.LimitTypeContainer, cpu)}, true},
		{"a pod limit is no container default", []corev1.LimitRange{item(corev1.LimitTypePod, cpu)}, false},
		{"a container max alone is no default", []corev1.LimitRange{item(corev1.LimitTypeContainer, nil)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := hasContainerDefaults(tc.ranges); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestStepDefaultResources(t *testing.T) {
	r, err := StepDefaultResources("100m", "128Mi", "", "512Mi")
	if err != nil {
		t.Fatal(err)
	}
	if r.Requests.Cpu().String() != "100m" || r.Requests.Memory().String() != "128Mi" || r.Limits.Memory().String() != "512Mi" {
		t.Errorf("got %v", r)
	}
	if _, ok := r.Limits[corev1.ResourceCPU]; ok {
		t.Errorf("an empty flag set a CPU limit: %v", r)
	}
	if _, err := StepDefaultResources("lots", "", "", ""); err == nil {
		t.Error("a value that is no quantity was taken")
	}
}
