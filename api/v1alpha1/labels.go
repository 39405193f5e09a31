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

import "strings"

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
	// LabelToolCall marks, with the value "true", the one-shot pod of an agent's container tool
	// call; such a pod is no attempt of its step.
	LabelToolCall = "ergon.dev/tool-call"
	// LabelParentRun names the parent of a child Run.
	LabelParentRun = "ergon.dev/parent-run"
	// LabelTrigger names the Trigger that started a Run.
	LabelTrigger = "ergon.dev/trigger"
	// LabelScene names the Scene a Run executes.
	LabelScene = "ergon.dev/scene"
	// LabelInternal marks, with the value "true", a ConfigMap the manager writes and reads
	// back: a snapshot, an output, a checkpoint, tool results, a memory store. The admission
	// policy config/policies/internal_configmaps.yaml lets only the manager create, change or
	// delete one, or add or remove the label. The manager uses one only when it carries the
	// label, is controlled by its expected owner's UID, and holds the digest recorded where
	// no tenant can write (docs/design.md, "Internal state").
	LabelInternal = "ergon.dev/internal"
)

// Annotations the engine relies on. Admission reserves every annotation under
// AnnotationPrefix on Runs to the manager: nobody else can set, change or remove one.
const (
	// AnnotationPrefix is the prefix of the annotations Ergon reserves on Runs.
	AnnotationPrefix = "ergon.dev/"
	// AnnotationCreatedBy names the person behind a Run: its requester for a Run created
	// directly, the Trigger's creator for a Run a Trigger starts, the parent Run's created-by
	// for a child Run. A Gate with forbidSelfApproval refuses that person.
	AnnotationCreatedBy = AnnotationPrefix + "created-by"
	// AnnotationDepth is a Run's cause depth: how many Runs lie between it and the root of
	// its cause (a child Run is one deeper than its parent, a Run a runCompleted Trigger
	// starts one deeper than the Run whose end started it). A Run without it is depth 0.
	AnnotationDepth = AnnotationPrefix + "depth"
	// AnnotationCauseRoot names the root of a Run's cause, as "NAME/UID" of the Run that
	// started the chain (one a person created, or one a Trigger started from its schedule or
	// a delivery): carried through child Runs, Scene tools and runCompleted Triggers, so the
	// manager counts every Run one root caused, whatever path it took. A Run without it is
	// its own root.
	AnnotationCauseRoot = AnnotationPrefix + "cause-root"
	// AnnotationCreator names who created a Trigger, stamped by admission from the request's
	// identity and immutable afterwards; the Runs the Trigger starts are created-by them.
	AnnotationCreator = AnnotationPrefix + "creator"
	// AnnotationWorkspaceTouch on a Workspace records activity that is not a step, such as a
	// person browsing its files in the console or the plugin: an RFC 3339 time. The Workspace
	// controller counts it as use, so an idle Workspace wakes and a running one stays up.
	AnnotationWorkspaceTouch = AnnotationPrefix + "touch"
	// AnnotationStandsFor on an object Ergon created under an alternate name names the
	// predictable name it stands for, which an object Ergon does not own holds (docs/limits.md,
	// "Names that cannot be squatted"). Whoever looks the object up by its predictable name
	// finds it through this annotation.
	AnnotationStandsFor = AnnotationPrefix + "stands-for"
	// AnnotationToolCall on a Gate names the agent's tool call it asks approval of; the Gate's
	// name is derived from it, so it never changes (admission keeps it).
	AnnotationToolCall = "agent.ergon.dev/tool-call"
)

// AnnotationVia on a Run names the protocol it was started through: "mcp" or "a2a", set by
// Ergon's protocol endpoints (internal/protocols), which create the Run with their caller's own
// token. It is the creator's word, not admission's: the manager's Event that tells it names
// the person from AnnotationCreatedBy, which admission stamps.
const AnnotationVia = "protocols.ergon.dev/via"

// Labels by which a Scene opts in to being offered outside the cluster: as an MCP tool, and
// as an A2A agent. The value "true" offers it, to those RBAC lets create Runs in its namespace.
const (
	LabelMCPTool  = "mcp.ergon.dev/tool"
	LabelA2AAgent = "a2a.ergon.dev/agent"
)

// LabelWorkspace on a step pod names the Workspace (the object's name, naming.LabelValue of
// it) the pod runs against, for people to read. Nothing selects by it: a long name is
// shortened into it, and a shortened name can equal another Workspace's name.
const LabelWorkspace = AnnotationPrefix + "workspace"

// LabelWorkspaceUID on a Workspace's pod, NetworkPolicy, claim and Lease, and on the step pods
// bound to it, is the Workspace's UID: what the Workspace's NetworkPolicy and controller
// select by, unique to one Workspace, never shortened, and never the same for a Workspace
// deleted and created again. The Workspace controller counts the step pods as activity and
// wakes an Idle Workspace for them.
const LabelWorkspaceUID = AnnotationPrefix + "workspace-uid"

// LabelWorkspacePoolUID on a WorkspacePool's warm pods and volumes is the pool's UID, until a
// Workspace takes them and they carry its labels instead.
const LabelWorkspacePoolUID = AnnotationPrefix + "workspace-pool-uid"

// IsReservedAnnotation reports whether only Ergon's manager may set an annotation on a Run.
func IsReservedAnnotation(key string) bool {
	return strings.HasPrefix(key, AnnotationPrefix)
}

// FinalizerWorkspaceVolume keeps a Workspace until its reclaimPolicy has been applied to
// its volume: kept (Retain) or deleted (Delete).
const FinalizerWorkspaceVolume = "ergon.dev/workspace-volume"

// FinalizerArchive holds a Run that has not been written to the archive yet, for at most
// the archive's wait (docs/archive.md).
const FinalizerArchive = "ergon.dev/archive"
