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

// Condition types and their reasons, grouped per kind (Run, step, Gate, Trigger, Workspace,
// Scene), then the kstatus conditions every kind sets. Reasons are CamelCase words that
// say why a condition has its status; every condition carries one.

// ConditionSucceeded is a Run's outcome: Unknown while it runs, True when it succeeded, False
// when it failed or was cancelled. `kubectl wait --for=condition=Succeeded` waits on it.
const (
	ConditionSucceeded = "Succeeded"

	// ConditionArchived is True once a Run that ended is in the archive (docs/archive.md):
	// its time to live and its Trigger's history limits delete it only then.
	ConditionArchived = "Archived"

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
	// ReasonBudgetExceeded: the Scene's Runs have spent its budget; the Run did not start.
	ReasonBudgetExceeded = "BudgetExceeded"
	// ReasonStepFailed: a step failed after its retries.
	ReasonStepFailed = "StepFailed"
	// ReasonStepTimedOut: a step ran past its timeout.
	ReasonStepTimedOut = "StepTimedOut"
	// ReasonRunTimedOut: the Run ran past its timeout.
	ReasonRunTimedOut = "RunTimedOut"
	// ReasonCancelled: spec.cancel was set.
	ReasonCancelled = "Cancelled"
	// ReasonDepthExceeded: a new Run would be deeper in its cause (sub-scenes, Scene tools,
	// runCompleted Triggers) than the manager's --max-cause-depth.
	ReasonDepthExceeded = "DepthExceeded"
	// ReasonChildRunsExceeded: the Run has created as many child Runs as the manager's
	// --max-child-runs allows.
	ReasonChildRunsExceeded = "ChildRunsExceeded"
	// ReasonCausedRunsExceeded: the root of the Run's cause has caused as many Runs as the
	// manager's --max-caused-runs allows.
	ReasonCausedRunsExceeded = "CausedRunsExceeded"
	// ReasonNameConflict: an object the Run would create or use under its deterministic name
	// exists and is not the Run's (another controller, or no Run, is its owner; or an output
	// does not hold what the Run recorded). Ergon never adopts an object by name.
	ReasonNameConflict = "NameConflict"
)

// ConditionNameTaken is True on a Run or Trigger once an object Ergon was to create under a
// predictable name was held by an object Ergon does not own: Ergon left that object alone and
// created its own under an alternate name. The message names the object that held the name.
const (
	ConditionNameTaken = "NameTaken"
	// ReasonNameSquatted: someone else's object held a predictable name; an alternate was used.
	ReasonNameSquatted = "NameSquatted"
)

