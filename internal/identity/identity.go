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

// Package identity is Ergon's identity rule: who a Run, a Trigger or a Scene edit acts for, as
// the API server authenticated them, how that is stamped on the object (an annotation of JSON,
// set by admission only), and how it is asked about in a SubjectAccessReview.
package identity

import (
	"encoding/json"
	"fmt"
	"slices"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

// FromUserInfo is the identity the API server authenticated for a request.
func FromUserInfo(u authenticationv1.UserInfo) ergonv1alpha1.UserIdentity {
	id := ergonv1alpha1.UserIdentity{Username: u.Username, UID: u.UID, Groups: slices.Clone(u.Groups)}
	if len(u.Extra) > 0 {
		id.Extra = make(map[string][]string, len(u.Extra))
		for k, v := range u.Extra {
			id.Extra[k] = slices.Clone([]string(v))
		}
	}
	return id
}

// ServiceAccount is the identity the API server gives a ServiceAccount's token: its username and
// the groups every ServiceAccount of its namespace is in.
func ServiceAccount(namespace, name string) ergonv1alpha1.UserIdentity {
	return ergonv1alpha1.UserIdentity{
		Username: serviceaccount.MakeUsername(namespace, name),
		Groups:   append(serviceaccount.MakeGroupNames(namespace), "system:authenticated"),
	}
}

// Encode is the annotation value of an identity: JSON, with groups and extra in a stable order,
// so the same person always reads the same.
func Encode(id ergonv1alpha1.UserIdentity) string {
	id = normal(id)
	raw, err := json.Marshal(id)
	if err != nil {
		// A struct of strings always marshals.
		panic(err)
	}
	return string(raw)
}

// Decode reads an annotation value Encode wrote. An empty username is no identity.
func Decode(value string) (ergonv1alpha1.UserIdentity, error) {
	var id ergonv1alpha1.UserIdentity
	if err := json.Unmarshal([]byte(value), &id); err != nil {
		return id, fmt.Errorf("not an identity: %w", err)
	}
	if id.Username == "" {
		return id, fmt.Errorf("the identity names no user")
	}
	return normal(id), nil
}

// Of reads the identity stamped on an object under the annotation key (AnnotationIdentity or
// AnnotationEditor). ok is false when there is none.
func Of(obj metav1.Object, key string) (id ergonv1alpha1.UserIdentity, ok bool, err error) {
	value, found := obj.GetAnnotations()[key]
	if !found {
		return id, false, nil
	}
	id, err = Decode(value)
	if err != nil {
		return id, false, fmt.Errorf("annotation %s of %s: %w", key, obj.GetName(), err)
	}
	return id, true, nil
}

// Stamp sets the identity on an object under the annotation key.
func Stamp(obj metav1.Object, key string, id ergonv1alpha1.UserIdentity) {
	annotations := obj.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[key] = Encode(id)
	obj.SetAnnotations(annotations)
}

// Review is the subject of a SubjectAccessReview that asks about the identity.
func Review(id ergonv1alpha1.UserIdentity) authorizationv1.SubjectAccessReviewSpec {
	spec := authorizationv1.SubjectAccessReviewSpec{User: id.Username, UID: id.UID, Groups: slices.Clone(id.Groups)}
	if len(id.Extra) > 0 {
		spec.Extra = make(map[string]authorizationv1.ExtraValue, len(id.Extra))
		for k, v := range id.Extra {
			spec.Extra[k] = authorizationv1.ExtraValue(slices.Clone(v))
		}
	}
	return spec
}

// Key is a string that is the same for two identities exactly when they are the same: username,
// uid, every group and every extra value. Caches of authorization decisions are keyed by it.
func Key(id ergonv1alpha1.UserIdentity) string {
	return Encode(id)
}

// Union is the identities without repeats, in their first order.
func Union(lists ...[]ergonv1alpha1.UserIdentity) []ergonv1alpha1.UserIdentity {
	seen := map[string]bool{}
	var out []ergonv1alpha1.UserIdentity
	for _, list := range lists {
		for _, id := range list {
			if k := Key(id); !seen[k] {
				seen[k] = true
				out = append(out, normal(id))
			}
		}
	}
	return out
}

func normal(id ergonv1alpha1.UserIdentity) ergonv1alpha1.UserIdentity {
	id.Groups = slices.Clone(id.Groups)
	slices.Sort(id.Groups)
	id.Groups = slices.Compact(id.Groups)
	if len(id.Groups) == 0 {
		id.Groups = nil
	}
	if len(id.Extra) == 0 {
		id.Extra = nil
		return id
	}
	extra := make(map[string][]string, len(id.Extra))
	for k, v := range id.Extra {
		v = slices.Clone(v)
		slices.Sort(v)
		extra[k] = v
	}
	id.Extra = extra
	return id
}
