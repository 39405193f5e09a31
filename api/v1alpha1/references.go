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

// Reference fields: a field that names something Ergon uses on a person's behalf (an object of
// the namespace, a memory, an endpoint) has a type of its own here, so that the closure walker's
// tests find every such field by its type, and a new one of a plain string type fails the test
// that reads the CRD schemas. Upstream selectors (corev1.SecretKeySelector,
// ConfigMapKeySelector, SecretEnvSource, ConfigMapEnvSource, LocalObjectReference) count as
// references by their own types. The JSON and CRD schema of a named string is the string's.

// ReferenceKind is what a reference names.
type ReferenceKind string

// Kinds of references.
const (
	ReferenceSecret                ReferenceKind = "Secret"
	ReferenceConfigMap             ReferenceKind = "ConfigMap"
	ReferencePersistentVolumeClaim ReferenceKind = "PersistentVolumeClaim"
	ReferenceScene                 ReferenceKind = "Scene"
	ReferenceWorkspace             ReferenceKind = "Workspace"
	// ReferenceMemory is a Scene memory, a store the controller keeps in a ConfigMap.
	ReferenceMemory ReferenceKind = "Memory"
	// ReferenceURL is an endpoint Ergon connects to: a model's API, an MCP server.
	ReferenceURL ReferenceKind = "URL"
	// ReferenceHost is a private host an agent's http_fetch may reach (allowHosts).
	ReferenceHost ReferenceKind = "Host"
)

// Reference is implemented by the named types of reference fields.
// +kubebuilder:object:generate=false
type Reference interface {
	ReferenceKind() ReferenceKind
}

// SceneName names a Scene of the same namespace that Ergon runs: a sub-scene step's Scene, a
// Scene tool's.
type SceneName string

// ReferenceKind is Scene.
func (SceneName) ReferenceKind() ReferenceKind { return ReferenceScene }

// MemoryName names a Scene memory.
type MemoryName string

// ReferenceKind is Memory.
func (MemoryName) ReferenceKind() ReferenceKind { return ReferenceMemory }

// URL is an http or https endpoint Ergon connects to: a model's baseURL, an MCP server's url.
type URL string

// ReferenceKind is URL.
func (URL) ReferenceKind() ReferenceKind { return ReferenceURL }

// Host is a host name, or host:port, that an agent's http_fetch may reach although it
// resolves to a private address.
type Host string

// ReferenceKind is Host.
func (Host) ReferenceKind() ReferenceKind { return ReferenceHost }
