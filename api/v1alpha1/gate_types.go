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
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// GateSpec is the question a Gate asks and, once given, its answer. Everything but decision
// and approvals is set by the Run controller and immutable.
// +kubebuilder:validation:XValidation:rule="self.step == oldSelf.step && has(self.message) == has(oldSelf.message) && (!has(self.message) || self.message == oldSelf.message) && has(self.options) == has(oldSelf.options) && (!has(self.options) || self.options == oldSelf.options) && has(self.approvers) == has(oldSelf.approvers) && (!has(self.approvers) || self.approvers == oldSelf.approvers) && has(self.minApprovals) == has(oldSelf.minApprovals) && (!has(self.minApprovals) || self.minApprovals == oldSelf.minApprovals) && has(self.forbidSelfApproval) == has(oldSelf.forbidSelfApproval) && (!has(self.forbidSelfApproval) || self.forbidSelfApproval == oldSelf.forbidSelfApproval) && has(self.timeout) == has(oldSelf.timeout) && (!has(self.timeout) || self.timeout == oldSelf.timeout) && has(self.onTimeout) == has(oldSelf.onTimeout) && (!has(self.onTimeout) || self.onTimeout == oldSelf.onTimeout)",reason="FieldValueForbidden",message="only decision and approvals of a Gate can change; the question is set by its Run"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.decision) || (has(self.decision) && self.decision == oldSelf.decision)",fieldPath=".decision",reason="FieldValueForbidden",message="a Gate is decided once; its decision cannot be changed or removed"
// +kubebuilder:validation:XValidation:rule="!has(self.decision) || self.decision.option in self.options",fieldPath=".decision.option",reason="FieldValueInvalid",message="decision.option must be one of the Gate's options"
// +kubebuilder:validation:XValidation:rule="!has(self.approvals) || self.approvals.all(a, a.option in self.options)",fieldPath=".approvals",reason="FieldValueInvalid",message="every approval's option must be one of the Gate's options"
// +kubebuilder:validation:XValidation:rule="!has(self.onTimeout) || self.onTimeout in self.options",fieldPath=".onTimeout",reason="FieldValueInvalid",message="onTimeout must be one of the options"
type GateSpec struct {
	// runRef names the Run that waits on this Gate.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="runRef is immutable; the Run controller creates a new Gate for another Run"
	// +required
	RunRef corev1.LocalObjectReference `json:"runRef"`

	// step is the Run's gate step.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +required
	Step string `json:"step"`

	// message is the rendered question.
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	Message string `json:"message,omitempty"`

	// options the approver chooses from.
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=10
	// +kubebuilder:validation:items:Pattern=`^[a-z][a-z0-9_-]{0,31}$`
	// +kubebuilder:validation:items:MaxLength=32
	// +kubebuilder:default={approve,reject}
	// +optional
	Options []string `json:"options,omitempty"`

	// approvers may decide, besides anyone granted the verb approve on gates by RBAC.
	// +optional
	Approvers *Approvers `json:"approvers,omitempty"`

	// minApprovals is how many different people must approve; any rejection decides.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10
	// +kubebuilder:default=1
	// +optional
	MinApprovals *int32 `json:"minApprovals,omitempty"`

	// forbidSelfApproval keeps the person who created the Run from deciding.
	// +optional
	ForbidSelfApproval bool `json:"forbidSelfApproval,omitempty"`

	// timeout after which onTimeout decides.
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// onTimeout is the option chosen when the timeout passes.
	// +kubebuilder:validation:MaxLength=32
	// +optional
	OnTimeout string `json:"onTimeout,omitempty"`

	// input is the JSON Schema of the values an answer gives (an input Gate), from the gate
	// step's input or an agent's ask_human call.
	// +kubebuilder:validation:Type=object
	// +optional
	Input *apiextensionsv1.JSON `json:"input,omitempty"`

	// decision is the answer. The approver sets option and comment; the admission webhook
	// stamps user and groups from the request's identity, whatever the client sent.
	// +optional
	Decision *GateDecision `json:"decision,omitempty"`

	// approvals collects one stamped entry per person when minApprovals is above one.
	// +listType=map
	// +listMapKey=user
	// +kubebuilder:validation:MaxItems=10
	// +optional
	Approvals []GateApproval `json:"approvals,omitempty"`
}

