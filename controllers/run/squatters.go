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

package run

import (
	"context"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/controllers/internal/shared"
	"github.com/ergon-dev/ergon/internal/naming"
	"github.com/ergon-dev/ergon/internal/planner"
)

// Names cannot be squatted. The names of what a Run or Trigger creates are predictable, so
// anyone who may create objects in the namespace can take one first. Ergon never adopts nor
// touches such an object (ownership.go); it creates its own under an alternate name
// (naming.Alternate), tells who held the name in an Event and the NameTaken condition, and
// records the name it used where the status records names (a step's podName or childRun).
// An alternate carries AnnotationStandsFor, so what is looked up by its predictable name is
// found again, by a restarted manager too.
//
// A Trigger reads what holds a name when its create fails (CreateOwned). A Run's act does not
// read: it reports the name held (heldNames), the pass writes no status, the next pass's
// gather reads what holds the name and its alternates (gatherNames), and the planner moves the
// create (planner.NameFacts).

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
		if err == nil && shared.ControlledBy(obj, owner) {
			return nil
		}
		if err != nil && k == 0 {
			return err // nobody holds the name: no alternate was needed
		}
	}
	return apierrors.NewNotFound(corev1.Resource("object"), name)
}

// heldName is a predictable name a create of act found held, of an object of kind.
type heldName struct{ kind, name string }

// heldNames collects, during one act, the names its creates found held: by someone else's
// object, or by the Run's own that the cache did not show. Act does not read to tell them
// apart. Pods are created side by side, so it locks.
type heldNames struct {
	mu    sync.Mutex
	names []heldName
}

// createHeld creates obj; a name held already is noted under the predictable name obj stands
// for, and the rest of act goes on.
func (a *runActor) createHeld(ctx context.Context, kind string, obj client.Object, held *heldNames) error {
	err := a.Create(ctx, obj)
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	held.mu.Lock()
	defer held.mu.Unlock()
	held.names = append(held.names, heldName{kind, shared.StandsFor(obj)})
	return nil
}

// err is a *namesHeldError when a create found its name held.
func (h *heldNames) err() error {
	if len(h.names) == 0 {
		return nil
	}
	return &namesHeldError{names: h.names}
}

// namesHeldError ends a pass that found names held: its status is not written, since it may
// name objects that are not the Run's, and the next pass gathers what holds them.
type namesHeldError struct{ names []heldName }

func (e *namesHeldError) Error() string {
	var names []string
	for _, n := range e.names {
		names = append(names, n.kind+" "+n.name)
	}
	return "names held: " + strings.Join(names, ", ")
}

// rememberHeld keeps the names a pass found held for the Run's next passes, until a status
// write records what they resolved to.
func (r *RunReconciler) rememberHeld(key string, names []heldName) {
	v, _ := r.held.LoadOrStore(key, &sync.Map{})
	for _, n := range names {
		v.(*sync.Map).Store(n, true)
	}
}

// heldObject is an empty object of kind, and the longest name of its kind.
func heldObject(kind string) (client.Object, int) {
	switch kind {
	case "pod":
		return &corev1.Pod{}, naming.MaxLabelLength
	case shared.KindRun:
		return &ergonv1alpha1.Run{}, naming.MaxLabelLength
	case "Gate":
		return &ergonv1alpha1.Gate{}, naming.MaxLabelLength
	}
	return &corev1.ConfigMap{}, naming.MaxSubdomainLength
}

// gatherNames reads, for each name the Run's earlier creates found held, what holds it and its
// alternates, from the API server (the cache may not show an object created a moment ago).
func (r *RunReconciler) gatherNames(ctx context.Context, run *ergonv1alpha1.Run, f *planner.Facts) error {
	v, ok := r.held.Load(client.ObjectKeyFromObject(run).String())
	if !ok {
		return nil
	}
	var err error
	v.(*sync.Map).Range(func(k, _ any) bool {
		n := k.(heldName)
		var nf planner.NameFacts
		if nf, err = r.resolveHeld(ctx, run, n); err == nil {
			if f.Names == nil {
				f.Names = map[string]planner.NameFacts{}
			}
			f.Names[n.name] = nf
		}
		return err == nil
	})
	return err
}

// resolveHeld walks a held name and its alternates to the first that is free or the Run's.
func (r *RunReconciler) resolveHeld(ctx context.Context, run *ergonv1alpha1.Run, n heldName) (planner.NameFacts, error) {
	nf := planner.NameFacts{Kind: n.kind}
	for k := 0; k <= naming.MaxAlternates; k++ {
		obj, maxLen := heldObject(n.kind)
		name := n.name
		if k > 0 {
			name = naming.Alternate(maxLen, n.name, string(run.UID), k)
		}
		err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: run.Namespace, Name: name}, obj)
		switch {
		case apierrors.IsNotFound(err):
			nf.Use = name
			return nf, nil
		case err != nil:
			return nf, err
		case shared.ControlledBy(obj, run.UID):
			nf.Use, nf.Exists = name, true
			return nf, nil
		}
		nf.Taken = append(nf.Taken, shared.TakenBy(n.kind, obj))
	}
	return nf, nil
}