// Reasons of a step (status.steps[].reason, and of fan-out instances and loop iterations),
// besides the Run's own (StepFailed, StepTimedOut, Cancelled, NameConflict, ...) and the
// kubelet's waiting reasons (ImagePullBackOff, ErrImagePull, CreateContainerConfigError, ...),
// which a step's status repeats as they are.
const (
	// ReasonRunFailing: the Run is failing, so the step does not start.
	ReasonRunFailing = "RunFailing"
	// ReasonDependencyFailed: a step this one depends on failed.
	ReasonDependencyFailed = "DependencyFailed"
	// ReasonDependenciesSkipped: none of the steps this one depends on succeeded.
	ReasonDependenciesSkipped = "DependenciesSkipped"
	// ReasonWhenFalse: the step's when expression is false.
	ReasonWhenFalse = "WhenFalse"
	// ReasonWhenError: the step's when expression cannot be evaluated.
	ReasonWhenError = "WhenError"
	// ReasonTemplateError: a template of the step cannot be rendered.
	ReasonTemplateError = "TemplateError"
	// ReasonChildRunFailed: the child Run of a scene step failed.
	ReasonChildRunFailed = "ChildRunFailed"
	// ReasonDecided: the step's Gate was decided.
	ReasonDecided = "Decided"
	// ReasonGateTimedOut: the step's Gate timed out.
	ReasonGateTimedOut = "GateTimedOut"
	// ReasonOutputError: the step's output cannot be read or kept.
	ReasonOutputError = "OutputError"
	// Reasons of a step whose artifacts failed (docs/artifacts.md). ArtifactMissing: the
	// command did not write a declared artifact; ArtifactTooLarge: an artifact passes a limit;
	// ArtifactDigestMismatch: the bytes written or read are not the ones announced or recorded;
	// InputArtifactMissing: an artifact the step reads was not made; ArtifactStoreFailed: the
	// store or the manager's endpoint did not answer; ArtifactStoreMissing: the manager keeps
	// no artifacts; InputArtifactUnsupported: an agent step reads an artifact that is neither
	// text nor an image a model is shown.
	ReasonArtifactMissing          = "ArtifactMissing"
	ReasonArtifactTooLarge         = "ArtifactTooLarge"
	ReasonArtifactDigest           = "ArtifactDigestMismatch"
	ReasonInputArtifactMissing     = "InputArtifactMissing"
	ReasonArtifactStoreFailed      = "ArtifactStoreFailed"
	ReasonArtifactStoreMissing     = "ArtifactStoreMissing"
	ReasonInputArtifactUnsupported = "InputArtifactUnsupported"
	// ReasonPodDeleted: the step's pod was deleted before it ended.
	ReasonPodDeleted = "PodDeleted"
	// ReasonPodRefused: the API server refused to create the attempt's pod (it is invalid, or
	// a ResourceQuota, a LimitRange, Pod Security or an admission policy forbids it); the
	// message is the API server's.
	ReasonPodRefused = "PodRefused"
	// ReasonExceededQuota: a ResourceQuota of the namespace has no room for the attempt's pod;
	// Ergon tries again until it fits or the step's pendingTimeout is over.
	ReasonExceededQuota = "ExceededQuota"
	// ReasonRunRefused: the API server refused to create the scene step's child Run.
	ReasonRunRefused = "RunRefused"
	// ReasonNotAuthorized: Ergon did not create what a step needs (its pod, a tool call's pod,
	// its child Run) because the Run's identity, or the last editor of a Scene the Run runs,
	// may not use an object it references; the message names the object and the permission.
	ReasonNotAuthorized = "NotAuthorized"
	// ReasonPoolWarming: a WorkspacePool is starting warm pods; ReasonPoolReady: it has as many
	// ready as it asks for.
	ReasonPoolWarming = "Warming"
	ReasonPoolReady   = "Ready"
	// ReasonNoIdentity: the Run carries no identity stamped by admission, and does nothing.
	ReasonNoIdentity = "NoIdentity"
	// ReasonSceneEditorUnknown: a Scene in the Run's closure has no recorded editor.
	ReasonSceneEditorUnknown = "SceneEditorUnknown"
	// ReasonWaitingForSlot: the step, or some of its instances or iterations, could start but
	// for the manager's step pod slots (--max-step-pods, --max-step-pods-per-namespace,
	// --max-step-pods-per-run); the message names the limit that binds and its value.
	ReasonWaitingForSlot = "WaitingForSlot"
	// ReasonPodStarting: the pod waits for the scheduler or its containers are being created,
	// and nothing is known to be wrong.
	ReasonPodStarting = "PodStarting"
	// ReasonUnschedulable: the scheduler finds no node for the pod.
	ReasonUnschedulable = "Unschedulable"
	// ReasonInitContainerFailed: Ergon's init container, which copies the entrypoint, failed.
	ReasonInitContainerFailed = "InitContainerFailed"
	// ReasonOOMKilled: the step's container ran out of memory and was killed.
	ReasonOOMKilled = "OOMKilled"
	// ReasonEvicted: the kubelet or the Eviction API (a node drain) evicted the pod.
	ReasonEvicted = "Evicted"
	// ReasonPreempted: the scheduler preempted the pod for one of higher priority.
	ReasonPreempted = "Preempted"
	// ReasonNodeLost: the pod's node stopped reporting or was deleted.
	ReasonNodeLost = "NodeLost"
	// ReasonPendingTimeout: the pod did not start within the step's pendingTimeout, and
	// nothing more precise was known.
	ReasonPendingTimeout = "PendingTimeout"
	// ReasonDeadlineExceeded is the kubelet's reason for a pod past activeDeadlineSeconds.
	ReasonDeadlineExceeded = "DeadlineExceeded"
	// ReasonNoItems: a forEach step's list is empty, so the step is skipped.
	ReasonNoItems = "NoItems"
	// ReasonForEachError: a forEach step's list cannot be evaluated or is not a list.
	ReasonForEachError = "ForEachError"
	// ReasonInstanceFailed: an instance of a forEach step failed.
	ReasonInstanceFailed = "InstanceFailed"
	// ReasonUntilError: a loop's until expression cannot be evaluated.
	ReasonUntilError = "UntilError"
	// ReasonUntilTrue: a loop ended because its until expression became true.
	ReasonUntilTrue = "UntilTrue"
	// ReasonExhausted: a loop ran maxIterations times without until becoming true.
	ReasonExhausted = "LoopExhausted"
	// ReasonWorkspaceBusy: another step writes to the Workspace; this one starts after it
	// and after the steps that asked before it.
	ReasonWorkspaceBusy = "WorkspaceBusy"
	// ReasonWorkspaceNotFound: the Scene names a Workspace that does not exist.
	ReasonWorkspaceNotFound = "WorkspaceNotFound"
	// ReasonWorkspaceNotReady: the Workspace is being deleted, has failed, or has no volume
	// of its own yet.
	ReasonWorkspaceNotReady = "WorkspaceNotReady"
	// ReasonWorkspaceReplaced: the Workspace the Run started with (its UID, status.workspace)
	// was deleted, or deleted and created again; the Run binds no step to another one.
	ReasonWorkspaceReplaced = "WorkspaceReplaced"
	// ReasonOutcomeNotMet: the step's after entry names an outcome its step did not have.
	ReasonOutcomeNotMet = "OutcomeNotMet"
	// ReasonOutputTooLarge: keeping the step's output (a unit's, or a fan-in or loop's value)
	// would pass what a ConfigMap holds, or the bytes the manager lets a step or a Run keep.
	ReasonOutputTooLarge = "OutputTooLarge"
	// ReasonConfigMapLimitReached: keeping the step's output would pass the ConfigMaps the
	// manager lets one Run create.
	ReasonConfigMapLimitReached = "ConfigMapLimitReached"
	// ReasonUnitLimitReached: the step would make more units (fan-out instances times loop
	// iterations) than the manager lets one step make.
	ReasonUnitLimitReached = "UnitLimitReached"
	// ReasonRenderedTooLarge: the step's rendered templates (command, args, env, params, a
	// Gate's message) are more than fit in the object they go into.
	ReasonRenderedTooLarge = "RenderedTooLarge"
	// ReasonFinallyTimedOut: a finally step still ran at spec.finallyTimeout.
	ReasonFinallyTimedOut = "FinallyTimedOut"
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
	// ReasonRunFinished: the Gate's Run ended before anyone decided; the Gate is Closed and
	// can no longer be decided.
	ReasonRunFinished = "RunFinished"
)

