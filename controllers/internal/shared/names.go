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
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/naming"
)

// TakenBy describes the object that holds a name Ergon wanted, for people: its kind and name,
// UID, age, controller and the field managers that wrote it, which say which client made it.
func TakenBy(kind string, obj client.Object) string {
	var who []string
	for _, f := range obj.GetManagedFields() {
		if !slices.Contains(who, f.Manager) {
			who = append(who, f.Manager)
		}
	}
	controller := "no controller"
	if ref := metav1.GetControllerOfNoCopy(obj); ref != nil {
		controller = "controller " + ref.Kind + " " + ref.Name
	}
	desc := fmt.Sprintf("%s %s (uid %s, created %s, %s", kind, obj.GetName(), obj.GetUID(),
		obj.GetCreationTimestamp().UTC().Format(time.RFC3339), controller)
	if len(who) > 0 {
		desc += ", written by " + strings.Join(who, ", ")
	}
	return desc + ")"
}

// CreateOwned creates obj under its name or, when an object owner does not control holds it,
// under the first of naming.Alternate's names (maxLen long at most) that is free or already
// owner's. obj's name is then the one used, and an alternate's AnnotationStandsFor names the
// predictable one. taken describes each object that held a name on the way; the error is a
// *ConflictError when every name was held.
func CreateOwned(ctx context.Context, c client.Client, reader client.Reader, owner types.UID, kind string,
	obj client.Object, maxLen int) (taken []string, err error) {
	predictable := obj.GetName()
	for k := 0; k <= naming.MaxAlternates; k++ {
		if k > 0 {
			obj.SetName(naming.Alternate(maxLen, predictable, string(owner), k))
			MarkStandsFor(obj, predictable)
		}
		err := c.Create(ctx, obj)
		if !apierrors.IsAlreadyExists(err) {
			return taken, err
		}
		existing, _ := obj.DeepCopyObject().(client.Object) // a copy of a client.Object is one
		if err := reader.Get(ctx, client.ObjectKeyFromObject(obj), existing); err != nil {
			return taken, err // gone meanwhile: the next pass creates it
		}
		if ControlledBy(existing, owner) {
			return taken, nil
		}
		taken = append(taken, TakenBy(kind, existing))
	}
	obj.SetName(predictable)
	return taken, &ConflictError{fmt.Sprintf("%s %s and its %d alternate names are all held by objects Ergon did not "+
		"create: %s; Ergon does not touch them: delete them", kind, predictable, naming.MaxAlternates, strings.Join(taken, "; "))}
}

// StandsFor is the predictable name an object stands for: its annotation's, else its own name.
func StandsFor(obj client.Object) string {
	if name := obj.GetAnnotations()[ergonv1alpha1.AnnotationStandsFor]; name != "" {
		return name
	}
	return obj.GetName()
}

// MarkStandsFor marks obj as created under an alternate of the predictable name standsFor.
func MarkStandsFor(obj client.Object, standsFor string) {
	if standsFor == "" {
		return
	}
	annotations := obj.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[ergonv1alpha1.AnnotationStandsFor] = standsFor
	obj.SetAnnotations(annotations)
}

// KindRun is the kind of a Run, as owner references name it.
const KindRun = "Run"

// KindWorkspace is the kind in the owner references of a Workspace's pod, claim and Lease.
const KindWorkspace = "Workspace"

// KindWorkspacePool is the kind in the owner references of a pool's warm pods and claims.
const KindWorkspacePool = "WorkspacePool"
