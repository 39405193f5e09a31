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

// Package planner decides what a Run does next. It is pure: from the Run, its compiled
// snapshot and what exists in the cluster (the facts) it computes the Run's next status and
// the children to create or delete (the plan). The Run controller gathers the facts and
// carries the plan out; every decision of the engine is tested here without a cluster.
package planner

import (
	"time"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/cause"
	"github.com/ergon-dev/ergon/internal/compile"
	"github.com/ergon-dev/ergon/internal/outputs/wire"
)

// Facts is everything the planner knows about one Run at one moment.
type Facts struct {
	// Now is the planner's clock.
	Now time.Time
	// Run is the Run as last persisted: its spec and status.
	Run *ergonv1alpha1.Run
	// Scene is the Run's snapshot, compiled.
	Scene *compile.Scene
	// Pods holds the step pods that exist (or that the status names and that are gone), by
	// step name.
	Pods map[string][]PodState
	// Children holds the child Runs of the Run, by name.
	Children map[string]ChildState
	// Gates holds the Gates of the Run, by name.
	Gates map[string]GateState
	// Outputs are the outputs handed back by succeeded pods, by pod name.
	Outputs map[string]Output
	// Values are the whole outputs of finished steps, by step name, for templates and
	// conditions of the steps after them.
	Values map[string]string
	// Conflicts are objects under names the Run uses that are not the Run's (see the
	// controllers' ownership checks), by object name: why each cannot be used.
	Conflicts map[string]string
	// PodBudget is how many more step pods or child Runs the manager's slot limits allow
	// now; negative means no limit. SlotWait says which limit keeps the rest waiting, its
	// value and flag, for the message of the work that waits.
	PodBudget int
	SlotWait  string
	// Slots, when set, is asked for PodBudget and SlotWait the first time the pass needs a
	// slot, with the units the Run holds at that moment (those that ended in this pass no
	// longer count): the manager's allocator answers (internal/slots).
	Slots func(active int) (budget int, wait string)
	// PendingTimeout is the manager's bound on how long an attempt's pod may take to start,
	// for steps and Scenes that set none; zero means no bound.
	PendingTimeout time.Duration
	// Depth is the Run's cause depth (cause.Of); MaxDepth bounds the depth of the Runs it
	// creates, and Calls the rest of what it may cause (its MaxDepth is ignored).
	Depth, MaxDepth int
	Calls           cause.Limits
	// Caused is how many Runs the root of the Run's cause has caused so far, and ChildRuns
	// how many child Runs this Run has created, both as the controller counted them before
	// this pass (calls.go).
	Caused, ChildRuns int
	// UnitPods holds the pods of fan-out instances and loop iterations, by step name and
	// unit; Stored the unit outputs NeededConfigMaps asked for, by ConfigMap name.
	UnitPods map[string]map[Unit][]PodState
	Stored   map[string]string
	// Missing are the unit outputs NeededConfigMaps asked for that do not exist: they were
	// deleted, since a unit's output is kept before the status that records it.
	Missing map[string]bool
	// Refused are the output ConfigMaps the API server refused to create for good (invalid,
	// or forbidden by a quota or policy), by name: why. Their step fails instead of asking
	// for them again.
	Refused map[string]string
	// QuotaWaiting are the Run's pods a full ResourceQuota refused, by name, which wait to be
	// created again (RetryPods).
	QuotaWaiting []string
	// Limits bound the units a step makes and the outputs a Run keeps (limits.go).
	Limits Limits
	// Workspace is what is known of the Workspace the Scene is bound to; nil when it is
	// bound to none.
	Workspace *WorkspaceFacts
	// KeepFailedPods keeps the pods of failed attempts for debugging.
	KeepFailedPods bool
	// ToolCalls are the tool calls agent steps handed over, by step name (toolcalls.go).
	ToolCalls map[string]ToolCallFacts
	// ToolPods are the one-shot pods of container tool calls, by name (toolpods.go).
	ToolPods map[string]ToolPodState
	// Names are the predictable names an earlier create found held, by name: what gather
	// found under each and its alternates (names.go).
	Names map[string]NameFacts
	// Agents are the running and ended agent pods, with what gather read of their logs, and
	// ProgressInterval how often a running one's is read (agents.go); both gathered after
	// Decide. NotedCheckpoints are the checkpoint digests of steps kept by earlier passes that
	// the stored status does not record yet, by step (gathered with the rest).
	Agents           []AgentPodFacts
	ProgressInterval time.Duration
	NotedCheckpoints map[string]string
	// Memory is what is known of the Scene's memory store, gathered after Decide when the
	// plan needs it (DecideMemory).
	Memory *MemoryFacts
}

