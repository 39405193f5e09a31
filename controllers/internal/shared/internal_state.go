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

package shared

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/outputs"
	"github.com/ergon-dev/ergon/internal/outputs/wire"
)

// Internal state is what the manager writes to ConfigMaps and reads back later: a Run's
// snapshot, outputs, checkpoints and tool results, a Scene's memory. Anyone who may write
// ConfigMaps in the namespace can create one under the name Ergon uses and can read the Run's
// UID to forge its owner reference, so neither a name nor an owner reference nor a label
// alone makes one Ergon's. Every writer marks what it writes with MarkInternal; every reader
// goes through VerifyInternal, which accepts a ConfigMap only when
//   - it carries the label ergon.dev/internal, which the admission policy
//     config/policies/internal_configmaps.yaml lets no one but the manager set, change or
//     remove (and no one else create, change or delete such a ConfigMap);
//   - its controlling owner reference carries the UID of the owner the reader expects (a
//     memory store, which several Scenes own and none controls, has only the label); and
//   - where the Run's status records a digest (outputs, the snapshot, checkpoints, tool
//     results), what it holds has that SHA-256. The status is the manager's alone to write:
//     RBAC, and config/policies/status.yaml for a role that grants it by accident.
// The kubelet mounts checkpoints, tool results and memory into agent pods by name, where the
// manager cannot check them: it pins their digests in the pod's environment instead
// (pinAgentState), and the runtime reads a file only when it has the pinned digest.

// InternalTrue is the value of LabelInternal.
const InternalTrue = "true"

// ReasonUntrustedState is the Event of a Run's own ConfigMap that does not hold what its status
// recorded: changed by someone who may (an administrator, or anyone where the admission
// policies are not installed), or written by a pass whose status write was lost.
const ReasonUntrustedState = "UntrustedState"

// MarkInternal labels a ConfigMap the manager writes as internal state.
func MarkInternal(cm *corev1.ConfigMap) *corev1.ConfigMap {
	if cm.Labels == nil {
		cm.Labels = map[string]string{}
	}
	cm.Labels[ergonv1alpha1.LabelInternal] = InternalTrue
	return cm
}

// Want is what a reader expects of an internal ConfigMap.
type Want struct {
	// What names the content in messages: "the snapshot", "the output of step build".
	What string
	// Owner is the object that must control the ConfigMap, and ownerKind and ownerName name
	// it in messages; an empty Owner (a memory store) checks the label alone.
	Owner     types.UID
	OwnerKind string
	OwnerName string
	// Key holds the content, in Data or BinaryData.
	Key string
	// SHA256 is the digest recorded for the content, hex; empty when none is recorded yet.
	SHA256 string
	// Size is the recorded length of the content; negative when none is recorded.
	Size int64
}

// VerifyInternal returns the content of an internal ConfigMap when it is the one the reader
// expects, and a ConflictError naming the ConfigMap and what is wrong otherwise.
func VerifyInternal(cm *corev1.ConfigMap, want Want) (string, error) {
	if err := trustInternal(cm, want); err != nil {
		return "", err
	}
	value, ok := outputs.ConfigMapValue(cm, want.Key)
	if !ok && (want.SHA256 != "" || want.Size >= 0) {
		return "", want.missing(cm)
	}
	if (want.Size >= 0 && int64(len(value)) != want.Size) || (want.SHA256 != "" && Digest(value) != want.SHA256) {
		return "", want.mismatch(cm)
	}
	return value, nil
}

// trustInternal checks that a ConfigMap is internal state the manager wrote for the expected
// owner, whatever it holds.
func trustInternal(cm *corev1.ConfigMap, want Want) error {
	if want.Owner != "" && !ControlledBy(cm, want.Owner) {
		return &ConflictError{fmt.Sprintf("ConfigMap %s exists but %s %s did not create it (it is not its controlling owner); "+
			"Ergon does not adopt objects by name: delete or rename it", cm.Name, want.OwnerKind, want.OwnerName)}
	}
	if cm.Labels[ergonv1alpha1.LabelInternal] != InternalTrue {
		return &ConflictError{fmt.Sprintf("ConfigMap %s does not carry the label %s=true that Ergon puts on what it writes; "+
			"Ergon does not use it: delete or rename it", cm.Name, ergonv1alpha1.LabelInternal)}
	}
	return nil
}

// missing is the conflict of an internal ConfigMap without the key that holds the content.
func (want Want) missing(cm *corev1.ConfigMap) *ConflictError {
	return &ConflictError{fmt.Sprintf("ConfigMap %s does not hold %s (no key %s)", cm.Name, want.What, want.Key)}
}

// mismatch is the conflict of an internal ConfigMap whose content is not what was recorded.
func (want Want) mismatch(cm *corev1.ConfigMap) *ConflictError {
	return &ConflictError{fmt.Sprintf("ConfigMap %s does not hold %s that %s %s recorded (SHA-256 %s); Ergon does not use it",
		cm.Name, want.What, want.OwnerKind, want.OwnerName, want.SHA256)}
}

// RunWants is what a Run's reader expects of one of its ConfigMaps: controlled by the Run,
// with no digest recorded (set sha256 and size where the status records them).
func RunWants(run interface {
	GetUID() types.UID
	GetName() string
}, what, key string) Want {
	return Want{What: what, Owner: run.GetUID(), OwnerKind: KindRun, OwnerName: run.GetName(), Key: key, Size: -1}
}

// Digest is the hex SHA-256 of a value, as the status records it.
func Digest(value string) string {
	return wire.Digest([]byte(value))
}
