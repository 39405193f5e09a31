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

package shared

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// NamespaceEnding reports whether err is the API server refusing to create an object in a
// namespace that is being deleted: nothing created there would last, and the deletion removes
// the Run, Workspace or Trigger that asked for it too.
func NamespaceEnding(err error) bool {
	return apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause)
}

// QuietWhileNamespaceEnds wraps a reconciler whose passes create objects: a pass refused
// because its namespace is being deleted is no error to retry with backoff and log at error
// level, again and again until the namespace is gone.
func QuietWhileNamespaceEnds(r reconcile.Reconciler) reconcile.Reconciler {
	return reconcile.Func(func(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
		res, err := r.Reconcile(ctx, req)
		if err != nil && NamespaceEnding(err) {
			log.FromContext(ctx).V(1).Info("The namespace is being deleted; creating nothing in it", "error", err.Error())
			return ctrl.Result{}, nil
		}
		return res, err
	})
}
