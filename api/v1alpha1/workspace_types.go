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
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// WorkspaceSpec describes a sandboxed, long-lived environment of one user.
// +kubebuilder:validation:XValidation:rule="self.user == oldSelf.user",fieldPath=".user",reason="FieldValueForbidden",message="user is immutable: the Workspace's files are its user's; create another Workspace for another user"
type WorkspaceSpec struct {
	// user owns the Workspace: its files are theirs, and only they (or someone granted the verb
	// use on it) run steps in it.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	User string `json:"user"`

	// image of the workspace pod and of steps bound to it.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +required
	Image string `json:"image"`

	// resources of the workspace pod. Limits for cpu and memory are required.
	// +kubebuilder:validation:XValidation:rule="has(self.limits) && 'cpu' in self.limits && 'memory' in self.limits",message="resources.limits must set cpu and memory, for example {cpu: \"1\", memory: 2Gi}"
	// +required
	Resources corev1.ResourceRequirements `json:"resources"`

	// storage is the persistent volume mounted at /workspace.
	// +required
	Storage WorkspaceStorage `json:"storage"`

	// idleTimeout stops the pod after this long without use; the volume stays.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule=`self.matches("^(0|(([0-9]+([.][0-9]*)?|[.][0-9]+)(h|m|s|ms|us|ns))+)$") && duration(self) > duration("0s")`,message="idleTimeout must be a positive duration such as 1h"
	// +optional
	IdleTimeout *metav1.Duration `json:"idleTimeout,omitempty"`

	// network says where the pod may connect to. Ingress is always denied.
	// +optional
	Network *WorkspaceNetwork `json:"network,omitempty"`

	// runtimeClassName runs the pod in a sandboxing runtime such as gVisor or Kata.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	RuntimeClassName *string `json:"runtimeClassName,omitempty"`

	// env of the workspace pod; secrets come by secretKeyRef.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=128
	// +optional
	Env []corev1.EnvVar `json:"env,omitempty"`

	// reclaimPolicy says whether deleting the Workspace keeps its volume.
	// +kubebuilder:default=Retain
	// +optional
	ReclaimPolicy ReclaimPolicy `json:"reclaimPolicy,omitempty"`
}

// ReclaimPolicy says what happens to a Workspace's volume when it is deleted.
// +kubebuilder:validation:Enum=Retain;Delete
type ReclaimPolicy string

// Reclaim policies.
const (
	ReclaimRetain ReclaimPolicy = "Retain"
	ReclaimDelete ReclaimPolicy = "Delete"
)

// WorkspaceStorage is the persistent volume of a Workspace.
type WorkspaceStorage struct {
	// size of the volume, for example 10Gi.
	// +required
	Size resource.Quantity `json:"size"`

	// storageClassName of the volume; the cluster's default if unset.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	StorageClassName *string `json:"storageClassName,omitempty"`
}

// EgressPolicy says where a Workspace may connect to.
// +kubebuilder:validation:Enum=Deny;Allow;CIDRs
type EgressPolicy string

// Egress policies.
const (
	EgressDeny  EgressPolicy = "Deny"
	EgressAllow EgressPolicy = "Allow"
	EgressCIDRs EgressPolicy = "CIDRs"
)

// WorkspaceNetwork is the network policy of a Workspace.
// +kubebuilder:validation:XValidation:rule="(self.egress == 'CIDRs') == (has(self.cidrs) && size(self.cidrs) > 0)",message="cidrs are set exactly when egress is CIDRs"
type WorkspaceNetwork struct {
	// egress is Deny (no connections out, DNS included), Allow, or CIDRs (only to cidrs).
	// +kubebuilder:default=Deny
	// +optional
	Egress EgressPolicy `json:"egress,omitempty"`

	// cidrs the pod may connect to when egress is CIDRs.
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=64
	// +kubebuilder:validation:items:XValidation:rule="isCIDR(self)",message="each entry of cidrs must be a CIDR such as 10.0.0.0/8"
	// +optional
	CIDRs []string `json:"cidrs,omitempty"`
}

// WorkspacePhase is where a Workspace is in its life.
// +kubebuilder:validation:Enum=Pending;Running;Idle;Failed
type WorkspacePhase string

// Workspace phases.
const (
	WorkspacePending WorkspacePhase = "Pending"
	WorkspaceRunning WorkspacePhase = "Running"
	WorkspaceIdle    WorkspacePhase = "Idle"
	WorkspaceFailed  WorkspacePhase = "Failed"
)

// WorkspaceStatus is what Ergon observed of a Workspace.
type WorkspaceStatus struct {
	// observedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// phase of the Workspace.
	// +optional
	Phase WorkspacePhase `json:"phase,omitempty"`

	// conditions of the Workspace.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// podName of the workspace pod.
	// +optional
	PodName string `json:"podName,omitempty"`

	// claimName of the workspace volume.
	// +optional
	ClaimName string `json:"claimName,omitempty"`

	// claimUID is the UID of the claim the Workspace made (or, made by an earlier version of
	// Ergon, took over once). Only that claim is the Workspace's: one of the same name with
	// another UID is never mounted, changed or deleted.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=128
	// +optional
	ClaimUID types.UID `json:"claimUID,omitempty"`

	// lastActivityTime is when the Workspace was last used.
	// +optional
	LastActivityTime *metav1.Time `json:"lastActivityTime,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=ws,categories=ergon
// +kubebuilder:printcolumn:name="User",type=string,JSONPath=`.spec.user`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Pod",type=string,JSONPath=`.status.podName`,priority=1
// +kubebuilder:printcolumn:name="Image",type=string,JSONPath=`.spec.image`,priority=1
// +kubebuilder:printcolumn:name="Claim",type=string,JSONPath=`.status.claimName`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// Workspace is a sandboxed, long-lived pod of one user with a persistent volume, where agent
// steps run their tools.
type Workspace struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is a standard object metadata
	// +optional
	metav1.ObjectMeta `json:"metadata,omitzero"`

	// spec describes the environment.
	// +required
	Spec WorkspaceSpec `json:"spec"`

	// status is what Ergon observed.
	// +optional
	Status WorkspaceStatus `json:"status,omitzero"`
}

// +kubebuilder:object:root=true

// WorkspaceList contains a list of Workspace
type WorkspaceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitzero"`
	Items           []Workspace `json:"items"`
}

func init() {
	SchemeBuilder.Register(func(s *runtime.Scheme) error {
		s.AddKnownTypes(SchemeGroupVersion, &Workspace{}, &WorkspaceList{})
		return nil
	})
}
