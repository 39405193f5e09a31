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
	"maps"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/archive"
	"github.com/ergon-dev/ergon/internal/compile"
	"github.com/ergon-dev/ergon/internal/identity"
	"github.com/ergon-dev/ergon/internal/validate"
)

// +kubebuilder:webhook:path=/validate-ergon-dev-v1alpha1-run,mutating=false,failurePolicy=fail,sideEffects=None,groups=ergon.dev,resources=runs,verbs=create;update,versions=v1alpha1,name=vrun.ergon.dev,admissionReviewVersions=v1,timeoutSeconds=5
// +kubebuilder:webhook:path=/mutate-ergon-dev-v1alpha1-run,mutating=true,failurePolicy=fail,sideEffects=None,groups=ergon.dev,resources=runs,verbs=create,versions=v1alpha1,name=mrun.ergon.dev,admissionReviewVersions=v1,timeoutSeconds=5

// RunValidator refuses Runs whose params do not fit their Scene. A Run of a Scene that does
// not exist yet is accepted with a warning: GitOps applies objects in any order, and the Run
// waits for its Scene. It keeps the annotations under ergon.dev/ to the manager: a person's
// Run is created-by them, whatever they sent, and only the manager names another creator (the
// Trigger's, or the parent Run's) or sets the depth of a child Run.
type RunValidator struct {
	Reader client.Reader
	// Client asks SubjectAccessReviews (runAs).
	Client  client.Client
	Manager manager
	// secrets asks whether the requester may read the Secrets the Run's Scene uses.
	secrets *secretAccess
	// workspaces asks whether the requester may run steps in the Workspaces it uses.
	workspaces *workspaceAccess
	// archive is where a retry of a Run that is gone finds it; nil without an archive.
	archive archive.Store
	// live reads around the cache (namespaces, which the manager does not watch).
	live client.Reader
}

// SetupRunWebhookWithManager registers the Run webhook.
func SetupRunWebhookWithManager(mgr ctrl.Manager) error {
	return setupRunWebhook(mgr, Options{})
}

func setupRunWebhook(mgr ctrl.Manager, o Options) error {
	m, err := managerOf(mgr)
	if err != nil {
		return err
	}
	secrets := newSecretAccess(mgr, m)
	v := &RunValidator{Reader: newReader(mgr), Client: mgr.GetClient(), Manager: m, secrets: secrets,
		workspaces: newWorkspaceAccess(mgr, secrets), archive: o.Archive, live: mgr.GetAPIReader()}
	return ctrl.NewWebhookManagedBy(mgr, &ergonv1alpha1.Run{}).WithDefaulter(v).WithValidator(v).Complete()
}

// Default stamps a new Run with who creates it, over anything the client sent. The manager
// names the person behind the Runs it creates itself; one it names nobody for is its own.
func (v *RunValidator) Default(ctx context.Context, run *ergonv1alpha1.Run) error {
	req, err := admission.RequestFromContext(ctx)
	if err != nil {
		return err
	}
	if v.Manager.is(req) {
		// The manager names the person behind the Runs it creates (a Trigger's, a parent
		// Run's); it never stamps its own identity on one.
		return nil
	}
	for key, value := range stamped(req, run) {
		if run.Annotations == nil {
			run.Annotations = map[string]string{}
		}
		run.Annotations[key] = value
	}
	return nil
}

// stamped are the annotations admission stamps on a person's new Run: the full identity it acts
// for (the requester, or the ServiceAccount of spec.runAs), and its username as created-by.
func stamped(req admission.Request, run *ergonv1alpha1.Run) map[string]string {
	id := actingAs(req, run.Namespace, run.Spec.RunAs)
	return map[string]string{
		ergonv1alpha1.AnnotationIdentity:  identity.Encode(id),
		ergonv1alpha1.AnnotationCreatedBy: id.Username,
	}
}

