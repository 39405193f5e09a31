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

package testenv

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/identity"
)

// Admin is the identity a suite without admission webhooks stamps for its own user, an
// administrator: the Run engine authorizes every effect against it with the real API server's
// RBAC, which lets system:masters do anything.
var Admin = ergonv1alpha1.UserIdentity{Username: "envtest-admin", Groups: []string{"system:authenticated", "system:masters"}}

// StampingClient stamps what Ergon's admission webhooks would on the objects a suite without
// them writes (test/security and the e2e suite run the webhooks themselves): a new Run's
// identity and created-by, a Trigger's identity, a Scene's editor, each as who, unless the
// object names one already (a spec that plays another person sets it itself).
func StampingClient(c client.WithWatch, who ergonv1alpha1.UserIdentity) client.WithWatch {
	stamp := func(obj client.Object, update bool) {
		var key string
		switch obj.(type) {
		case *ergonv1alpha1.Run:
			if update {
				return // admission stamps a Run once, when it is created
			}
			key = ergonv1alpha1.AnnotationIdentity
			if _, ok := obj.GetAnnotations()[ergonv1alpha1.AnnotationCreatedBy]; !ok {
				a := obj.GetAnnotations()
				if a == nil {
					a = map[string]string{}
				}
				a[ergonv1alpha1.AnnotationCreatedBy] = who.Username
				obj.SetAnnotations(a)
			}
		case *ergonv1alpha1.Trigger:
			key = ergonv1alpha1.AnnotationIdentity
		case *ergonv1alpha1.Scene:
			key = ergonv1alpha1.AnnotationEditor
		default:
			return
		}
		if _, ok := obj.GetAnnotations()[key]; !ok {
			identity.Stamp(obj, key, who)
		}
	}
	return interceptor.NewClient(c, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			stamp(obj, false)
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			stamp(obj, true)
			return c.Update(ctx, obj, opts...)
		},
	})
}
