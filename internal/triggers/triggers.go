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

// Package triggers holds what the three Trigger sources share and what needs no client: the
// Run a Trigger starts, its params mapped from an event with CEL, and the data a finished Run
// offers to runCompleted mappings.
package triggers

import (
	"encoding/json"
	"maps"
	"slices"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/expr"
	"github.com/ergon-dev/ergon/internal/identity"
	"github.com/ergon-dev/ergon/internal/naming"
)

// NewRun builds the Run a Trigger starts under the given name: the Trigger's Scene, its
// params overlaid with those mapped from the event, labelled with the Trigger and owned by it,
// so deleting a Trigger deletes its Runs, as deleting a CronJob deletes its Jobs. The Run is
// created by the person the Trigger acts as, whom admission recorded on the Trigger, so a Gate
// that forbids self-approval refuses them.
func NewRun(trigger *ergonv1alpha1.Trigger, name string, mapped map[string]string) *ergonv1alpha1.Run {
	params := maps.Clone(trigger.Spec.Params)
	if len(mapped) > 0 && params == nil {
		params = map[string]string{}
	}
	maps.Copy(params, mapped)
	// The Trigger acts as whoever last changed its spec (or its runAs ServiceAccount): the
	// identity admission stamped on it. A Trigger without one starts Runs without one, which
	// do nothing but say so.
	annotations := map[string]string{}
	if creator := trigger.Annotations[ergonv1alpha1.AnnotationCreator]; creator != "" {
		annotations[ergonv1alpha1.AnnotationCreatedBy] = creator
	}
	if id, ok, _ := identity.Of(trigger, ergonv1alpha1.AnnotationIdentity); ok {
		annotations[ergonv1alpha1.AnnotationIdentity] = identity.Encode(id)
		annotations[ergonv1alpha1.AnnotationCreatedBy] = id.Username
	}
	if len(annotations) == 0 {
		annotations = nil
	}
	return &ergonv1alpha1.Run{
		ObjectMeta: metav1.ObjectMeta{
			Annotations: annotations,
			Name:        name,
			Namespace:   trigger.Namespace,
			Labels: map[string]string{
				ergonv1alpha1.LabelManagedBy: ergonv1alpha1.ManagedByErgon,
				ergonv1alpha1.LabelTrigger:   naming.LabelValue(trigger.Name),
				ergonv1alpha1.LabelScene:     naming.LabelValue(trigger.Spec.SceneRef.Name),
			},
			OwnerReferences: []metav1.OwnerReference{
				*metav1.NewControllerRef(trigger, ergonv1alpha1.GroupVersion.WithKind("Trigger")),
			},
		},
		Spec: ergonv1alpha1.RunSpec{SceneRef: trigger.Spec.SceneRef, Params: params},
	}
}

// Mappings are the compiled param mappings of one source of one generation of a Trigger.
type Mappings struct {
	uid        types.UID
	generation int64
	byParam    map[string]*expr.Mapping
}

// Eval evaluates every mapping over vars and returns the params, or the first error in
// param order, which names the field of the mapping that failed.
func (m *Mappings) Eval(vars map[string]any) (map[string]string, error) {
	if len(m.byParam) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(m.byParam))
	for _, name := range slices.Sorted(maps.Keys(m.byParam)) {
		v, err := m.byParam[name].Eval(vars)
		if err != nil {
			return nil, err
		}
		out[name] = v
	}
	return out, nil
}

// MappingCache compiles each Trigger generation's mappings once. It is safe for concurrent
// use and forgets a Trigger when it is told to.
type MappingCache struct {
	entries sync.Map // types.NamespacedName -> *Mappings
}

// Get returns the compiled mappings of the Trigger's webhook or runCompleted source: params
// over the variable body, or over run.
func (c *MappingCache) Get(trigger *ergonv1alpha1.Trigger) (*Mappings, error) {
	key := types.NamespacedName{Namespace: trigger.Namespace, Name: trigger.Name}
	if v, ok := c.entries.Load(key); ok {
		m := v.(*Mappings)
		if m.uid == trigger.UID && m.generation == trigger.Generation {
			return m, nil
		}
	}
	var (
		params   map[string]string
		path     *field.Path
		variable string
	)
	switch {
	case trigger.Spec.Webhook != nil:
		params, path, variable = trigger.Spec.Webhook.Params, field.NewPath("spec", "webhook", "params"), "body"
	case trigger.Spec.RunCompleted != nil:
		params, path, variable = trigger.Spec.RunCompleted.Params, field.NewPath("spec", "runCompleted", "params"), "run"
	}
	m := &Mappings{uid: trigger.UID, generation: trigger.Generation, byParam: map[string]*expr.Mapping{}}
	for name, src := range params {
		compiled, err := expr.CompileMapping(path.Key(name).String(), src, variable)
		if err != nil {
			return nil, err
		}
		m.byParam[name] = compiled
	}
	c.entries.Store(key, m)
	return m, nil
}

// Forget drops a Trigger's mappings.
func (c *MappingCache) Forget(namespace, name string) {
	c.entries.Delete(types.NamespacedName{Namespace: namespace, Name: name})
}

// Prune drops the mappings of every Trigger keep returns false for.
func (c *MappingCache) Prune(keep func(types.NamespacedName) bool) {
	c.entries.Range(func(k, _ any) bool {
		if key := k.(types.NamespacedName); !keep(key) {
			c.entries.Delete(key)
		}
		return true
	})
}

// RunVars is what a runCompleted mapping sees as run: the finished Run's name, namespace,
// uid, scene, phase, params, outputs (each with preview, size, sha256), startedAt and
// finishedAt, as the Run's JSON has them.
func RunVars(run *ergonv1alpha1.Run) (map[string]any, error) {
	view := struct {
		Name       string                               `json:"name"`
		Namespace  string                               `json:"namespace"`
		UID        string                               `json:"uid"`
		Scene      string                               `json:"scene"`
		Phase      ergonv1alpha1.RunPhase               `json:"phase"`
		Params     map[string]string                    `json:"params"`
		Outputs    map[string]ergonv1alpha1.OutputValue `json:"outputs"`
		StartedAt  *metav1.Time                         `json:"startedAt,omitempty"`
		FinishedAt *metav1.Time                         `json:"finishedAt,omitempty"`
	}{
		Name: run.Name, Namespace: run.Namespace, UID: string(run.UID), Scene: run.Spec.SceneRef.Name,
		Phase: run.Status.Phase, Params: orEmpty(run.Spec.Params), Outputs: orEmpty(run.Status.Outputs),
		StartedAt: run.Status.StartedAt, FinishedAt: run.Status.FinishedAt,
	}
	encoded, err := json.Marshal(view)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	if err := json.Unmarshal(encoded, &out); err != nil {
		return nil, err
	}
	return map[string]any{"run": out}, nil
}

func orEmpty[V any](m map[string]V) map[string]V {
	if m == nil {
		return map[string]V{}
	}
	return m
}
