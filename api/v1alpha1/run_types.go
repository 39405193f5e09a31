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

// Durations: each field of type metav1.Duration is checked by a rule that first matches the
// value against Go's duration grammar, then compares it. A value outside the grammar (such as
// "5 minutes") then makes the rule false, and the API server names the value; passed straight
// to CEL's duration(), it would be an evaluation error, whose message shows only the type.
// The pattern needs a maxLength to stay within the CRD's cost budget.

// RunSpec says which Scene to run and with what.
// +kubebuilder:validation:XValidation:rule="size(self.sceneRef.name) > 0",fieldPath=".sceneRef.name",reason="FieldValueRequired",message="sceneRef.name must name the Scene to run"
// +kubebuilder:validation:XValidation:rule="self.sceneRef == oldSelf.sceneRef",fieldPath=".sceneRef",reason="FieldValueForbidden",message="sceneRef is immutable; create a new Run to run another Scene"
// +kubebuilder:validation:XValidation:rule="has(self.params) == has(oldSelf.params) && (!has(self.params) || self.params == oldSelf.params)",fieldPath=".params",reason="FieldValueForbidden",message="params are immutable; create a new Run with other params"
// +kubebuilder:validation:XValidation:rule="!oldSelf.?cancel.orValue(false) || self.?cancel.orValue(false)",fieldPath=".cancel",reason="FieldValueForbidden",message="a cancelled Run cannot be resumed; create a new Run"
// +kubebuilder:validation:XValidation:rule="has(self.retryOf) == has(oldSelf.retryOf) && (!has(self.retryOf) || self.retryOf == oldSelf.retryOf)",fieldPath=".retryOf",reason="FieldValueForbidden",message="retryOf is immutable; create a new Run to retry another"
// +kubebuilder:validation:XValidation:rule="has(self.runAs) == has(oldSelf.runAs) && (!has(self.runAs) || self.runAs == oldSelf.runAs)",fieldPath=".runAs",reason="FieldValueForbidden",message="runAs is immutable; create a new Run to run as someone else"
type RunSpec struct {
	// sceneRef names the Scene to run, in the Run's namespace.
	// +required
	SceneRef corev1.LocalObjectReference `json:"sceneRef"`

	// params set the Scene's params by name. Params the Scene takes from Secrets cannot be
	// set here.
	// +kubebuilder:validation:MaxProperties=64
	// +optional
	Params map[string]string `json:"params,omitempty"`

	// timeout bounds the whole Run, for example 2h.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule=`self.matches("^(0|(([0-9]+([.][0-9]*)?|[.][0-9]+)(h|m|s|ms|us|ns))+)$") && duration(self) > duration("0s")`,message="timeout must be a positive duration such as 2h"
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// cancel, set to true, stops the Run's pods and ends it Cancelled. It cannot be undone.
	// +optional
	Cancel bool `json:"cancel,omitempty"`

	// ttlSecondsAfterFinished deletes the Run this long after it finished.
	// +kubebuilder:validation:Minimum=0
	// +optional
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty"`

	// suspend, set to true, pauses the Run: running steps finish, no new step or attempt
	// starts, and the Run is Suspended. Setting it back to false resumes. The Run's timeout
	// keeps running while it is suspended.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// retryOf names a finished Run of the same Scene, live or archived. This Run runs that
	// Run's snapshot (never today's Scene). By default it retries: the original must have
	// failed or been cancelled, this Run has its params, reuses the outputs of the steps that
	// succeeded there (copied, their SHA-256 verified), and runs only the others. With from or
	// replay it reruns: from a step (reusing what is upstream of it), or every step, with this
	// Run's params. The original is not changed.
	// +optional
	RetryOf *RetryReference `json:"retryOf,omitempty"`

	// runAs names a ServiceAccount of the Run's namespace that the Run acts as, instead of its
	// requester: every effect of the Run is authorized against that ServiceAccount. The
	// requester must be allowed to impersonate it (verb impersonate on serviceaccounts), as
	// with kubectl --as. For GitOps, where the requester is the sync tool.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	// +optional
	RunAs string `json:"runAs,omitempty"`
}

// RunPhase is where a Run is in its life.
// +kubebuilder:validation:Enum=Pending;Running;Waiting;Suspended;Succeeded;Failed;Cancelled
type RunPhase string

