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

package naming

import (
	"crypto/sha256"
	"encoding/hex"
)

// workspaceHashLength is the number of hex digits of SHA-256 in a Workspace's object names:
// 16 digits (64 bits) keep every Workspace of a namespace apart.
const workspaceHashLength = 16

// WorkspaceObjectName names the pod, PersistentVolumeClaim, NetworkPolicy and Lease of one
// Workspace: ergon-ws-<first 16 hex digits of SHA-256 of its UID>. No personal data appears
// in the name, and nobody can know it before the Workspace exists, so nobody can take it
// first: a Workspace's objects are its own from the start. A Workspace deleted and created
// again is another Workspace, with other names.
func WorkspaceObjectName(uid string) string {
	return workspaceHash("workspace\x00" + uid)
}

// LegacyWorkspaceName is the name earlier versions gave the pod, claim, NetworkPolicy and
// Lease of a user's Workspace: ergon-ws-<first 16 hex digits of SHA-256(user)>. Anyone who
// knows the user can compute it, so it is read only to move a Workspace made by an earlier
// version onto its own names.
func LegacyWorkspaceName(user string) string {
	return workspaceHash(user)
}

func workspaceHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "ergon-ws-" + hex.EncodeToString(sum[:])[:workspaceHashLength]
}
