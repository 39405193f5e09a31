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

	"k8s.io/apimachinery/pkg/api/equality"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/validate"
)

// +kubebuilder:webhook:path=/validate-ergon-dev-v1alpha1-workspacepool,mutating=false,failurePolicy=fail,sideEffects=None,groups=ergon.dev,resources=workspacepools,verbs=create;update,versions=v1alpha1,name=vworkspacepool.ergon.dev,admissionReviewVersions=v1,timeoutSeconds=5
// +kubebuilder:webhook:path=/mutate-ergon-dev-v1alpha1-workspacepool,mutating=true,failurePolicy=fail,sideEffects=None,groups=ergon.dev,resources=workspacepools,verbs=create;update,versions=v1alpha1,name=mworkspacepool.ergon.dev,admissionReviewVersions=v1,timeoutSeconds=5

// WorkspacePoolWebhook checks a pool's template as a Workspace's spec is checked, and records
// who last changed the pool's spec: the manager makes its warm pods for them, and only when
// they may create pods and claims in the namespace.
type WorkspacePoolWebhook struct {
	manager manager
}

// SetupWorkspacePoolWebhookWithManager registers the WorkspacePool webhooks.
func SetupWorkspacePoolWebhookWithManager(mgr ctrl.Manager) error {
	m, err := managerOf(mgr)
	if err != nil {
		return err
	}
	w := &WorkspacePoolWebhook{manager: m}
	return ctrl.NewWebhookManagedBy(mgr, &ergonv1alpha1.WorkspacePool{}).WithDefaulter(w).WithValidator(w).Complete()
}

// Default stamps the pool with the requester when its spec is new or changed, over anything
// the client sent, and otherwise keeps the stamp it had.
func (w *WorkspacePoolWebhook) Default(ctx context.Context, pool *ergonv1alpha1.WorkspacePool) error {
	req, err := admission.RequestFromContext(ctx)
	if err != nil {
		return err
	}
	old, err := oldObject[ergonv1alpha1.WorkspacePool](req)
	if err != nil {
		return err
	}
	changed := old != nil && !equality.Semantic.DeepEqual(old.Spec, pool.Spec)
	stampOnChange(req, w.manager, pool, objectOrNil(old), ergonv1alpha1.AnnotationIdentity, changed,
		actingAs(req, pool.Namespace, ""))
	return nil
}

// ValidateCreate checks a new pool.
func (w *WorkspacePoolWebhook) ValidateCreate(_ context.Context, pool *ergonv1alpha1.WorkspacePool) (admission.Warnings, error) {
	return nil, invalid("WorkspacePool", pool.Name, validate.WorkspacePool(&pool.Spec))
}

// ValidateUpdate checks a changed pool.
func (w *WorkspacePoolWebhook) ValidateUpdate(_ context.Context, _, pool *ergonv1alpha1.WorkspacePool) (admission.Warnings, error) {
	return nil, invalid("WorkspacePool", pool.Name, validate.WorkspacePool(&pool.Spec))
}

// ValidateDelete allows every deletion.
func (w *WorkspacePoolWebhook) ValidateDelete(context.Context, *ergonv1alpha1.WorkspacePool) (admission.Warnings, error) {
	return nil, nil
}
