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

// Ready reasons of a Workspace beyond PodRunning, PodPending and Idle (conditions.go), and the
// finalizer that applies its reclaimPolicy.
const (
	// ReasonPodFailed: the workspace pod cannot run, for example its image cannot be pulled or
	// its container keeps crashing; a change of spec (such as the image) fixes it.
	ReasonPodFailed = "PodFailed"
	// ReasonPodReplacing: the workspace pod is being replaced by one of the current spec (a
	// new image, resources or env); the volume stays.
	ReasonPodReplacing = "PodReplacing"
	// ReasonClaimConflict: a PersistentVolumeClaim of the Workspace's name exists and Ergon did
	// not create it, so Ergon will not mount it.
	ReasonClaimConflict = "ClaimConflict"
	// ReasonVolumeLost: the Workspace's PersistentVolumeClaim lost its volume.
	ReasonVolumeLost = "VolumeLost"

	// FinalizerWorkspaceVolume keeps a Workspace until its reclaimPolicy has been applied to
	// its volume: kept (Retain) or deleted (Delete).
	FinalizerWorkspaceVolume = "ergon.dev/workspace-volume"
)
