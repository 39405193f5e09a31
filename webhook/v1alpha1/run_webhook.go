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
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/compile"
)

// +kubebuilder:webhook:path=/validate-ergon-dev-v1alpha1-run,mutating=false,failurePolicy=fail,sideEffects=None,groups=ergon.dev,resources=runs,verbs=create;update,versions=v1alpha1,name=vrun.ergon.dev,admissionReviewVersions=v1,timeoutSeconds=5
// +kubebuilder:webhook:path=/mutate-ergon-dev-v1alpha1-run,mutating=true,failurePolicy=fail,sideEffects=None,groups=ergon.dev,resources=runs,verbs=create,versions=v1alpha1,name=mrun.ergon.dev,admissionReviewVersions=v1,timeoutSeconds=5

// AnnotationCreatedBy records who created a Run, stamped at admission from the request's
// identity; a Gate with forbidSelfApproval refuses that person.
const AnnotationCreatedBy = "ergon.dev/created-by"

// RunValidator refuses Runs whose params do not fit their Scene. A Run of a Scene that does
// not exist yet is accepted with a warning: GitOps applies objects in any order, and the Run
// waits for its Scene.
type RunValidator struct {
	Reader client.Reader
}

// SetupRunWebhookWithManager registers the Run webhook.
func SetupRunWebhookWithManager(mgr ctrl.Manager) error {
	return ctrl.NewWebhookManagedBy(mgr, &ergonv1alpha1.Run{}).
		WithDefaulter(&RunValidator{Reader: newReader(mgr)}).
		WithValidator(&RunValidator{Reader: newReader(mgr)}).Complete()
}

// Default stamps a new Run with who creates it, over anything the client sent.
func (v *RunValidator) Default(ctx context.Context, run *ergonv1alpha1.Run) error {
	req, err := admission.RequestFromContext(ctx)
	if err != nil {
		return err
	}
	if run.Annotations == nil {
		run.Annotations = map[string]string{}
	}
	run.Annotations[AnnotationCreatedBy] = req.UserInfo.Username
	return nil
}

// ValidateCreate checks a new Run against its Scene.
func (v *RunValidator) ValidateCreate(ctx context.Context, run *ergonv1alpha1.Run) (admission.Warnings, error) {
	if run.Spec.SceneRef.Name == "" {
		// The CRD refuses it first; without the name there is no Scene to look up.
		return nil, apierrors.NewInvalid(ergonv1alpha1.GroupVersion.WithKind("Run").GroupKind(), run.Name, field.ErrorList{
			field.Required(field.NewPath("spec", "sceneRef", "name"), "name the Scene to run")})
	}
	scene := &ergonv1alpha1.Scene{}
	err := v.Reader.Get(ctx, client.ObjectKey{Namespace: run.Namespace, Name: run.Spec.SceneRef.Name}, scene)
	if apierrors.IsNotFound(err) {
		return admission.Warnings{fmt.Sprintf("spec.sceneRef.name: Scene %q does not exist yet; the Run starts when it does",
			run.Spec.SceneRef.Name)}, nil
	}
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	if errs := compile.CheckParams(&scene.Spec, run.Spec.Params); len(errs) > 0 {
		return nil, apierrors.NewInvalid(ergonv1alpha1.GroupVersion.WithKind("Run").GroupKind(), run.Name, errs)
	}
	return nil, nil
}

// ValidateUpdate keeps who created a Run; sceneRef and params are immutable by the CRD's rules.
func (v *RunValidator) ValidateUpdate(_ context.Context, old, run *ergonv1alpha1.Run) (admission.Warnings, error) {
	if old.Annotations[AnnotationCreatedBy] != run.Annotations[AnnotationCreatedBy] {
		return nil, apierrors.NewInvalid(ergonv1alpha1.GroupVersion.WithKind("Run").GroupKind(), run.Name, field.ErrorList{
			field.Forbidden(field.NewPath("metadata", "annotations").Key(AnnotationCreatedBy), "who created a Run cannot change"),
		})
	}
	return nil, nil
}

// ValidateDelete allows every deletion.
func (v *RunValidator) ValidateDelete(context.Context, *ergonv1alpha1.Run) (admission.Warnings, error) {
	return nil, nil
}
