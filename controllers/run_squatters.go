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

package controllers

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/naming"
)

// Names cannot be squatted. The names of what a Run or Trigger creates are predictable, so
// anyone who may create objects in the namespace can take one first. Ergon never adopts nor
// touches such an object (run_ownership.go); it creates its own under an alternate name
// (naming.Alternate), tells who held the name in an Event and the NameTaken condition, and
// records the name it used where the status records names (a step's podName or childRun).
// An alternate carries AnnotationStandsFor, so what is looked up by its predictable name is
// found again, by a restarted manager too.

// takenBy describes the object that holds a name Ergon wanted, for people: its kind and name,
// UID, age, controller and the field managers that wrote it, which say which client made it.
func takenBy(kind string, obj client.Object) string {
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

// createOwned creates obj under its name or, when an object owner does not control holds it,
// under the first of naming.Alternate's names (maxLen long at most) that is free or already
// owner's. obj's name is then the one used, and an alternate's AnnotationStandsFor names the
// predictable one. taken describes each object that held a name on the way; the error is a
// *conflictError when every name was held.
func createOwned(ctx context.Context, c actClient, reader client.Reader, owner types.UID, kind string,
	obj client.Object, maxLen int) (taken []string, err error) {
	predictable := obj.GetName()
	for k := 0; k <= naming.MaxAlternates; k++ {
		if k > 0 {
			obj.SetName(naming.Alternate(maxLen, predictable, string(owner), k))
			annotations := obj.GetAnnotations()
			if annotations == nil {
				annotations = map[string]string{}
			}
			annotations[ergonv1alpha1.AnnotationStandsFor] = predictable
			obj.SetAnnotations(annotations)
		}
		err := c.Create(ctx, obj)
		if !apierrors.IsAlreadyExists(err) {
			return taken, err
		}
		existing, _ := obj.DeepCopyObject().(client.Object) // a copy of a client.Object is one
		if err := reader.Get(ctx, client.ObjectKeyFromObject(obj), existing); err != nil {
			return taken, err // gone meanwhile: the next pass creates it
		}
		if controlledBy(existing, owner) {
			return taken, nil
		}
		taken = append(taken, takenBy(kind, existing))
	}
	obj.SetName(predictable)
	return taken, &conflictError{fmt.Sprintf("%s %s and its %d alternate names are all held by objects Ergon did not "+
		"create: %s; Ergon does not touch them: delete them", kind, predictable, naming.MaxAlternates, strings.Join(taken, "; "))}
}

// standsFor is the predictable name an object stands for: its annotation's, else its own name.
func standsFor(obj client.Object) string {
	if name := obj.GetAnnotations()[ergonv1alpha1.AnnotationStandsFor]; name != "" {
		return name
	}
	return obj.GetName()
}

// getOwned reads the object owner controls under name or, when someone else's holds name,
// under one of its alternates. It returns NotFound when owner has none of them.
func getOwned(ctx context.Context, reader client.Reader, owner types.UID, key client.ObjectKey, obj client.Object,
	maxLen int) error {
	name := key.Name
	for k := 0; k <= naming.MaxAlternates; k++ {
		if k > 0 {
			key.Name = naming.Alternate(maxLen, name, string(owner), k)
		}
		err := reader.Get(ctx, key, obj)
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		if err == nil && controlledBy(obj, owner) {
			return nil
		}
		if err != nil && k == 0 {
			return err // nobody holds the name: no alternate was needed
		}
	}
	return apierrors.NewNotFound(corev1.Resource("object"), name)
}

// squatters collects, during one pass, what held the names the pass wanted: one note each,
// told once the pass has acted (tellSquatters). Pods are created side by side, so it locks.
type squatters struct {
	mu    sync.Mutex
	notes []string
}

func (s *squatters) add(note string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.notes = append(s.notes, note)
}

// tellSquatters tells each note as a Warning Event of obj and sets its NameTaken condition,
// whose message is the last note.
func tellSquatters(rec recorder.EventRecorder, obj client.Object, conditions *[]metav1.Condition, generation int64, s *squatters) {
	for _, note := range s.notes {
		rec.Eventf(obj, nil, corev1.EventTypeWarning, ergonv1alpha1.ReasonNameSquatted, "CreateUnderAlternateName", "%s", note)
	}
	if len(s.notes) == 0 {
		return
	}
	meta.SetStatusCondition(conditions, metav1.Condition{Type: ergonv1alpha1.ConditionNameTaken, Status: metav1.ConditionTrue,
		Reason: ergonv1alpha1.ReasonNameSquatted, Message: s.notes[len(s.notes)-1], ObservedGeneration: generation})
}

// alternatesHeld reports whether every alternate name of obj's (naming.Alternate) is held by an
// object owner does not control, so that nothing can be created under any of them.
func alternatesHeld(ctx context.Context, reader client.Reader, owner types.UID, obj client.Object, maxLen int) (bool, error) {
	for k := 1; k <= naming.MaxAlternates; k++ {
		existing, _ := obj.DeepCopyObject().(client.Object) // a copy of a client.Object is one
		key := client.ObjectKey{Namespace: obj.GetNamespace(), Name: naming.Alternate(maxLen, obj.GetName(), string(owner), k)}
		err := reader.Get(ctx, key, existing)
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if controlledBy(existing, owner) {
			return false, nil
		}
	}
	return true, nil
}
