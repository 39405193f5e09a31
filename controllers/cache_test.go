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

package controllers

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/controllers/internal/shared"
	"github.com/ergon-dev/ergon/internal/planner"
)

// TestTheCacheSlimsStepPods checks that a Run's step pod loses in the cache what no
// controller reads, and that the planner sees the same of it either way.
func TestTheCacheSlimsStepPods(t *testing.T) {
	deleted := metav1.Now()
	base := func() *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "r-a-1", Namespace: "ns", UID: "p",
				Labels: map[string]string{ergonv1alpha1.LabelStep: "a", ergonv1alpha1.LabelAttempt: "2"},
				Annotations: map[string]string{annotationAgentSpec: string(make([]byte, 32<<10)),
					annotationInputPrefix + "up": "value"},
				ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "ergon", Operation: metav1.ManagedFieldsOperationUpdate}},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: ergonv1alpha1.GroupVersion.String(), Kind: "Run",
					Name: "r", UID: "u", Controller: new(true)}}},
			Spec: corev1.PodSpec{
				NodeName: "node-1",
				InitContainers: []corev1.Container{{Name: "ergon-bin", Image: "ergon/manager:v1",
					Command: []string{"/cp"}, VolumeMounts: []corev1.VolumeMount{{Name: "bin", MountPath: "/ergon/bin"}}}},
				Containers: []corev1.Container{{Name: shared.StepContainer, Image: "busybox:1",
					Command: []string{"/ergon/bin/entrypoint", "--", "sh", "-c", "make"},
					Env:     []corev1.EnvVar{{Name: "ERGON_RUN", Value: "r"}},
					Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
						corev1.ResourceMemory: resource.MustParse("64Mi")}}}},
				Volumes: []corev1.Volume{{Name: "bin"}},
			},
		}
	}
	oom := base()
	oom.Status = corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{{Name: shared.StepContainer,
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled"}}}}}
	pulling := base()
	pulling.Status = corev1.PodStatus{Phase: corev1.PodPending, InitContainerStatuses: []corev1.ContainerStatus{{Name: "ergon-bin",
		Image: "docker.io/ergon/manager:v1", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
			Reason: "ImagePullBackOff", Message: "back-off pulling"}}}}}
	starting := base()
	starting.Status = corev1.PodStatus{Phase: corev1.PodPending}
	gone := base()
	gone.DeletionTimestamp = &deleted
	gone.Status = corev1.PodStatus{Phase: corev1.PodRunning, Reason: "NodeLost"}

	for name, pod := range map[string]*corev1.Pod{"out of memory": oom, "an image that does not pull": pulling,
		"starting on its node": starting, "deleted while running": gone} {
		t.Run(name, func(t *testing.T) {
			got, err := keepRunControlled(pod.DeepCopy())
			if err != nil {
				t.Fatal(err)
			}
			slim := got.(*corev1.Pod)
			if len(slim.Annotations) > 0 || len(slim.ManagedFields) > 0 || len(slim.Spec.Volumes) > 0 ||
				slim.Spec.Containers[0].Command != nil || slim.Spec.Containers[0].Env != nil ||
				slim.Spec.InitContainers[0].VolumeMounts != nil {
				t.Errorf("the cached pod kept what no controller reads: %+v", slim)
			}
			if slim.Name != pod.Name || !equality.Semantic.DeepEqual(slim.Labels, pod.Labels) ||
				!equality.Semantic.DeepEqual(slim.OwnerReferences, pod.OwnerReferences) ||
				!equality.Semantic.DeepEqual(slim.Status, pod.Status) {
				t.Errorf("the cached pod lost its identity, labels, owner or status: %+v", slim)
			}
			want, have := planner.ObservePod(pod, shared.StepContainer), planner.ObservePod(slim, shared.StepContainer)
			if want.Reason == "" && want.Phase != planner.PodPending {
				t.Fatalf("the case tells nothing: %+v", want)
			}
			if !reflect.DeepEqual(want, have) {
				t.Errorf("the planner sees\n%+v\nof the cached pod, and\n%+v\nof the whole one", have, want)
			}
		})
	}
	t.Run("under an alternate name, it keeps the name it stands for", func(t *testing.T) {
		alt := base()
		alt.Annotations[ergonv1alpha1.AnnotationStandsFor] = "r-a-1-held"
		got, err := keepRunControlled(alt)
		if err != nil {
			t.Fatal(err)
		}
		if a := got.(*corev1.Pod).Annotations; len(a) != 1 || shared.StandsFor(got.(*corev1.Pod)) != "r-a-1-held" {
			t.Fatalf("annotations %v, want only the name it stands for", a)
		}
	})
}
