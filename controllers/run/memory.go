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
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/controllers/internal/shared"
	"github.com/ergon-dev/ergon/internal/agentspec"
	"github.com/ergon-dev/ergon/internal/compile"
	"github.com/ergon-dev/ergon/internal/naming"
	"github.com/ergon-dev/ergon/internal/planner"
)

// The memory of a Scene: a ConfigMap per store, owned by the Scenes that use it, mounted
// into their agent pods.
const (
	memoryKey  = "memory"
	memoryDir  = "/ergon/memory"
	memoryFile = "memory.json"
	// memoryVolumeName is the agent pod's volume of the store.
	memoryVolumeName = "ergon-memory"
	// labelMemory names the memory a store ConfigMap holds.
	labelMemory = ergonv1alpha1.AnnotationPrefix + "memory"
)

// memoryStore names the store a Run's agent steps read and write: for scope Scene the
// Scene's, for scope User the person's behind the Run. A Run with no person has no User
// memory.
func memoryStore(run *ergonv1alpha1.Run, m *ergonv1alpha1.SceneMemory) (string, bool) {
	scope := m.EffectiveScope()
	key := run.Spec.SceneRef.Name
	if scope == ergonv1alpha1.MemoryScopeUser {
		key = run.Annotations[ergonv1alpha1.AnnotationCreatedBy]
		if key == "" {
			return "", false
		}
	}
	return naming.MemoryConfigMapName(string(m.Name), string(scope), key), true
}

// mountMemory gives an agent pod its Scene's memory, if the Run has a store: the store's
// ConfigMap as an optional volume (a store not written yet is an empty memory), and the
// memory in the agent spec. The memory is not in the spec itself, whose annotation is
// bounded; the kubelet reads the ConfigMap when the pod starts.
func mountMemory(pod *corev1.Pod, spec *agentspec.Spec, run *ergonv1alpha1.Run, scene *compile.Scene) {
	m := scene.Spec.Memory
	if m == nil {
		return
	}
	name, ok := memoryStore(run, m)
	if !ok {
		return
	}
	file := mountOptionalKey(pod, memoryVolumeName, name, memoryKey, memoryFile, memoryDir)
	spec.Memory = &agentspec.MemoryConfig{Name: string(m.Name), Scope: string(m.EffectiveScope()), File: file}
}

// checkStore says whether a ConfigMap is the store of memory name: internal state, which only
// the manager can label so (config/policies), of that memory. No Scene controls a store that
// several share, so there is no controller to check; the admission policy is what keeps
// tenants from writing one.
func checkStore(cm *corev1.ConfigMap, name string) error {
	if _, err := shared.VerifyInternal(cm, shared.Want{What: "memory " + name, Key: memoryKey, Size: -1}); err != nil {
		return err
	}
	if cm.Labels[labelMemory] != name {
		return &shared.ConflictError{Message: fmt.Sprintf(
			"ConfigMap %s is not the store of memory %s; delete it to let Ergon keep the memory", cm.Name, name)}
	}
	return nil
}

// gatherMemory reads the Scene's memory store and the Scene that owns it into f.Memory, when
// the plan needs them (planner.Plan.NeedsMemory): after Decide, before act. The store is read
// from the API server, not the cache: other Runs of the Scene write it, and an update over a
// stale resourceVersion would only conflict.
func (r *RunReconciler) gatherMemory(ctx context.Context, run *ergonv1alpha1.Run, f *planner.Facts, plan *planner.Plan) error {
	if !plan.NeedsMemory(f) {
		return nil
	}
	m := f.Scene.Spec.Memory
	mf := &planner.MemoryFacts{}
	name, ok := memoryStore(run, m)
	if !ok {
		f.Memory = mf
		return nil
	}
	mf.Store = name
	owner := &ergonv1alpha1.Scene{}
	err := r.Get(ctx, client.ObjectKey{Namespace: run.Namespace, Name: run.Spec.SceneRef.Name}, owner)
	switch {
	case err == nil:
		mf.Scene = &metav1.OwnerReference{APIVersion: ergonv1alpha1.GroupVersion.String(), Kind: "Scene", Name: owner.Name, UID: owner.UID}
	case !apierrors.IsNotFound(err):
		return err
	}
	cm := &corev1.ConfigMap{}
	err = r.APIReader.Get(ctx, client.ObjectKey{Namespace: run.Namespace, Name: name}, cm)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return err
	default:
		mf.Exists = true
		if err := checkStore(cm, string(m.Name)); err != nil {
			mf.Conflict = err.Error()
			break
		}
		mf.Content, mf.ResourceVersion, mf.Owners = cm.Data[memoryKey], cm.ResourceVersion, cm.OwnerReferences
	}
	f.Memory = mf
	return nil
}

// writeMemory keeps the memory writes the plan decided (planner.DecideMemory), before the
// status that records their steps is written. Another Run that wrote the store since it was
// gathered makes the write conflict (or, for a store both create, already exist): the pass
// then stops short of its status and plans again on what that Run kept.
func (a *runActor) writeMemory(ctx context.Context, run *ergonv1alpha1.Run, scene *compile.Scene, plan *planner.Plan) error {
	w := plan.MemoryWrite
	if w == nil {
		return nil
	}
	cm := shared.MarkInternal(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: w.ConfigMap, Namespace: run.Namespace,
		ResourceVersion: w.ResourceVersion, OwnerReferences: w.Owners,
		Labels: map[string]string{ergonv1alpha1.LabelManagedBy: ergonv1alpha1.ManagedByErgon, labelMemory: string(scene.Spec.Memory.Name)}}})
	cm.Data = map[string]string{memoryKey: w.Content}
	err := a.put(ctx, cm)
	if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) {
		return &contendedError{what: "memory " + string(scene.Spec.Memory.Name), err: err}
	}
	return err
}

// contendedError is a write that lost to another writer of a shared object since gather read
// it; the pass writes no status and runs again at once.
type contendedError struct {
	what string
	err  error
}

func (e *contendedError) Error() string {
	return fmt.Sprintf("%s changed since it was read: %v", e.what, e.err)
}
func (e *contendedError) Unwrap() error { return e.err }
