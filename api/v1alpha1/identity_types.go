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

// UserIdentity is a person (or ServiceAccount) as the API server authenticated them: what a
// SubjectAccessReview needs to ask what they may do. Ergon stamps it on the objects that make it
// act for someone, and asks with it, at every effect, whether that someone may cause the effect.
type UserIdentity struct {
	// username as the API server authenticated it.
	Username string `json:"username"`
	// uid of the user, when the authenticator gives one.
	// +optional
	UID string `json:"uid,omitempty"`
	// groups the user belongs to.
	// +optional
	Groups []string `json:"groups,omitempty"`
	// extra carries the authenticator's other attributes (scopes, for example).
	// +optional
	Extra map[string][]string `json:"extra,omitempty"`
}

// Identity annotations. Admission stamps them from the request's authenticated user (never from
// what the client sent); the manager copies a Run's to the Runs it creates for it. Nobody else
// can set, change or remove them.
const (
	// AnnotationIdentity on a Run is the full identity of the person behind it, as JSON: its
	// requester (or the ServiceAccount of spec.runAs), the Trigger's for a Run a Trigger starts,
	// the parent Run's for a child Run. Every effect of the Run is authorized against it. On a
	// Trigger it is whoever last changed the Trigger's spec (or its runAs ServiceAccount): the
	// Trigger acts as them.
	AnnotationIdentity = AnnotationPrefix + "identity"
	// AnnotationEditor on a Scene is the full identity, as JSON, of whoever last changed its
	// spec. Every effect of a Run is authorized against the editor of every Scene in the Run's
	// closure too: whoever edits a Scene that another person runs may not borrow their authority.
	AnnotationEditor = AnnotationPrefix + "editor"
)
