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
)

// TriggerSpec says which Scene to run, with what, and when.
// +kubebuilder:validation:XValidation:rule="[has(self.schedule), has(self.webhook), has(self.runCompleted)].filter(k, k).size() == 1",message="a Trigger has exactly one source: set one of schedule, webhook or runCompleted"
// +kubebuilder:validation:XValidation:rule="size(self.sceneRef.name) > 0",fieldPath=".sceneRef.name",reason="FieldValueRequired",message="sceneRef.name must name the Scene to run"
type TriggerSpec struct {
	// sceneRef names the Scene to run, in the Trigger's namespace.
	// +required
	SceneRef corev1.LocalObjectReference `json:"sceneRef"`

	// params of every Run the Trigger starts. A source's own params, mapped from its event,
	// take precedence.
	// +kubebuilder:validation:MaxProperties=64
	// +optional
	Params map[string]string `json:"params,omitempty"`

	// schedule starts Runs at the times of a cron schedule, as a CronJob does.
	// +optional
	Schedule *ScheduleSource `json:"schedule,omitempty"`

	// webhook starts a Run for each signed POST to /hooks/NAMESPACE/NAME on the manager.
	// +optional
	Webhook *WebhookSource `json:"webhook,omitempty"`

	// runCompleted starts a Run when a Run of another Scene ends.
	// +optional
	RunCompleted *RunCompletedSource `json:"runCompleted,omitempty"`

	// budget bounds what the Runs this Trigger created in the last 24 hours may use
	// (tokensPerDay, costPerDay, from their status.usage): once they have, the Trigger skips
	// the Runs it would start, with a Warning Event BudgetExceeded and the condition
	// BudgetExceeded, until the window frees.
	// +optional
	Budget *SceneBudget `json:"budget,omitempty"`

	// suspend stops the Trigger from starting Runs; Runs already started go on.
	// +optional
	Suspend *bool `json:"suspend,omitempty"`

	// successfulRunsHistoryLimit is how many succeeded Runs of the Trigger are kept.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	// +kubebuilder:default=3
	// +optional
	SuccessfulRunsHistoryLimit *int32 `json:"successfulRunsHistoryLimit,omitempty"`

	// failedRunsHistoryLimit is how many failed or cancelled Runs of the Trigger are kept.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	// +kubebuilder:default=1
	// +optional
	FailedRunsHistoryLimit *int32 `json:"failedRunsHistoryLimit,omitempty"`

	// runAs names a ServiceAccount of the Trigger's namespace that its Runs act as, instead of
	// whoever last changed the Trigger's spec. Whoever sets or keeps it in a change must be
	// allowed to impersonate it (verb impersonate on serviceaccounts).
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	// +optional
	RunAs string `json:"runAs,omitempty"`
}

// ConcurrencyPolicy says what a schedule does when its previous Run is still active.
// +kubebuilder:validation:Enum=Allow;Forbid;Replace
type ConcurrencyPolicy string

// Concurrency policies, as for a CronJob.
const (
	// AllowConcurrent starts the new Run beside the active ones.
	AllowConcurrent ConcurrencyPolicy = "Allow"
	// ForbidConcurrent skips the new Run while one is active.
	ForbidConcurrent ConcurrencyPolicy = "Forbid"
	// ReplaceConcurrent cancels the active Runs and starts the new one.
	ReplaceConcurrent ConcurrencyPolicy = "Replace"
)

