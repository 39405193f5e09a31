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

// Condition types and their reasons, grouped per condition. Reasons are CamelCase words that
// say why a condition has its status; every condition carries one.

// Labels and annotations Ergon puts on the objects it creates.
const (
	// LabelManagedBy marks every object Ergon creates.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// ManagedByErgon is the value of LabelManagedBy.
	ManagedByErgon = "ergon"
	// LabelRun names the Run a step pod, Gate, ConfigMap or child Run belongs to.
	LabelRun = "ergon.dev/run"
	// LabelStep names the step a pod, Gate or child Run belongs to.
	LabelStep = "ergon.dev/step"
	// LabelAttempt is the attempt number of a step pod.
	LabelAttempt = "ergon.dev/attempt"
	// LabelParentRun names the parent of a child Run.
	LabelParentRun = "ergon.dev/parent-run"
	// LabelTrigger names the Trigger that started a Run.
	LabelTrigger = "ergon.dev/trigger"
	// LabelScene names the Scene a Run executes.
	LabelScene = "ergon.dev/scene"
)

// ConditionSucceeded is a Run's outcome: Unknown while it runs, True when it succeeded, False
// when it failed or was cancelled. `kubectl wait --for=condition=Succeeded` waits on it.
const (
	ConditionSucceeded = "Succeeded"

	// ReasonPending: the Run has not started executing yet.
	ReasonPending = "Pending"
	// ReasonRunning: steps are running.
	ReasonRunning = "Running"
	// ReasonWaiting: the Run waits on a Gate.
	ReasonWaiting = "Waiting"
	// ReasonSucceeded: every step that ran succeeded.
	ReasonSucceeded = "Succeeded"
	// ReasonSceneNotFound: the Scene the Run names does not exist (yet).
	ReasonSceneNotFound = "SceneNotFound"
	// ReasonInvalidParams: a param is missing, unknown or not settable.
	ReasonInvalidParams = "InvalidParams"
	// ReasonInvalidScene: the Scene's templates or expressions do not compile.
	ReasonInvalidScene = "InvalidScene"
	// ReasonStepFailed: a step failed after its retries.
	ReasonStepFailed = "StepFailed"
	// ReasonStepTimedOut: a step ran past its timeout.
	ReasonStepTimedOut = "StepTimedOut"
	// ReasonRunTimedOut: the Run ran past its timeout.
	ReasonRunTimedOut = "RunTimedOut"
	// ReasonCancelled: spec.cancel was set.
	ReasonCancelled = "Cancelled"
	// ReasonGateRejected: a Gate's decision stopped the Run.
	ReasonGateRejected = "GateRejected"
	// ReasonDepthExceeded: sub-scene calls nested deeper than the limit.
	ReasonDepthExceeded = "DepthExceeded"
	// ReasonNameConflict: an object the Run would create or use under its deterministic name
	// exists and is not the Run's (another controller, or no Run, is its owner; or an output
	// does not hold what the Run recorded). Ergon never adopts an object by name.
	ReasonNameConflict = "NameConflict"
)

// ConditionDecided is a Gate's state: False while it waits, True once decided.
const (
	ConditionDecided = "Decided"

	// ReasonAwaitingDecision: nobody has decided yet.
	ReasonAwaitingDecision = "AwaitingDecision"
	// ReasonApproved: the Gate was approved.
	ReasonApproved = "Approved"
	// ReasonRejected: the Gate was rejected.
	ReasonRejected = "Rejected"
	// ReasonTimedOut: the timeout passed and onTimeout decided.
	ReasonTimedOut = "TimedOut"
)

// ConditionReady says a Scene can run, a Trigger is set up as its spec says (suspended
// included), or a Workspace's pod serves.
const (
	ConditionReady = "Ready"

	// ReasonScheduled: the Trigger waits for its next time.
	ReasonScheduled = "Scheduled"
	// ReasonSuspended: spec.suspend is set.
	ReasonSuspended = "Suspended"
	// ReasonInvalidSchedule: the cron schedule or time zone does not parse.
	ReasonInvalidSchedule = "InvalidSchedule"
	// ReasonListening: the webhook endpoint accepts deliveries.
	ReasonListening = "Listening"
	// ReasonSecretNotFound: the webhook's key Secret is missing, or lacks the key.
	ReasonSecretNotFound = "SecretNotFound"
	// ReasonWatching: a runCompleted Trigger waits for Runs of its source Scene to end.
	ReasonWatching = "Watching"
	// ReasonPodRunning: the workspace pod is running.
	ReasonPodRunning = "PodRunning"
	// ReasonPodPending: the workspace pod is starting.
	ReasonPodPending = "PodPending"
	// ReasonIdle: the workspace pod was stopped after its idle timeout.
	ReasonIdle = "Idle"
)

// Ready reasons of a Scene.
const (
	// ReasonCompiled: the Scene compiles and every Scene and Workspace it names exists.
	ReasonCompiled = "Compiled"
	// ReasonCompileFailed: the Scene does not compile; Runs of it fail until its spec is fixed.
	ReasonCompileFailed = "CompileFailed"
	// ReasonSceneRefMissing: a sub-scene step calls a Scene that does not exist (yet).
	ReasonSceneRefMissing = "SceneRefMissing"
	// ReasonWorkspaceMissing: spec.workspace names a Workspace that does not exist (yet).
	ReasonWorkspaceMissing = "WorkspaceMissing"
)

// The kstatus conditions (sigs.k8s.io/cli-utils/pkg/kstatus), which Flux, Argo CD and
// kubectl-based tools read: "abnormal-true" conditions, present only while True. Every kind
// Ergon writes a status for sets them, with the reason of its own condition.
const (
	// ConditionReconciling: the object is on its way to what its spec asks, such as a Run that
	// has not finished, a Gate nobody has decided, or a Scene waiting for a Scene it calls.
	ConditionReconciling = "Reconciling"
	// ConditionStalled: the object cannot get there without a change to its spec, such as a
	// failed or cancelled Run, a Scene that does not compile, or a Trigger whose schedule does
	// not parse.
	ConditionStalled = "Stalled"
)
