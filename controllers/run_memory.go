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
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/agentspec"
	"github.com/ergon-dev/ergon/internal/compile"
	"github.com/ergon-dev/ergon/internal/memory"
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
	if _, err := verifyInternal(cm, internalWant{what: "memory " + name, key: memoryKey, size: -1}); err != nil {
		return err
	}
	if cm.Labels[labelMemory] != name {
		return &conflictError{fmt.Sprintf("ConfigMap %s is not the store of memory %s; delete it to let Ergon keep the memory", cm.Name, name)}
	}
	return nil
}

// memoryPin is the digest of the memory the agent pods of this pass may read, for
// $ERGON_MEMORY_SHA256: the store's content as it is now, when the store is the memory's; ""
// (read nothing) when there is no store, and when a ConfigMap that is not the store has its
// name, which is told in an Event. The kubelet mounts the store by name; the pin keeps the
// runtime from reading anything else under it.
func (a *runActor) memoryPin(ctx context.Context, run *ergonv1alpha1.Run, scene *compile.Scene, plan *planner.Plan) (string, error) {
	m := scene.Spec.Memory
	if m == nil || !slices.ContainsFunc(plan.Pods, func(p planner.PodRequest) bool { return p.Step.Spec.Agent != nil }) {
		return "", nil
	}
	name, ok := memoryStore(run, m)
	if !ok {
		return "", nil
	}
	cm := &corev1.ConfigMap{}
	err := a.reads.live.Get(ctx, client.ObjectKey{Namespace: run.Namespace, Name: name}, cm)
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	if err := checkStore(cm, string(m.Name)); err != nil {
		a.Recorder.Eventf(run, nil, corev1.EventTypeWarning, ergonv1alpha1.ReasonNameConflict, "ReadMemory",
			"The agent steps of this Run do not read memory %s: %s", m.Name, err.Error())
		return "", nil
	}
	return digest(cm.Data[memoryKey]), nil
}

// transcriptMemory reads the memory writes an agent transcript proposes.
func transcriptMemory(transcript string) []memory.Write {
	var t struct {
		Memory []memory.Write `json:"memory"`
	}
	if json.Unmarshal([]byte(transcript), &t) != nil {
		return nil
	}
	return t.Memory
}

// applyMemory applies the memory writes of the agent steps this plan records as succeeded
// to the Scene's memory, before the status that records them is written. A step's writes
// carry its source (the Run's UID and the step, hashed), so that a pass whose status write
// was lost applies nothing twice. The writes come from the transcript, which the runtime
// redacted; the store redacts what looks like a secret once more.
func (a *runActor) applyMemory(ctx context.Context, run *ergonv1alpha1.Run, scene *compile.Scene, plan *planner.Plan) error {
	m := scene.Spec.Memory
	if m == nil {
		return nil
	}
	for _, req := range plan.Store {
		step := scene.Steps[req.Step]
		if step == nil || step.Spec.Agent == nil || req.Transcript == "" {
			continue
		}
		writes := transcriptMemory(req.Transcript)
		if len(writes) == 0 {
			continue
		}
		name, ok := memoryStore(run, m)
		if !ok {
			a.Recorder.Eventf(run, nil, corev1.EventTypeWarning, "MemoryNotKept", "ApplyMemory",
				"Step %s proposed %d memory writes, but the Run has no person behind it to keep User memory %s for", req.Step, len(writes), m.Name)
			continue
		}
		err := a.writeMemory(ctx, run, scene, name, req.Step, writes)
		if conflict, ok := errors.AsType[*conflictError](err); ok {
			// Someone else's ConfigMap under the store's name does not stop the Run.
			a.Recorder.Eventf(run, nil, corev1.EventTypeWarning, "MemoryNotKept", "ApplyMemory",
				"Step %s proposed %d memory writes, which were not kept: %s", req.Step, len(writes), conflict.Error())
			continue
		}
		if err != nil {
			return fmt.Errorf("applying the memory writes of step %s: %w", req.Step, err)
		}
	}
	return nil
}

// writeMemory applies one step's writes to the store ConfigMap name, creating it, owned by
// the Run's Scene, when it does not exist yet.
func (a *runActor) writeMemory(ctx context.Context, run *ergonv1alpha1.Run, scene *compile.Scene, name, step string,
	writes []memory.Write) error {
	m := scene.Spec.Memory
	owner := &ergonv1alpha1.Scene{}
	if err := a.reads.cache.Get(ctx, client.ObjectKey{Namespace: run.Namespace, Name: run.Spec.SceneRef.Name}, owner); err != nil {
		if apierrors.IsNotFound(err) {
			// Nothing would own the store: it would outlive everything that reads it.
			a.Recorder.Eventf(run, nil, corev1.EventTypeWarning, "MemoryNotKept", "ApplyMemory",
				"Step %s proposed memory writes, but Scene %s is gone", step, run.Spec.SceneRef.Name)
			return nil
		}
		return err
	}
	ref := metav1.OwnerReference{APIVersion: ergonv1alpha1.GroupVersion.String(), Kind: "Scene", Name: owner.Name, UID: owner.UID}
	source := naming.Hash(string(run.UID), step)
	var res memory.Result
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cm := &corev1.ConfigMap{}
		err := a.reads.live.Get(ctx, client.ObjectKey{Namespace: run.Namespace, Name: name}, cm)
		create := apierrors.IsNotFound(err)
		switch {
		case create:
			cm = markInternal(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: run.Namespace,
				Labels: map[string]string{ergonv1alpha1.LabelManagedBy: ergonv1alpha1.ManagedByErgon, labelMemory: string(m.Name)}}})
		case err != nil:
			return err
		default:
			if err := checkStore(cm, string(m.Name)); err != nil {
				return err
			}
		}
		store, err := memory.Read([]byte(cm.Data[memoryKey]))
		if err != nil {
			return fmt.Errorf("ConfigMap %s: %w", name, err)
		}
		var next memory.Store
		next, res = memory.Apply(store, writes, source, a.Clock.Now(), m.EffectiveMaxBytes())
		if !res.Applied {
			return nil
		}
		cm.Data = map[string]string{memoryKey: string(next.Marshal())}
		if !slices.ContainsFunc(cm.OwnerReferences, func(o metav1.OwnerReference) bool { return o.UID == owner.UID }) {
			cm.OwnerReferences = append(cm.OwnerReferences, ref)
		}
		if create {
			return a.Create(ctx, cm)
		}
		return a.Update(ctx, cm)
	})
	if err != nil {
		return err // AlreadyExists too: another Run created the store first, the next pass updates it
	}
	if res.Applied {
		a.Recorder.Eventf(run, nil, corev1.EventTypeNormal, "MemoryUpdated", "ApplyMemory",
			"Step %s kept %d entries in memory %s (%d replaced, %d evicted, %d redacted)",
			step, res.Added, m.Name, res.Replaced, res.Evicted, res.Redacted)
	}
	return nil
}