// Run phases.
const (
	RunPending   RunPhase = "Pending"
	RunRunning   RunPhase = "Running"
	RunWaiting   RunPhase = "Waiting"
	RunSuspended RunPhase = "Suspended"
	RunSucceeded RunPhase = "Succeeded"
	RunFailed    RunPhase = "Failed"
	RunCancelled RunPhase = "Cancelled"
)

// Finished reports whether the phase is terminal.
func (p RunPhase) Finished() bool {
	return p == RunSucceeded || p == RunFailed || p == RunCancelled
}

// StepPhase is where a step is in its life. A container or agent step whose attempt has a
// pod that has not started running yet is Pending, with the kubelet's or scheduler's reason
// (ImagePullBackOff, CreateContainerConfigError, Unschedulable, ...) and message.
// +kubebuilder:validation:Enum=Pending;Running;Waiting;Retrying;Succeeded;Failed;Skipped;Cancelled
type StepPhase string

// Step phases.
const (
	StepPending   StepPhase = "Pending"
	StepRunning   StepPhase = "Running"
	StepWaiting   StepPhase = "Waiting"
	StepRetrying  StepPhase = "Retrying"
	StepSucceeded StepPhase = "Succeeded"
	StepFailed    StepPhase = "Failed"
	StepSkipped   StepPhase = "Skipped"
	StepCancelled StepPhase = "Cancelled"
)

// Finished reports whether the phase is terminal.
func (p StepPhase) Finished() bool {
	switch p {
	case StepSucceeded, StepFailed, StepSkipped, StepCancelled:
		return true
	}
	return false
}

// PodActive reports whether the step's current attempt has a pod that has not ended: the pod
// is Running, or Pending (scheduled, pulling images, waiting for a Secret) after the attempt
// started. A step that has not started is Pending too, but has no podName.
func (s *StepStatus) PodActive() bool {
	return s.Phase == StepRunning || (s.Phase == StepPending && s.PodName != "")
}

// RunStatus is the story of a Run.
type RunStatus struct {
	// observedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// phase of the Run.
	// +optional
	Phase RunPhase `json:"phase,omitempty"`

	// conditions of the Run. Succeeded is Unknown while it runs, then True or False.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// startedAt is when the Run started executing.
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`

	// finishedAt is when the Run ended.
	// +optional
	FinishedAt *metav1.Time `json:"finishedAt,omitempty"`

	// sceneGeneration is the generation of the Scene the snapshot was taken from.
	// +optional
	SceneGeneration int64 `json:"sceneGeneration,omitempty"`

	// sceneSnapshot is the Scene spec this Run executes, taken when it started. Later changes
	// to the Scene do not change a Run that is running. It has the schema of Scene.spec,
	// which the Scene's admission already checked; it is not validated again here.
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	// +mapType=atomic
	// +optional
	SceneSnapshot *SceneSpec `json:"sceneSnapshot,omitempty"`

	// sceneSnapshotRef locates the snapshot instead, in a ConfigMap owned by the Run, when the
	// Scene is too large to keep inside the Run (more than 64 KiB).
	// +optional
	SceneSnapshotRef *OutputRef `json:"sceneSnapshotRef,omitempty"`

	// sceneSnapshotSHA256 is the SHA-256 (hex) of the snapshot sceneSnapshotRef locates; the
	// Run executes the ConfigMap's snapshot only when it has this digest.
	// +optional
	SceneSnapshotSHA256 string `json:"sceneSnapshotSHA256,omitempty"`

	// sceneEditors are the people who last changed the spec of a Scene in the Run's closure
	// (its Scene, the Scenes it calls, and, for a child Run, those of its parent), recorded
	// with the snapshot. Every effect of the Run is authorized against each of them as well as
	// against the Run's own identity.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	// +optional
	SceneEditors []UserIdentity `json:"sceneEditors,omitempty"`

	// workspace is the Workspace the snapshot's spec.workspace names, as the Run resolved it
	// when it started: its UID is pinned, and a step binds to no other Workspace of that name.
	// +optional
	Workspace *PinnedWorkspace `json:"workspace,omitempty"`

	// progress counts finished steps of all steps, for example 3/7.
	// +optional
	Progress string `json:"progress,omitempty"`

	// steps holds the state of each step that has started or been decided. The list is
	// atomic: only the Run controller writes it, and per-item field tracking would make
	// managedFields larger than the list itself.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=1000
	// +optional
	Steps []StepStatus `json:"steps,omitempty"`

	// usage sums the model use of the Run: that of its steps and of its child Runs.
	// +optional
	Usage *AgentUsage `json:"usage,omitempty"`

	// outputs of the Run: those of its final steps (the steps no other step depends on),
	// by step name, when it has at most 16 of them; a wider Run keeps them in its steps only.
	// +mapType=atomic
	// +optional
	Outputs map[string]OutputValue `json:"outputs,omitempty"`

	// storage is what the Run keeps in ConfigMaps for the outputs of its steps, units and
	// transcripts, and the manager's limits on it (docs/limits.md).
	// +optional
	Storage *StorageStatus `json:"storage,omitempty"`
}

// StorageStatus counts what a Run keeps in ConfigMaps for its outputs, against the manager's
// limits. A limit of 0 is no limit.
type StorageStatus struct {
	// bytes of outputs and transcripts the Run keeps in ConfigMaps.
	// +optional
	Bytes int64 `json:"bytes,omitempty"`

	// configMaps the Run created to keep them.
	// +optional
	ConfigMaps int32 `json:"configMaps,omitempty"`

	// maxBytes bounds bytes (--max-run-output-bytes).
	// +optional
	MaxBytes int64 `json:"maxBytes,omitempty"`

	// maxConfigMaps bounds configMaps (--max-configmaps-per-run).
	// +optional
	MaxConfigMaps int32 `json:"maxConfigMaps,omitempty"`

	// maxStepBytes bounds what one step keeps, its units' outputs included
	// (--max-step-output-bytes); steps[].storedBytes counts it.
	// +optional
	MaxStepBytes int64 `json:"maxStepBytes,omitempty"`
}

// PinnedWorkspace is the Workspace a Run binds its steps to.
type PinnedWorkspace struct {
	// name of the Workspace.
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name"`

	// uid of the Workspace when the Run started; empty while no Workspace of that name
	// existed yet, until the first one the Run sees.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=128
	// +optional
	UID types.UID `json:"uid,omitempty"`
}