// ValidateCreate checks a new Run against its Scene, and that its creator may read every
// Secret the Run would make Ergon use: a Run makes Ergon read its Scene's Secrets (and those of
// the Scenes it calls) on its creator's behalf.
func (v *RunValidator) ValidateCreate(ctx context.Context, run *ergonv1alpha1.Run) (admission.Warnings, error) {
	invalid := func(errs field.ErrorList) error {
		return apierrors.NewInvalid(ergonv1alpha1.GroupVersion.WithKind("Run").GroupKind(), run.Name, errs)
	}
	sceneRef := field.NewPath("spec", "sceneRef", "name")
	if run.Spec.SceneRef.Name == "" {
		// The CRD refuses it first; without the name there is no Scene to look up.
		return nil, invalid(field.ErrorList{field.Required(sceneRef, "name the Scene to run")})
	}
	if errs := validate.SceneRefName(sceneRef, run.Spec.SceneRef.Name); len(errs) > 0 {
		return nil, invalid(errs)
	}
	req, err := admission.RequestFromContext(ctx)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	if !v.Manager.is(req) {
		if errs := reservedAnnotations(nil, run, stamped(req, run)); len(errs) > 0 {
			return nil, invalid(errs)
		}
		errs, err := checkRunAs(ctx, v.Client, field.NewPath("spec", "runAs"), run.Namespace, run.Spec.RunAs)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		if len(errs) > 0 {
			return nil, invalid(errs)
		}
	}
	if run.Spec.RetryOf != nil {
		errs, err := v.checkRetryOf(ctx, run)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		if len(errs) > 0 {
			return nil, invalid(errs)
		}
	}
	scene := &ergonv1alpha1.Scene{}
	err = v.Reader.Get(ctx, client.ObjectKey{Namespace: run.Namespace, Name: run.Spec.SceneRef.Name}, scene)
	if apierrors.IsNotFound(err) {
		errs, err := v.secrets.checkUnknownScene(ctx, run.Namespace, sceneRef, run.Spec.SceneRef.Name)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		wsErrs, err := v.workspaces.checkUnknownScene(ctx, run.Namespace, sceneRef, run.Spec.SceneRef.Name)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		errs = append(errs, wsErrs...)
		if len(errs) > 0 {
			return nil, invalid(errs)
		}
		return admission.Warnings{fmt.Sprintf("spec.sceneRef.name: Scene %q does not exist yet; the Run starts when it does",
			run.Spec.SceneRef.Name)}, nil
	}
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	var errs field.ErrorList
	if run.Spec.RetryOf == nil { // a retry's params fit the snapshot it runs (checkRetryOf)
		errs = compile.CheckParams(&scene.Spec, run.Spec.Params)
	}
	secretErrs, err := sceneSecretsAt(ctx, v.Reader, v.secrets, scene, sceneRef)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	wsErrs, err := sceneWorkspacesAt(ctx, v.Reader, v.workspaces, scene, sceneRef)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	errs = append(errs, wsErrs...)
	if errs = append(errs, secretErrs...); len(errs) > 0 {
		return nil, invalid(errs)
	}
	return nil, nil
}

// ValidateUpdate keeps the annotations under ergon.dev/ as they were created, for everyone;
// sceneRef and params are immutable by the CRD's rules.
func (v *RunValidator) ValidateUpdate(_ context.Context, old, run *ergonv1alpha1.Run) (admission.Warnings, error) {
	if errs := reservedAnnotations(old, run, nil); len(errs) > 0 {
		return nil, apierrors.NewInvalid(ergonv1alpha1.GroupVersion.WithKind("Run").GroupKind(), run.Name, errs)
	}
	return nil, nil
}

// reservedAnnotations refuses every annotation under ergon.dev/ that a Run gains, loses or
// changes against old (nil on create), except, on create, those admission stamps, as it stamps them.
func reservedAnnotations(old, run *ergonv1alpha1.Run, stamps map[string]string) field.ErrorList {
	var before map[string]string
	if old != nil {
		before = old.Annotations
	}
	path := field.NewPath("metadata", "annotations")
	var errs field.ErrorList
	for _, key := range slices.Sorted(maps.Keys(run.Annotations)) {
		value, was := before[key]
		switch {
		case !ergonv1alpha1.IsReservedAnnotation(key), was && value == run.Annotations[key]:
		case old == nil && stamps[key] != "" && run.Annotations[key] == stamps[key]:
		case old == nil:
			errs = append(errs, field.Forbidden(path.Key(key), "annotations under "+ergonv1alpha1.AnnotationPrefix+
				" are set by Ergon only; remove it (created-by and identity are stamped with your own)"))
		default:
			errs = append(errs, field.Forbidden(path.Key(key), "annotations under "+ergonv1alpha1.AnnotationPrefix+
				" are set by Ergon when a Run is created and never change"))
		}
	}
	for _, key := range slices.Sorted(maps.Keys(before)) {
		if _, kept := run.Annotations[key]; ergonv1alpha1.IsReservedAnnotation(key) && !kept {
			errs = append(errs, field.Forbidden(path.Key(key), "annotations under "+ergonv1alpha1.AnnotationPrefix+
				" are set by Ergon when a Run is created and never removed"))
		}
	}
	return errs
}

// ValidateDelete allows every deletion.
func (v *RunValidator) ValidateDelete(context.Context, *ergonv1alpha1.Run) (admission.Warnings, error) {
	return nil, nil
}
