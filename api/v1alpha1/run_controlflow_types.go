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

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// ReasonMaxIterationsExceeded is why a loop failed: it ran maxIterations iterations without
// its until condition turning true.
const ReasonMaxIterationsExceeded = "MaxIterationsExceeded"

// Letters of InstancesStatus.states, one per instance.
const (
	InstanceNotStarted = 'P'
	InstanceRunning    = 'R'
	InstanceSucceeded  = 'S'
	InstanceFailed     = 'F'
	InstanceSkipped    = 'K'
	InstanceCancelled  = 'C'
)

// InstancesStatus is the compact record of a fan-out step's instances: a letter per instance
// rather than a status each, so that 1,000 instances cost a few KiB of the Run. Their outputs
// are in ConfigMaps owned by the Run, one per instance.
type InstancesStatus struct {
	// total is the number of instances.
	// +required
	Total int32 `json:"total"`

	// succeeded, failed and running count the instances in those states.
	// +optional
	Succeeded int32 `json:"succeeded,omitempty"`
	// +optional
	Failed int32 `json:"failed,omitempty"`
	// +optional
	Running int32 `json:"running,omitempty"`

	// states holds one letter per instance, in item order: P not started, R running,
	// S succeeded, F failed, K skipped (not started because another instance failed),
	// C cancelled.
	// +kubebuilder:validation:MaxLength=1000
	// +required
	States string `json:"states"`

	// attempts holds the attempt of each instance, when the step retries.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=1000
	// +optional
	Attempts []int32 `json:"attempts,omitempty"`

	// iterations holds the iteration of each instance, when the step loops.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=1000
	// +optional
	Iterations []int32 `json:"iterations,omitempty"`

	// failures tells why instances failed, the first 10 of them.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=10
	// +optional
	Failures []InstanceFailure `json:"failures,omitempty"`
}

// InstanceFailure is why one instance failed.
type InstanceFailure struct {
	// index of the instance, from 0.
	// +required
	Index int32 `json:"index"`
	// reason is a CamelCase word, as a step's.
	// +optional
	Reason string `json:"reason,omitempty"`
	// message says the same for people.
	// +kubebuilder:validation:MaxLength=512
	// +optional
	Message string `json:"message,omitempty"`
}

// LoopStatus is the record of a looping step that is not a fan-out: its current iteration
// and a short line per finished iteration. Each iteration's output is kept in a ConfigMap of
// its own; the step's output is the last one's.
type LoopStatus struct {
	// iteration is the current or last iteration, from 1.
	// +required
	Iteration int32 `json:"iteration"`

	// iterations records the finished iterations, oldest first.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=500
	// +optional
	Iterations []IterationStatus `json:"iterations,omitempty"`
}

// IterationStatus is the record of one finished iteration.
type IterationStatus struct {
	// iteration number, from 1.
	// +required
	Iteration int32 `json:"iteration"`
	// size of the iteration's output in bytes.
	// +optional
	Size int64 `json:"size,omitempty"`
	// sha256 of the iteration's output, hex encoded.
	// +optional
	SHA256 string `json:"sha256,omitempty"`
	// configMap keeps the iteration's whole output under the key output.
	// +optional
	ConfigMap string `json:"configMap,omitempty"`
	// finishedAt is when the iteration ended.
	// +optional
	FinishedAt *metav1.Time `json:"finishedAt,omitempty"`
}

// Labels of the pods of fan-out instances and loop iterations, besides those of every step pod.
const (
	// LabelInstance is the index of a fan-out instance, from 0.
	LabelInstance = "ergon.dev/instance"
	// LabelIteration is the iteration of a loop, from 1.
	LabelIteration = "ergon.dev/iteration"
)
