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

import (
	"context"
	"encoding/json"
	"fmt"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/identity"
)

// The identity rule: a Run acts for its requester (or the ServiceAccount it runs as), a Trigger
// for whoever last changed its spec, and a Scene's steps are authored by whoever last changed
// it. Admission stamps each from the request's authenticated user, over anything the client
// sent, and keeps the stamp through every other change.

// actingAs is who an object admitted in this request acts for: the requester, or the
// ServiceAccount runAs names (which the requester must be allowed to impersonate: checked by
// checkRunAs in validation).
func actingAs(req admission.Request, namespace, runAs string) ergonv1alpha1.UserIdentity {
	if runAs != "" {
		return identity.ServiceAccount(namespace, runAs)
	}
	return identity.FromUserInfo(req.UserInfo)
}

// stampOnChange stamps the identity under key when the object is new, when its spec changed,
// or when it carries none yet; otherwise the identity it had stays, whatever the client sent.
// The manager's own changes never stamp the manager: it keeps what it sent, or what was there.
func stampOnChange(req admission.Request, m manager, obj metav1.Object, old metav1.Object, key string, changed bool,
	id ergonv1alpha1.UserIdentity) {
	if m.is(req) {
		keepAnnotation(obj, old, key)
		return
	}
	if !changed && keepAnnotation(obj, old, key) {
		return
	}
	identity.Stamp(obj, key, id)
}

// keepAnnotation sets obj's annotation key to old's, and says whether old had one.
func keepAnnotation(obj, old metav1.Object, key string) bool {
	if old == nil {
		return false
	}
	was, ok := old.GetAnnotations()[key]
	if !ok {
		return false
	}
	annotations := obj.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[key] = was
	obj.SetAnnotations(annotations)
	return true
}

// oldObject decodes the object an update replaces; nil on create.
func oldObject[T any](req admission.Request) (*T, error) {
	if len(req.OldObject.Raw) == 0 {
		return nil, nil
	}
	old := new(T)
	if err := json.Unmarshal(req.OldObject.Raw, old); err != nil {
		return nil, err
	}
	return old, nil
}

// checkRunAs refuses a runAs the requester may not impersonate.
func checkRunAs(ctx context.Context, c client.Client, path *field.Path, namespace, runAs string) (field.ErrorList, error) {
	if runAs == "" {
		return nil, nil
	}
	req, err := admission.RequestFromContext(ctx)
	if err != nil {
		return nil, err
	}
	sar := &authorizationv1.SubjectAccessReview{Spec: identity.Review(identity.FromUserInfo(req.UserInfo))}
	sar.Spec.ResourceAttributes = &authorizationv1.ResourceAttributes{
		Namespace: namespace, Verb: "impersonate", Resource: "serviceaccounts", Name: runAs,
	}
	if err := c.Create(ctx, sar); err != nil {
		return nil, fmt.Errorf("asking whether %s may impersonate ServiceAccount %s/%s: %w", req.UserInfo.Username, namespace, runAs, err)
	}
	if sar.Status.Allowed {
		return nil, nil
	}
	return field.ErrorList{field.Forbidden(path, fmt.Sprintf(
		"%s may not impersonate ServiceAccount %q in namespace %s, so may not make Ergon act as it; "+
			"ask for the verb impersonate on that ServiceAccount, or remove runAs", req.UserInfo.Username, runAs, namespace))}, nil
}
