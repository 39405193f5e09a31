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

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/identity"
)

// This suite runs without admission webhooks (test/security runs them, as real users). What
// they stamp on the objects a person writes, the identity a Run or Trigger acts for and the
// editor of a Scene, the suite's client stamps instead, as the webhooks would for the suite's
// user, the API server's admin: the Run engine under test then authorizes every effect against
// a real API server's RBAC, as in a cluster.
var suiteUser = ergonv1alpha1.UserIdentity{Username: "envtest-admin", Groups: []string{"system:authenticated", "system:masters"}}

func stampingClient(c client.WithWatch) client.Client {
	stamp := func(obj client.Object, update bool) {
		var key string
		switch obj.(type) {
		case *ergonv1alpha1.Run:
			key = ergonv1alpha1.AnnotationIdentity
			if update {
				return // admission stamps a Run once, when it is created
			}
			if _, ok := obj.GetAnnotations()[ergonv1alpha1.AnnotationCreatedBy]; !ok {
				a := obj.GetAnnotations()
				if a == nil {
					a = map[string]string{}
				}
				a[ergonv1alpha1.AnnotationCreatedBy] = suiteUser.Username
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
			identity.Stamp(obj, key, suiteUser)
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