// ScheduleSource is a cron schedule.
type ScheduleSource struct {
	// cron is a five-field schedule or an @-macro (@hourly, @daily, @weekly, @monthly,
	// @yearly), for example "0 9 * * MON".
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +required
	Cron string `json:"cron"`

	// timeZone is an IANA time zone name such as Europe/Berlin; the manager's zone if unset.
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[A-Za-z][A-Za-z0-9_+\-]*(/[A-Za-z0-9_+\-]+)*$`
	// +optional
	TimeZone *string `json:"timeZone,omitempty"`

	// concurrencyPolicy says what happens when a Run is due while the last one is active.
	// +kubebuilder:default=Allow
	// +optional
	ConcurrencyPolicy ConcurrencyPolicy `json:"concurrencyPolicy,omitempty"`

	// startingDeadlineSeconds is how late a missed schedule may still start, at least 1: the
	// controller wakes a moment after each start time, so 0 would let none start.
	// +kubebuilder:validation:Minimum=1
	// +optional
	StartingDeadlineSeconds *int64 `json:"startingDeadlineSeconds,omitempty"`
}

// WebhookFormat is how a webhook Trigger's deliveries are signed.
// +kubebuilder:validation:Enum=ergon;github
type WebhookFormat string

const (
	// WebhookFormatErgon signs the timestamp, the delivery id and the body:
	// X-Ergon-Signature is sha256= and the hex HMAC-SHA256 of TIMESTAMP.DELIVERY.BODY.
	WebhookFormatErgon WebhookFormat = "ergon"
	// WebhookFormatGitHub is GitHub's: X-Hub-Signature-256 is the HMAC-SHA256 of the body
	// alone, and X-GitHub-Delivery is required. It has no timestamp; see docs/triggers.md.
	WebhookFormatGitHub WebhookFormat = "github"
)

// WebhookSource accepts signed HTTP deliveries.
type WebhookSource struct {
	// secretRef selects the HMAC-SHA256 key deliveries are signed with.
	// +required
	SecretRef corev1.SecretKeySelector `json:"secretRef"`

	// format is how deliveries are signed, and the only way this Trigger accepts: ergon (the
	// default) signs the timestamp and the delivery id with the body; github is GitHub's
	// X-Hub-Signature-256 over the body, for GitHub's webhooks only.
	// +kubebuilder:default=ergon
	// +optional
	Format WebhookFormat `json:"format,omitempty"`

	// params maps param names to CEL expressions over the JSON body, for example
	// body.pull_request.number.
	// +kubebuilder:validation:MaxProperties=64
	// +optional
	Params map[string]string `json:"params,omitempty"`
}

// RunCompletedSource chains Scenes: a Run of one ends, a Run of this Trigger's Scene starts.
// +kubebuilder:validation:XValidation:rule="size(self.sceneRef.name) > 0",fieldPath=".sceneRef.name",reason="FieldValueRequired",message="sceneRef.name must name the Scene whose Runs are watched"
type RunCompletedSource struct {
	// sceneRef names the Scene whose Runs are watched.
	// +required
	SceneRef corev1.LocalObjectReference `json:"sceneRef"`

	// phases in which a finished Run starts a new one.
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=3
	// +kubebuilder:validation:XValidation:rule="self.all(p, p in ['Succeeded', 'Failed', 'Cancelled'])",message="phases are those a Run ends in: Succeeded, Failed or Cancelled"
	// +kubebuilder:default={Succeeded}
	// +optional
	Phases []RunPhase `json:"phases,omitempty"`

	// params maps param names to CEL expressions over the finished Run, for example
	// run.outputs.report.preview.
	// +kubebuilder:validation:MaxProperties=64
	// +optional
	Params map[string]string `json:"params,omitempty"`
}

// TriggerStatus is what Ergon observed of a Trigger.
type TriggerStatus struct {
	// observedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions of the Trigger.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// lastScheduleTime is the last time a schedule was due and a Run started. For a
	// runCompleted Trigger it is when the last Run that started one finished.
	// +optional
	LastScheduleTime *metav1.Time `json:"lastScheduleTime,omitempty"`

	// nextScheduleTime is the next time the schedule is due.
	// +optional
	NextScheduleTime *metav1.Time `json:"nextScheduleTime,omitempty"`

	// lastSuccessfulTime is when a Run of this Trigger last succeeded.
	// +optional
	LastSuccessfulTime *metav1.Time `json:"lastSuccessfulTime,omitempty"`

	// handledRuns are the UIDs of the source Runs that finished at lastScheduleTime and were
	// handled, so that Runs finishing within the same second each start one Run, once.
	// runCompleted Triggers only.
	// +listType=set
	// +kubebuilder:validation:MaxItems=1000
	// +optional
	HandledRuns []string `json:"handledRuns,omitempty"`

	// lastRun is the name of the last Run started.
	// +optional
	LastRun string `json:"lastRun,omitempty"`

	// active lists the Runs of this Trigger that have not finished.
	// +listType=set
	// +optional
	Active []string `json:"active,omitempty"`

	// activeCount is how many Runs of this Trigger have not finished, for kubectl's ACTIVE
	// column.
	// +optional
	ActiveCount int32 `json:"activeCount,omitempty"`

	// webhookPath is where the manager accepts deliveries for a webhook Trigger.
	// +optional
	WebhookPath string `json:"webhookPath,omitempty"`

	// lastDelivery is the last webhook delivery accepted.
	// +optional
	LastDelivery *WebhookDelivery `json:"lastDelivery,omitempty"`
}

// WebhookDelivery records an accepted webhook delivery.
type WebhookDelivery struct {
	// id of the delivery.
	// +optional
	ID string `json:"id,omitempty"`

	// time it arrived.
	// +optional
	Time *metav1.Time `json:"time,omitempty"`

	// run it started.
	// +optional
	Run string `json:"run,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=trg,categories=ergon
// +kubebuilder:printcolumn:name="Scene",type=string,JSONPath=`.spec.sceneRef.name`
// +kubebuilder:printcolumn:name="Schedule",type=string,JSONPath=`.spec.schedule.cron`
// +kubebuilder:printcolumn:name="Suspend",type=boolean,JSONPath=`.spec.suspend`
// +kubebuilder:printcolumn:name="Active",type=integer,JSONPath=`.status.activeCount`
// +kubebuilder:printcolumn:name="Last",type=date,JSONPath=`.status.lastScheduleTime`
// +kubebuilder:printcolumn:name="Next",type=string,JSONPath=`.status.nextScheduleTime`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// Trigger starts Runs of a Scene on a schedule, from a signed webhook, or when a Run of
// another Scene ends.
type Trigger struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is a standard object metadata
	// +optional
	metav1.ObjectMeta `json:"metadata,omitzero"`

	// spec says what to run and when.
	// +required
	Spec TriggerSpec `json:"spec"`

	// status is what Ergon observed.
	// +optional
	Status TriggerStatus `json:"status,omitzero"`
}

// +kubebuilder:object:root=true

// TriggerList contains a list of Trigger
type TriggerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitzero"`
	Items           []Trigger `json:"items"`
}

func init() {
	SchemeBuilder.Register(func(s *runtime.Scheme) error {
		s.AddKnownTypes(SchemeGroupVersion, &Trigger{}, &TriggerList{})
		return nil
	})
}