// StepStatus is the state of one step of a Run.
type StepStatus struct {
	// name of the step.
	// +required
	Name string `json:"name"`

	// phase of the step.
	// +required
	Phase StepPhase `json:"phase"`

	// reason is a CamelCase word for why the step is in its phase, for example StepTimedOut,
	// ImagePullBackOff while its pod cannot start, or OOMKilled when an attempt ran out of
	// memory.
	// +optional
	Reason string `json:"reason,omitempty"`

	// message says the same for people.
	// +optional
	Message string `json:"message,omitempty"`

	// attempts is how many attempts have started.
	// +optional
	Attempts int32 `json:"attempts,omitempty"`

	// podName is the pod of the current or last attempt.
	// +optional
	PodName string `json:"podName,omitempty"`

	// gate is the Gate a gate step waits on.
	// +optional
	Gate string `json:"gate,omitempty"`

	// childRun is the Run a scene step started.
	// +optional
	ChildRun string `json:"childRun,omitempty"`

	// decision is the option a gate step's Gate decided.
	// +optional
	Decision string `json:"decision,omitempty"`

	// startedAt is when the first attempt started.
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`

	// finishedAt is when the step ended.
	// +optional
	FinishedAt *metav1.Time `json:"finishedAt,omitempty"`

	// nextAttemptAt is when a Retrying step starts its next attempt.
	// +optional
	NextAttemptAt *metav1.Time `json:"nextAttemptAt,omitempty"`

	// output of the step.
	// +optional
	Output *OutputValue `json:"output,omitempty"`

	// storedBytes is how many bytes of outputs and transcripts the step keeps in ConfigMaps:
	// its own and those of its fan-out instances and loop iterations.
	// +optional
	StoredBytes int64 `json:"storedBytes,omitempty"`

	// usage sums the model use of an agent step.
	// +optional
	Usage *AgentUsage `json:"usage,omitempty"`

	// transcript of an agent step: every message, tool call and result, with token usage
	// and timings, as JSON, kept in the step's output ConfigMap under the key transcript.
	// +optional
	Transcript *OutputValue `json:"transcript,omitempty"`

	// artifacts are the files the step made, in the artifact store.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	// +optional
	Artifacts []ArtifactStatus `json:"artifacts,omitempty"`

	// history records the failed attempts before the current one, oldest first.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=21
	// +optional
	History []AttemptStatus `json:"history,omitempty"`

	// instances records a fan-out step's instances, compactly.
	// +optional
	Instances *InstancesStatus `json:"instances,omitempty"`

	// loop records a looping step's iterations.
	// +optional
	Loop *LoopStatus `json:"loop,omitempty"`

	// checkpointSHA256 is the SHA-256 (hex) of the agent checkpoint the step's checkpoint
	// ConfigMap holds. The controller reads the tool calls it lists, and the next attempt
	// resumes from it, only when the ConfigMap has this digest.
	// +optional
	CheckpointSHA256 string `json:"checkpointSHA256,omitempty"`

	// toolResultsSHA256 is the SHA-256 (hex) of the tool results the step's results ConfigMap
	// holds; the next attempt reads them only when the ConfigMap has this digest.
	// +optional
	ToolResultsSHA256 string `json:"toolResultsSHA256,omitempty"`
}

// AttemptStatus is the record of one attempt of a step.
type AttemptStatus struct {
	// attempt number, from 1.
	// +required
	Attempt int32 `json:"attempt"`

	// podName of the attempt.
	// +optional
	PodName string `json:"podName,omitempty"`

	// phase the attempt ended in.
	// +required
	Phase StepPhase `json:"phase"`

	// reason the attempt ended so.
	// +optional
	Reason string `json:"reason,omitempty"`

	// message says the same for people.
	// +optional
	Message string `json:"message,omitempty"`

	// exitCode of the step's container.
	// +optional
	ExitCode *int32 `json:"exitCode,omitempty"`

	// startedAt is when the attempt started.
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`

	// finishedAt is when the attempt ended.
	// +optional
	FinishedAt *metav1.Time `json:"finishedAt,omitempty"`
}

