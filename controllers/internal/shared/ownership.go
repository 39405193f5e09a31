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
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/outputs"
)

// ControlledBy reports whether obj's controlling owner reference carries uid.
func ControlledBy(obj client.Object, uid types.UID) bool {
	for _, ref := range obj.GetOwnerReferences() {
		if ref.Controller != nil && *ref.Controller && ref.UID == uid {
			return true
		}
	}
	return false
}

// ConflictError says that an object under a name Ergon uses is not the one it created.
type ConflictError struct{ Message string }

func (e *ConflictError) Error() string { return e.Message }

// CheckOutput verifies that a ConfigMap holds the output (or transcript) the status recorded:
// it is internal state of the Run that wrote it, and the value under the key the status names
// passes outputs.Verify, as it must for every reader of an output.
func CheckOutput(cm *corev1.ConfigMap, ownerUID types.UID, ownerName string, out *ergonv1alpha1.OutputValue) (string, error) {
	want := Want{What: "the " + out.Ref.Key, Owner: ownerUID, OwnerKind: KindRun, OwnerName: ownerName,
		Key: out.Ref.Key, SHA256: out.SHA256, Size: out.Size}
	if err := trustInternal(cm, want); err != nil {
		return "", err
	}
	value, ok := outputs.ConfigMapValue(cm, want.Key)
	if !ok {
		return "", want.missing(cm)
	}
	if outputs.Verify([]byte(value), out) != nil {
		return "", want.mismatch(cm)
	}
	return value, nil
}

// ContendedRetry is how soon a pass that lost a write to another writer plans again, when no
// event of its own brings it back: a shared object another Run wrote (contendedError), a
// name found held (namesHeldError), a Scene whose status write conflicted.
const ContendedRetry = 100 * time.Millisecond

// RunControlled reports whether obj's controlling owner is a Run.
func RunControlled(obj client.Object) bool {
	ref := metav1.GetControllerOf(obj)
	return ref != nil && ref.Kind == KindRun && ref.APIVersion == ergonv1alpha1.GroupVersion.String()
}

// WorkspaceControlled reports whether obj's controlling owner is a Workspace, or a
// WorkspacePool (whose warm pods become a Workspace's).
func WorkspaceControlled(obj client.Object) bool {
	ref := metav1.GetControllerOf(obj)
	return ref != nil && (ref.Kind == KindWorkspace || ref.Kind == KindWorkspacePool) &&
		ref.APIVersion == ergonv1alpha1.GroupVersion.String()
}
