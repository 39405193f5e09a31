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
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// WorkspacePoolSpec asks for warm Workspaces of one shape: pods already running, each on an
// empty volume of its own, for new Workspaces of that shape to take.
type WorkspacePoolSpec struct {
	// replicas is how many warm pods (each with its volume) the pool keeps ready to be taken.
	// A Workspace that takes one makes the pool start another.
	// +kubebuilder:default=2
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=20
	// +optional
	Replicas int32 `json:"replicas"`

	// template is the shape of the Workspaces the pool serves. A new Workspace takes a warm
	// pod when its image, resources, storage, runtimeClassName and env are these exactly.
	// +required
	Template WorkspacePoolTemplate `json:"template"`
}

// WorkspacePoolTemplate is the part of a Workspace's spec that its pod and volume are made
// from.
type WorkspacePoolTemplate struct {
	// image of the warm pods, as a Workspace's spec.image.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +required
	Image string `json:"image"`

	// resources of the warm pods, as a Workspace's spec.resources.
	// +kubebuilder:validation:XValidation:rule="has(self.limits) && 'cpu' in self.limits && 'memory' in self.limits",message="resources.limits must set cpu and memory, for example {cpu: \"1\", memory: 2Gi}"
	// +required
	Resources corev1.ResourceRequirements `json:"resources"`

	// storage of the warm volumes, as a Workspace's spec.storage.
	// +required
	Storage WorkspaceStorage `json:"storage"`

	// runtimeClassName of the warm pods, as a Workspace's spec.runtimeClassName.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	RuntimeClassName *string `json:"runtimeClassName,omitempty"`

	// env of the warm pods, as a Workspace's spec.env, with values only: a warm pod is made
	// before anyone takes it, so it reads no Secret or ConfigMap for anyone.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=128
	// +kubebuilder:validation:XValidation:rule="self.all(e, !has(e.valueFrom))",message="env of a WorkspacePool takes values only (no valueFrom): a warm pod reads no Secret or ConfigMap before a Workspace takes it"
	// +optional
	Env []corev1.EnvVar `json:"env,omitempty"`
}

// WorkspacePoolEntry is one warm pod and its volume, of the same name, as the pool made them.
type WorkspacePoolEntry struct {
	// name of the pod and of its PersistentVolumeClaim.
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name"`

	// podUID is the UID of the pod the pool made.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=128
	// +required
	PodUID types.UID `json:"podUID"`

	// claimUID is the UID of the PersistentVolumeClaim the pool made.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=128
	// +required
	ClaimUID types.UID `json:"claimUID"`
}

// WorkspacePoolStatus is what Ergon observed of a WorkspacePool.
type WorkspacePoolStatus struct {
	// observedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions of the pool: Ready is True when replicas warm pods are ready to be taken.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// entries are the warm pods and volumes the pool made and no Workspace has taken yet.
	// Only these are ever handed to a Workspace: a pod or claim that merely names the pool as
	// its owner is not one of them.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=40
	// +optional
	Entries []WorkspacePoolEntry `json:"entries,omitempty"`

	// ready counts the entries whose pod is running and whose volume is bound.
	// +optional
	Ready int32 `json:"ready,omitempty"`

	// taken counts the warm pods Workspaces have taken from the pool.
	// +optional
	Taken int64 `json:"taken,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=wsp,categories=ergon
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.spec.replicas`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.ready`
// +kubebuilder:printcolumn:name="Taken",type=integer,JSONPath=`.status.taken`
// +kubebuilder:printcolumn:name="Image",type=string,JSONPath=`.spec.template.image`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// WorkspacePool keeps warm Workspace pods, each on an empty volume of its own, so that a new
// Workspace of the pool's shape is Running at once: it takes a warm pod and its volume, which
// are its own from then on and never go back to the pool.
type WorkspacePool struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is a standard object metadata
	// +optional
	metav1.ObjectMeta `json:"metadata,omitzero"`

	// spec describes the warm pods.
	// +required
	Spec WorkspacePoolSpec `json:"spec"`

	// status is what Ergon observed.
	// +optional
	Status WorkspacePoolStatus `json:"status,omitzero"`
}

// +kubebuilder:object:root=true

// WorkspacePoolList contains a list of WorkspacePool
type WorkspacePoolList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitzero"`
	Items           []WorkspacePool `json:"items"`
}

func init() {
	SchemeBuilder.Register(func(s *runtime.Scheme) error {
		s.AddKnownTypes(SchemeGroupVersion, &WorkspacePool{}, &WorkspacePoolList{})
		return nil
	})
}
