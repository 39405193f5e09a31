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

// Artifact is a file a step leaves for later steps and for people, kept in the artifact store
// (docs/artifacts.md). Its content never passes through the API server: the Run's status
// records its name, size and SHA-256.
type Artifact struct {
	// name of the artifact, unique in the step: 1 to 63 lowercase letters, digits, '-', '_'
	// or '.', beginning and ending with a letter or digit, such as report.md.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9_.]*[a-z0-9])?$`
	// +required
	Name string `json:"name"`

	// path is the file the step's command writes: an absolute path under /tmp, or under the
	// Workspace's mount for a step that runs against one. By default the command writes
	// $ERGON_ARTIFACTS/NAME.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Path string `json:"path,omitempty"`

	// mediaType says what the file is, such as image/png or text/markdown. It is recorded as
	// the step's word: the console looks at the bytes before it shows any.
	// +kubebuilder:validation:MaxLength=255
	// +kubebuilder:validation:Pattern=`^[a-z0-9][a-z0-9!#$&^_.+-]*/[a-z0-9][a-z0-9!#$&^_.+-]*$`
	// +optional
	MediaType string `json:"mediaType,omitempty"`
}

// InputArtifact is an artifact of an earlier step that a step reads: it is downloaded, and its
// SHA-256 checked, before the step's command starts.
type InputArtifact struct {
	// step that produces the artifact; it must run before this one (this step depends on it,
	// directly or through other steps).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +required
	Step string `json:"step"`

	// name of the artifact in that step's artifacts.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +required
	Name string `json:"name"`

	// path is where the file is put: an absolute path under /tmp, or under the Workspace's
	// mount. By default $ERGON_INPUT_ARTIFACTS/STEP/NAME.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Path string `json:"path,omitempty"`
}

// ArtifactStatus is an artifact a step made, as the Run records it: never its content.
type ArtifactStatus struct {
	// name of the artifact, as the step declares it.
	// +required
	Name string `json:"name"`

	// attempt of the step that made it.
	// +required
	Attempt int32 `json:"attempt"`

	// size in bytes.
	// +required
	Size int64 `json:"size"`

	// sha256 of the content, hex.
	// +required
	SHA256 string `json:"sha256"`

	// mediaType the step declared, when it did.
	// +optional
	MediaType string `json:"mediaType,omitempty"`

	// key is where the artifact lives in the artifact store.
	// +required
	Key string `json:"key"`
}