// ConditionReady says a Scene can run, a Trigger is set up as its spec says (suspended
// included), or a Workspace's pod serves.
const ConditionReady = "Ready"

// Ready reasons of a Trigger.
const (
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
)

// ConditionLimitReached is True on a Trigger while it starts no Run because of a limit of the
// manager's (docs/limits.md): its Runs per minute (reason RateLimited, until the minute frees),
// or the cause caps of the Run whose end it would chain to (DepthExceeded, CausedRunsExceeded,
// until it next starts a Run). False (WithinLimits) otherwise.
const (
	ConditionLimitReached = "LimitReached"
	// ReasonRateLimited: the Trigger started as many Runs in the last minute as the manager's
	// --max-trigger-runs-per-minute allows.
	ReasonRateLimited = "RateLimited"
	// ReasonWithinLimits: the Trigger's last start was within every limit.
	ReasonWithinLimits = "WithinLimits"
)

// Ready reasons of a Workspace.
const (
	// ReasonPodRunning: the workspace pod is running.
	ReasonPodRunning = "PodRunning"
	// ReasonPodPending: the workspace pod is starting.
	ReasonPodPending = "PodPending"
	// ReasonIdle: the workspace pod was stopped after its idle timeout.
	ReasonIdle = "Idle"
	// ReasonPodFailed: the workspace pod cannot run, for example its image cannot be pulled or
	// its container keeps crashing; a change of spec (such as the image) fixes it.
	ReasonPodFailed = "PodFailed"
	// ReasonPodReplacing: the workspace pod is being replaced by one of the current spec (a
	// new image, resources or env); the volume stays.
	ReasonPodReplacing = "PodReplacing"
	// ReasonClaimConflict: a PersistentVolumeClaim of the name of the Workspace's claim exists
	// and is not the Workspace's (it neither controls it nor recorded its UID), so Ergon will
	// neither mount, change nor delete it.
	ReasonClaimConflict = "ClaimConflict"
	// ReasonVolumeLost: the Workspace's PersistentVolumeClaim lost its volume.
	ReasonVolumeLost = "VolumeLost"
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
