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

// workspaceHashLength is the number of hex digits of the user's SHA-256 in a Workspace's
// object names: 16 digits (64 bits) keep two users of one namespace apart.
const workspaceHashLength = 16

// WorkspaceName names the pod, PersistentVolumeClaim, NetworkPolicy and Lease of a user's
// Workspace: ergon-ws-<first 16 hex digits of SHA-256(user)>. No personal data appears in
// the name, and a user always maps to the same volume, so a Workspace deleted with
// reclaimPolicy Retain and created again finds its files.
func WorkspaceName(user string) string {
	sum := sha256.Sum256([]byte(user))
	return "ergon-ws-" + hex.EncodeToString(sum[:])[:workspaceHashLength]
}
