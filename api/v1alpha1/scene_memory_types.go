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

package v1alpha1

// MemoryScope says whose memory a Scene's agent steps share.
// +kubebuilder:validation:Enum=Scene;User
type MemoryScope string

// Memory scopes.
const (
	// MemoryScopeScene shares one memory among all Runs of the Scene.
	MemoryScopeScene MemoryScope = "Scene"
	// MemoryScopeUser keeps one memory per person behind the Runs (the Run's
	// ergon.dev/created-by), shared by the Scenes of the namespace that name the same memory
	// with scope User. A Run with no person has no User memory.
	MemoryScopeUser MemoryScope = "User"
)

// Bounds of a memory's size.
const (
	DefaultMemoryMaxBytes = 16 << 10
	MaxMemoryMaxBytes     = 256 << 10
)

// SceneMemory is a memory that outlives Runs: a store the controller keeps in a ConfigMap.
// Agent steps read it as context and propose writes with the remember tool; the controller
// applies them when the step succeeds, oldest entries evicted past maxBytes.
type SceneMemory struct {
	// name names the memory. With scope User, Scenes that name the same memory share each
	// person's store.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +required
	Name MemoryName `json:"name"`

	// scope is Scene (one store shared by all Runs of the Scene) or User (one store per
	// person behind the Run).
	// +kubebuilder:default=Scene
	// +optional
	Scope MemoryScope `json:"scope,omitempty"`

	// maxBytes caps the store (its JSON document); the oldest entries are evicted first.
	// 16384 by default, at most 262144 so that the store fits a ConfigMap.
	// +kubebuilder:validation:Minimum=4096
	// +kubebuilder:validation:Maximum=262144
	// +optional
	MaxBytes *int32 `json:"maxBytes,omitempty"`
}

// EffectiveScope is the scope, Scene when unset.
func (m *SceneMemory) EffectiveScope() MemoryScope {
	if m.Scope == "" {
		return MemoryScopeScene
	}
	return m.Scope
}

// EffectiveMaxBytes is maxBytes, DefaultMemoryMaxBytes when unset.
func (m *SceneMemory) EffectiveMaxBytes() int {
	if m.MaxBytes == nil {
		return DefaultMemoryMaxBytes
	}
	return int(*m.MaxBytes)
}
