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

// StepOutcome is an outcome a step can end with that another step can run after.
// A step the Run stops (Cancelled) runs nothing after it: finally steps are for that.
// +kubebuilder:validation:Enum=Succeeded;Failed;Skipped
type StepOutcome string

// OutcomeDependency is a dependency on a step's outcome: the step named must end, and
// with one of the outcomes listed, or the dependent step is Skipped (reason OutcomeNotMet).
// +kubebuilder:validation:XValidation:rule="!self.?handles.orValue(false) || 'Failed' in self.outcomes",fieldPath=".handles",reason="FieldValueInvalid",message="handles applies to a failure: add Failed to outcomes, or remove handles"
type OutcomeDependency struct {
	// step names a step of the same graph.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +required
	Step string `json:"step"`

	// outcomes lists the outcomes of step that let this one run, for example [Failed]. (It
	// is not called "on": YAML 1.1 parsers, kubectl's among them, read an unquoted on: key as
	// the boolean true.)
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=3
	// +required
	Outcomes []StepOutcome `json:"outcomes"`

	// handles, with Failed in outcomes, makes this step the handler of step's failure: when step
	// fails and this step then succeeds, the failure does not fail the Run. Without it, the
	// failure still fails the Run once this step has run.
	// +optional
	Handles bool `json:"handles,omitempty"`
}

// RetryReference names the Run a new Run starts from, and which of its steps run again.
// +kubebuilder:validation:XValidation:rule="!(has(self.from) && has(self.replay) && self.replay)",message="from and replay exclude each other: from runs one step and its downstream again, replay runs every step again"
type RetryReference struct {
	// name of the Run, live or archived. When the archive holds several Runs of that name,
	// the newest is meant.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name"`

	// from names a step of the original's snapshot: that step and every step downstream of
	// it run again, with this Run's params; the steps upstream of it that succeeded are reused
	// (their outputs copied, SHA-256 verified). The original may have ended in any phase.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	From string `json:"from,omitempty"`

	// replay, set to true, runs every step of the original's snapshot again, with this Run's
	// params: nothing is reused. The original may have ended in any phase.
	// +optional
	Replay bool `json:"replay,omitempty"`
}

// Rerun reports whether the Run is a rerun (from a step, or a replay) rather than a retry of
// the steps that did not succeed.
func (r *RetryReference) Rerun() bool { return r != nil && (r.From != "" || r.Replay) }

// Reasons of the Run's Succeeded condition and of steps for finally steps, failure branches,
// and retries from failure. A suspended Run says ReasonSuspended, as a suspended Trigger does.
const (
	// ReasonFinalizing: the graph has ended and the finally steps run.
	ReasonFinalizing = "Finalizing"
	// ReasonFailureUnhandled: a step failed, its failure branches ran, and none handled it.
	ReasonFailureUnhandled = "FailureUnhandled"
	// ReasonReused: a step of a retry took its outcome and output from the Run it retries.
	ReasonReused = "Reused"
	// ReasonRetryOfInvalid: the Run a retry names cannot be retried (gone, running, of
	// another Scene, or its outputs no longer match their digests).
	ReasonRetryOfInvalid = "RetryOfInvalid"
)