// PodState is what was observed of one step pod.
type PodState struct {
	Name string
	// UID is the pod's, so that it is deleted only if it is still the pod observed.
	UID     string
	Attempt int32
	// Phase is Pending, Running, Succeeded or Failed as the pod reports it; Gone when the
	// pod was expected but no longer exists, or is being deleted before it ended.
	Phase PodPhase
	// Reason and Message explain a failure, e.g. DeadlineExceeded from activeDeadlineSeconds
	// or OOMKilled, or why a Pending pod does not run, e.g. ImagePullBackOff (see ObservePod).
	Reason, Message string
	// ExitCode of the step container, once it terminated.
	ExitCode *int32
	// StartedAt and FinishedAt are zero while unknown.
	StartedAt, FinishedAt time.Time
	// CreatedAt is when the pod was created: a pod still Pending pendingTimeout after it
	// fails its attempt. ScheduledAt is when the scheduler bound it to a node; zero until then.
	CreatedAt, ScheduledAt time.Time
	// TerminatingUntil is, for a pod being deleted, when its grace period ends: until then
	// its containers may still run, so no next attempt of the step starts.
	TerminatingUntil time.Time
	// Frames is the end of the step container's log that its entrypoint's frames take,
	// after the lines the command printed: zero until the container ended with a report.
	Frames wire.Tail
}

// PodPhase is the observed phase of a step pod.
type PodPhase string

// Observed pod phases.
const (
	PodPending   PodPhase = "Pending"
	PodRunning   PodPhase = "Running"
	PodSucceeded PodPhase = "Succeeded"
	PodFailed    PodPhase = "Failed"
	PodGone      PodPhase = "Gone"
)

// ChildState is what was observed of one child Run.
type ChildState struct {
	// UID is the child Run's, so that only it is cancelled.
	UID string
	// Name is the child Run's own name: an alternate one when someone else's object holds
	// the name the planner gives it (see controllers/run/squatters.go).
	Name    string
	Phase   ergonv1alpha1.RunPhase
	Message string
	// Output is the child's output: that of its final step.
	Output *ergonv1alpha1.OutputValue
	// Value is the child's whole output, for templates of later steps.
	Value string
	// Usage is the model use the child reports in its status.
	Usage *ergonv1alpha1.AgentUsage
	// Refused is, for a child Run the API server refused to create, its message; the child
	// does not exist.
	Refused string
	// NotAuthorized: Ergon refused to create the child itself (Refused says why).
	NotAuthorized bool
}

// GateState is what was observed of one Gate.
type GateState struct {
	// Decided is true once the Gate has an outcome; Option is that outcome.
	Decided bool
	Option  string
	// DecidedBy is who decided, or "timeout".
	DecidedBy string
	// TimedOut is true when the Gate's timeout decided it.
	TimedOut bool
	// Comment is what the person who decided said.
	Comment string
	// Values are what an approved input Gate was answered with (JSON), or "".
	Values string
}

// Output is a step pod's output as collected by the controller, or why it could not be.
type Output struct {
	// Value is the whole output.
	Value string
	// Stored is true when Value is larger than a preview and is kept in the step's output
	// ConfigMap.
	Stored bool
	// Err says why the output could not be collected; the attempt then fails, for Reason
	// when it is set, for OutputError otherwise.
	Err, Reason string
	// Transcript is an agent step's record, its second output; Usage sums its model use.
	Transcript string
	Usage      *ergonv1alpha1.AgentUsage
	// Artifacts are the artifacts the step wrote, as its status records them.
	Artifacts []ergonv1alpha1.ArtifactStatus
}
