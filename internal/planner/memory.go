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

package planner

import (
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/memory"
	"github.com/ergon-dev/ergon/internal/naming"
	"github.com/ergon-dev/ergon/internal/outputs/wire"
)

// MemoryFacts is what gather found of the Scene's memory store. It is gathered after Decide,
// and only when the plan keeps an agent step's transcript or starts an agent pod (NeedsMemory).
type MemoryFacts struct {
	// Store names the store's ConfigMap; "" when the Run has no person to keep User memory for.
	Store string
	// Exists says the ConfigMap is there; Conflict says why it is not the memory's store.
	Exists   bool
	Conflict string
	// Content, ResourceVersion and Owners are the store's, when it is the memory's.
	Content         string
	ResourceVersion string
	Owners          []metav1.OwnerReference
	// Scene is the Run's Scene, which owns the store; nil when it is gone.
	Scene *metav1.OwnerReference
}

// MemoryWrite is the store's next content: created when it does not exist (no ResourceVersion),
// else updated over the ResourceVersion gathered (a Run that wrote the store meanwhile makes it conflict, and the
// next pass applies the writes to what that Run kept).
type MemoryWrite struct {
	ConfigMap       string
	ResourceVersion string
	Content         string
	Owners          []metav1.OwnerReference
}

// NeedsMemory says whether the plan touches the Scene's memory: it keeps the transcript of an
// agent step, whose memory writes are applied, or starts an agent pod, which reads it.
func (p *Plan) NeedsMemory(f *Facts) bool {
	if f.Scene.Spec.Memory == nil {
		return false
	}
	for _, req := range p.Store {
		if s := f.Scene.Steps[req.Step]; s != nil && s.Spec.Agent != nil && req.Transcript != "" {
			return true
		}
	}
	return p.startsAgents()
}

// startsAgents says whether the plan starts an agent pod.
func (p *Plan) startsAgents() bool {
	return slices.ContainsFunc(p.Pods, func(req PodRequest) bool { return req.Step.Spec.Agent != nil })
}

// DecideMemory applies the memory writes of the agent steps the plan records as succeeded to
// the store (f.Memory), before the status that records them is written, and pins the memory
// the plan's agent pods may read (MemoryPin: the store's content after the writes). A step's
// writes carry its source (the Run's UID and the step, hashed), so that a pass whose status
// write was lost applies nothing twice. The writes come from the transcript, which the
// runtime redacted; the store redacts what looks like a secret once more.
func DecideMemory(f *Facts, p *Plan) {
	m, mf := f.Scene.Spec.Memory, f.Memory
	if m == nil || mf == nil {
		return
	}
	tell := func(warning bool, reason, action, format string, args ...any) {
		p.Events = append(p.Events, Event{Warning: warning, Reason: reason, Action: action, Message: fmt.Sprintf(format, args...)})
	}
	if mf.Conflict != "" && p.startsAgents() {
		tell(true, ergonv1alpha1.ReasonNameConflict, "ReadMemory",
			"The agent steps of this Run do not read memory %s: %s", m.Name, mf.Conflict)
	}
	store, err := memory.Read([]byte(mf.Content))
	content, owners, changed := mf.Content, mf.Owners, false
	for _, req := range p.Store {
		step := f.Scene.Steps[req.Step]
		if step == nil || step.Spec.Agent == nil || req.Transcript == "" {
			continue
		}
		writes := memory.FromTranscript(req.Transcript)
		var why string
		switch {
		case len(writes) == 0:
			continue
		case mf.Store == "":
			tell(true, "MemoryNotKept", "ApplyMemory", "Step %s proposed %d memory writes, but the Run has no person behind it to keep User memory %s for",
				req.Step, len(writes), m.Name)
			continue
		case mf.Scene == nil:
			// Nothing would own the store: it would outlive everything that reads it.
			why = fmt.Sprintf("Scene %s is gone", f.Run.Spec.SceneRef.Name)
		case mf.Conflict != "":
			why = mf.Conflict
		case err != nil:
			why = fmt.Sprintf("ConfigMap %s: %v", mf.Store, err)
		}
		if why != "" {
			tell(true, "MemoryNotKept", "ApplyMemory", "Step %s proposed %d memory writes, which were not kept: %s", req.Step, len(writes), why)
			continue
		}
		var res memory.Result
		store, res = memory.Apply(store, writes, naming.Hash(string(f.Run.UID), req.Step), f.Now, m.EffectiveMaxBytes())
		if !res.Applied {
			continue
		}
		changed = true
		tell(false, "MemoryUpdated", "ApplyMemory", "Step %s kept %d entries in memory %s (%d replaced, %d evicted, %d redacted)",
			req.Step, res.Added, m.Name, res.Replaced, res.Evicted, res.Redacted)
	}
	if changed {
		content = string(store.Marshal())
		if !slices.ContainsFunc(owners, func(o metav1.OwnerReference) bool { return o.UID == mf.Scene.UID }) {
			owners = append(slices.Clone(owners), *mf.Scene)
		}
		p.MemoryWrite = &MemoryWrite{ConfigMap: mf.Store, ResourceVersion: mf.ResourceVersion, Content: content, Owners: owners}
	}
	if mf.Store != "" && mf.Conflict == "" && (mf.Exists || changed) {
		p.MemoryPin = wire.Digest([]byte(content))
	}
}