// OutputValue is a step's output: a preview inline, the whole value in a ConfigMap.
type OutputValue struct {
	// preview is the start of the output, at most 1 KiB.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Preview string `json:"preview,omitempty"`

	// size of the whole output in bytes.
	// +optional
	Size int64 `json:"size,omitempty"`

	// sha256 of the whole output, hex encoded, when the preview does not hold it all.
	// +optional
	SHA256 string `json:"sha256,omitempty"`

	// ref locates the whole output when it is longer than the preview.
	// +optional
	Ref *OutputRef `json:"ref,omitempty"`
}

// OutputRef locates a value kept in a ConfigMap owned by the Run: an output, or the snapshot.
type OutputRef struct {
	// configMap is the ConfigMap's name, in the Run's namespace.
	// +required
	ConfigMap string `json:"configMap"`

	// key of the ConfigMap that holds the output.
	// +required
	Key string `json:"key"`
}

// AgentUsage sums model use: of an agent step, or of a whole Run.
type AgentUsage struct {
	// turns is the number of model calls.
	// +optional
	Turns int32 `json:"turns,omitempty"`

	// promptTokens as reported by the API.
	// +optional
	PromptTokens int64 `json:"promptTokens,omitempty"`

	// completionTokens as reported by the API.
	// +optional
	CompletionTokens int64 `json:"completionTokens,omitempty"`

	// totalTokens as reported by the API; maxTokens bounds it.
	// +optional
	TotalTokens int64 `json:"totalTokens,omitempty"`

	// cost of the model calls, a decimal string in the currency of the models' pricing; unset
	// when no model called has a pricing.
	// +kubebuilder:validation:MaxLength=32
	// +optional
	Cost string `json:"cost,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=rn,categories=ergon
// +kubebuilder:printcolumn:name="Scene",type=string,JSONPath=`.spec.sceneRef.name`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Steps",type=string,JSONPath=`.status.progress`
// +kubebuilder:printcolumn:name="Started",type=date,JSONPath=`.status.startedAt`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// Run is one execution of a Scene. Every executable step becomes a pod; the status tells the
// whole story.
type Run struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is a standard object metadata
	// +optional
	metav1.ObjectMeta `json:"metadata,omitzero"`

	// spec says what to run.
	// +required
	Spec RunSpec `json:"spec"`

	// status is what happened.
	// +optional
	Status RunStatus `json:"status,omitzero"`
}

// +kubebuilder:object:root=true

// RunList contains a list of Run
type RunList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitzero"`
	Items           []Run `json:"items"`
}

func init() {
	SchemeBuilder.Register(func(s *runtime.Scheme) error {
		s.AddKnownTypes(SchemeGroupVersion, &Run{}, &RunList{})
		return nil
	})
}
