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

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/validate"
)

// +kubebuilder:webhook:path=/validate-ergon-dev-v1alpha1-workspace,mutating=false,failurePolicy=fail,sideEffects=None,groups=ergon.dev,resources=workspaces,verbs=create;update,versions=v1alpha1,name=vworkspace.ergon.dev,admissionReviewVersions=v1,timeoutSeconds=5

// WorkspaceValidator refuses Workspaces whose pod could not start or would break its own
// limits. The CRD schema already requires cpu and memory limits and keeps spec.user
// immutable; this checks what needs the values parsed: requests within limits, a storage size
// that holds anything, environment variable names, and an idle timeout a session survives.
type WorkspaceValidator struct{}

// SetupWorkspaceWebhookWithManager registers the Workspace webhook.
func SetupWorkspaceWebhookWithManager(mgr ctrl.Manager) error {
	return ctrl.NewWebhookManagedBy(mgr, &ergonv1alpha1.Workspace{}).
		WithValidator(&WorkspaceValidator{}).Complete()
}

// ValidateCreate checks a new Workspace.
func (v *WorkspaceValidator) ValidateCreate(_ context.Context, w *ergonv1alpha1.Workspace) (admission.Warnings, error) {
	return nil, invalid("Workspace", w.Name, validate.Workspace(&w.Spec))
}

// ValidateUpdate checks a changed Workspace.
func (v *WorkspaceValidator) ValidateUpdate(_ context.Context, old, w *ergonv1alpha1.Workspace) (admission.Warnings, error) {
	errs := validate.Workspace(&w.Spec)
	// The schema says so too; saying it here keeps the rule with the others when the schema
	// is bypassed by a client that does not validate (or an older CRD).
	if old.Spec.User != w.Spec.User {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "user"),
			"user is immutable: the Workspace's files are its user's; create another Workspace for another user"))
	}
	return nil, invalid("Workspace", w.Name, errs)
}

// ValidateDelete allows every deletion.
func (v *WorkspaceValidator) ValidateDelete(context.Context, *ergonv1alpha1.Workspace) (admission.Warnings, error) {
	return nil, nil
}

// invalid is the admission error for a list of field errors, or nil when there are none.
func invalid(kind, name string, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(ergonv1alpha1.GroupVersion.WithKind(kind).GroupKind(), name, errs)
}