// GateDecision is the answer to a Gate.
type GateDecision struct {
	// option chosen, one of the Gate's options.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=32
	// +required
	Option string `json:"option"`

	// comment of the approver.
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	Comment string `json:"comment,omitempty"`

	// values answer an input Gate: an object valid against spec.input, completed with its
	// defaults by admission. An option that approves needs them; reject takes none.
	// +kubebuilder:validation:Type=object
	// +optional
	Values *apiextensionsv1.JSON `json:"values,omitempty"`

	// user who decided, stamped by the admission webhook.
	// +kubebuilder:validation:MaxLength=512
	// +optional
	User string `json:"user,omitempty"`

	// groups of the user who decided, stamped by the admission webhook.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:MaxLength=512
	// +optional
	Groups []string `json:"groups,omitempty"`
}

// GateApproval is one person's vote on a Gate that needs several approvals.
type GateApproval struct {
	// user who voted, stamped by the admission webhook.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +required
	User string `json:"user"`

	// groups of the user, stamped by the admission webhook.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:MaxLength=512
	// +optional
	Groups []string `json:"groups,omitempty"`

	// option chosen.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=32
	// +required
	Option string `json:"option"`

	// comment of the user.
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	Comment string `json:"comment,omitempty"`

	// values answer an input Gate, as the decision's do; a quorum needs the same values.
	// +kubebuilder:validation:Type=object
	// +optional
	Values *apiextensionsv1.JSON `json:"values,omitempty"`
}

// GatePhase is where a Gate is in its life. Every phase but Pending is final: Approved,
// Rejected and TimedOut say what decided it; Closed says its Run ended (cancelled, timed out,
// failed) before anyone decided, so that nobody can decide it any more.
// +kubebuilder:validation:Enum=Pending;Approved;Rejected;TimedOut;Closed
type GatePhase string

// Gate phases.
const (
	GatePending  GatePhase = "Pending"
	GateApproved GatePhase = "Approved"
	GateRejected GatePhase = "Rejected"
	GateTimedOut GatePhase = "TimedOut"
	GateClosed   GatePhase = "Closed"
)

// Open reports whether a Gate in this phase still takes a decision: Pending, or not yet
// reported by the Gate controller.
func (p GatePhase) Open() bool { return p == "" || p == GatePending }

// GateStatus is what Ergon observed of a Gate.
type GateStatus struct {
	// observedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// phase of the Gate.
	// +optional
	Phase GatePhase `json:"phase,omitempty"`

	// option that decided the Gate.
	// +optional
	Option string `json:"option,omitempty"`

	// decidedBy is the user who decided, or "timeout".
	// +optional
	DecidedBy string `json:"decidedBy,omitempty"`

	// decidedAt is when the Gate was decided.
	// +optional
	DecidedAt *metav1.Time `json:"decidedAt,omitempty"`

	// values are the answer of an input Gate that was approved: the values the deciding
	// people gave, or the input's defaults when the timeout decided.
	// +kubebuilder:validation:Type=object
	// +optional
	Values *apiextensionsv1.JSON `json:"values,omitempty"`

	// expiresAt is when the timeout decides the Gate.
	// +optional
	ExpiresAt *metav1.Time `json:"expiresAt,omitempty"`

	// conditions of the Gate.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=gt,categories=ergon
// +kubebuilder:printcolumn:name="Run",type=string,JSONPath=`.spec.runRef.name`
// +kubebuilder:printcolumn:name="Step",type=string,JSONPath=`.spec.step`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Decided-By",type=string,JSONPath=`.status.decidedBy`
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.spec.message`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// Gate pauses a Run until a person allowed by RBAC, or listed as an approver, decides.
type Gate struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is a standard object metadata
	// +optional
	metav1.ObjectMeta `json:"metadata,omitzero"`

	// spec is the question and its answer.
	// +required
	Spec GateSpec `json:"spec"`

	// status is what Ergon observed.
	// +optional
	Status GateStatus `json:"status,omitzero"`
}

// +kubebuilder:object:root=true

// GateList contains a list of Gate
type GateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitzero"`
	Items           []Gate `json:"items"`
}

func init() {
	SchemeBuilder.Register(func(s *runtime.Scheme) error {
		s.AddKnownTypes(SchemeGroupVersion, &Gate{}, &GateList{})
		return nil
	})
}
