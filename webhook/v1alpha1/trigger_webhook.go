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

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/closure"
	"github.com/ergon-dev/ergon/internal/triggers"
	"github.com/ergon-dev/ergon/internal/validate"
)

// +kubebuilder:webhook:path=/validate-ergon-dev-v1alpha1-trigger,mutating=false,failurePolicy=fail,sideEffects=None,groups=ergon.dev,resources=triggers,verbs=create;update,versions=v1alpha1,name=vtrigger.ergon.dev,admissionReviewVersions=v1,timeoutSeconds=5
// +kubebuilder:webhook:path=/mutate-ergon-dev-v1alpha1-trigger,mutating=true,failurePolicy=fail,sideEffects=None,groups=ergon.dev,resources=triggers,verbs=create;update,versions=v1alpha1,name=mtrigger.ergon.dev,admissionReviewVersions=v1,timeoutSeconds=5

// TriggerValidator refuses Triggers that could never start a Run: a cron schedule or time
// zone that does not parse, param mappings that do not compile, params the Scene does not
// take or lacks. A Scene that does not exist yet is a warning: GitOps applies in any order.
// It also records who created the Trigger, as the Runs it starts are created by them.
type TriggerValidator struct {
	Reader client.Reader
	// Live lists the namespace's Triggers for the cycle check, from the API server: a Trigger
	// created a moment ago must count. Reader serves when it is nil.
	Live client.Reader
	// secrets asks whether the requester may read the Secrets the Trigger makes Ergon use.
	secrets *secretAccess
	// workspaces asks whether the Trigger's creator may run steps in the Workspaces its
	// Scene uses: the Runs it starts are theirs.
	workspaces *workspaceAccess
}

// SetupTriggerWebhookWithManager registers the Trigger webhook.
func SetupTriggerWebhookWithManager(mgr ctrl.Manager) error {
	m, err := managerOf(mgr)
	if err != nil {
		return err
	}
	secrets := newSecretAccess(mgr, m)
	v := &TriggerValidator{Reader: newReader(mgr), Live: mgr.GetAPIReader(), secrets: secrets, workspaces: newWorkspaceAccess(mgr, secrets)}
	return ctrl.NewWebhookManagedBy(mgr, &ergonv1alpha1.Trigger{}).WithDefaulter(v).WithValidator(v).Complete()
}

// Default stamps a new Trigger with its creator, the requester, over anything the client
// sent, and keeps that record through every update: whoever changes the annotation later, it
// comes back as it was. A Trigger made before Ergon recorded creators is stamped with whoever
// updates it first.
func (v *TriggerValidator) Default(ctx context.Context, t *ergonv1alpha1.Trigger) error {
	req, err := admission.RequestFromContext(ctx)
	if err != nil {
		return err
	}
	creator := req.UserInfo.Username
	old, err := oldObject[ergonv1alpha1.Trigger](req)
	if err != nil {
		return err
	}
	if old != nil {
		if was := old.Annotations[ergonv1alpha1.AnnotationCreator]; was != "" {
			creator = was
		}
	}
	if t.Annotations == nil {
		t.Annotations = map[string]string{}
	}
	t.Annotations[ergonv1alpha1.AnnotationCreator] = creator
	// The Trigger acts as whoever last changed its spec (or its runAs ServiceAccount): an
	// edit of another person's Trigger makes it act as the editor, never as the creator.
	changed := old != nil && !equality.Semantic.DeepEqual(old.Spec, t.Spec)
	stampOnChange(req, v.secrets.manager, t, objectOrNil(old), ergonv1alpha1.AnnotationIdentity, changed,
		actingAs(req, t.Namespace, t.Spec.RunAs))
	return nil
}

// objectOrNil is a typed nil pointer as a nil interface.
func objectOrNil[T any, P interface {
	*T
	metav1.Object
}](p P) metav1.Object {
	if p == nil {
		return nil
	}
	return p
}

// ValidateCreate checks a new Trigger.
func (v *TriggerValidator) ValidateCreate(ctx context.Context, t *ergonv1alpha1.Trigger) (admission.Warnings, error) {
	return v.validate(ctx, t, true)
}

// ValidateUpdate checks a changed Trigger; whoever changes its spec must be able to read the
// Secrets it makes Ergon use.
func (v *TriggerValidator) ValidateUpdate(ctx context.Context, old, t *ergonv1alpha1.Trigger) (admission.Warnings, error) {
	return v.validate(ctx, t, !equality.Semantic.DeepEqual(old.Spec, t.Spec))
}

// ValidateDelete allows every deletion.
func (v *TriggerValidator) ValidateDelete(context.Context, *ergonv1alpha1.Trigger) (admission.Warnings, error) {
	return nil, nil
}

// validate checks the Trigger and, when its spec is new or changed, that the requester may
// read every Secret it makes Ergon use: its webhook key, and the Secrets of the Scene its Runs
// run (with the Scenes that calls), which Ergon reads for the Trigger's creator at every event.
func (v *TriggerValidator) validate(ctx context.Context, t *ergonv1alpha1.Trigger, specChanged bool) (admission.Warnings, error) {
	errs := validate.Trigger(&t.Spec)
	if t.Spec.SceneRef.Name == "" {
		// The CRD refuses it first; without the name there is no Scene to look up.
		errs = append(errs, field.Required(field.NewPath("spec", "sceneRef", "name"), "name the Scene to run"))
		return nil, apierrors.NewInvalid(ergonv1alpha1.GroupVersion.WithKind("Trigger").GroupKind(), t.Name, errs)
	}
	if bad := validate.SceneRefName(field.NewPath("spec", "sceneRef", "name"), t.Spec.SceneRef.Name); len(bad) > 0 {
		return nil, apierrors.NewInvalid(ergonv1alpha1.GroupVersion.WithKind("Trigger").GroupKind(), t.Name, append(errs, bad...))
	}
	if specChanged {
		runAs, err := checkRunAs(ctx, v.secrets.client, field.NewPath("spec", "runAs"), t.Namespace, t.Spec.RunAs)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		errs = append(errs, runAs...)
	}
	var warnings admission.Warnings
	sceneRef := field.NewPath("spec", "sceneRef", "name")
	scene := &ergonv1alpha1.Scene{}
	err := v.Reader.Get(ctx, client.ObjectKey{Namespace: t.Namespace, Name: t.Spec.SceneRef.Name}, scene)
	switch {
	case apierrors.IsNotFound(err):
		warnings = append(warnings, fmt.Sprintf("spec.sceneRef.name: Scene %q does not exist yet; its params are checked when it does",
			t.Spec.SceneRef.Name))
		if specChanged {
			unknown, err := v.secrets.checkUnknownScene(ctx, t.Namespace, sceneRef, t.Spec.SceneRef.Name)
			if err != nil {
				return nil, apierrors.NewInternalError(err)
			}
			errs = append(errs, unknown...)
			unknownWS, err := v.workspaces.checkUnknownScene(ctx, t.Namespace, sceneRef, t.Spec.SceneRef.Name)
			if err != nil {
				return nil, apierrors.NewInternalError(err)
			}
			errs = append(errs, unknownWS...)
		}
	case err != nil:
		return nil, apierrors.NewInternalError(err)
	default:
		errs = append(errs, validate.TriggerParamsFitScene(&t.Spec, &scene.Spec)...)
	}
	if specChanged {
		// What the Trigger makes Ergon use, in one walk: its webhook's Secret, and what the
		// Scene it runs uses, with the Scenes that one calls (closure.WalkTrigger).
		c, err := closure.WalkTrigger(&t.Spec, closure.Reader(ctx, v.Reader, t.Namespace))
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		reads, err := v.secrets.check(ctx, t.Namespace, ObjectReads(c))
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		wsErrs, _, err := v.workspaces.check(ctx, t.Namespace, WorkspaceUses(c), true)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		errs = append(append(errs, reads...), wsErrs...)
	}
	cycle, err := v.chainCycle(ctx, t)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	errs = append(errs, cycle...)
	if len(errs) > 0 {
		return warnings, apierrors.NewInvalid(ergonv1alpha1.GroupVersion.WithKind("Trigger").GroupKind(), t.Name, errs)
	}
	return warnings, nil
}

// chainCycle refuses a runCompleted Trigger that closes a cycle with the namespace's other
// runCompleted Triggers (A's Run ends and starts B, B's ends and starts A, ...): it would
// start Runs without end. Suspended Triggers start nothing and are left out; resuming one is
// an update and is checked then. A direct self-loop is validate.Trigger's.
func (v *TriggerValidator) chainCycle(ctx context.Context, t *ergonv1alpha1.Trigger) (field.ErrorList, error) {
	first, ok := chainOf(t)
	if !ok || first.From == first.To {
		return nil, nil
	}
	reader := v.Live
	if reader == nil {
		reader = v.Reader
	}
	list := &ergonv1alpha1.TriggerList{}
	if err := reader.List(ctx, list, client.InNamespace(t.Namespace)); err != nil {
		return nil, err
	}
	var others []triggers.Chain
	for i := range list.Items {
		if c, ok := chainOf(&list.Items[i]); ok {
			others = append(others, c)
		}
	}
	cycle := triggers.FindCycle(first, others)
	if cycle == nil {
		return nil, nil
	}
	return field.ErrorList{field.Invalid(field.NewPath("spec", "runCompleted", "sceneRef", "name"), first.From,
		"this Trigger would close a cycle of runCompleted Triggers that starts Runs without end: "+
			triggers.DescribeCycle(cycle)+"; break it at one of them, or suspend one")}, nil
}

// chainOf is a runCompleted Trigger that is not suspended as an edge between Scenes.
func chainOf(t *ergonv1alpha1.Trigger) (triggers.Chain, bool) {
	if t.Spec.RunCompleted == nil || ptr.Deref(t.Spec.Suspend, false) || !t.DeletionTimestamp.IsZero() {
		return triggers.Chain{}, false
	}
	return triggers.Chain{Trigger: t.Name, From: t.Spec.RunCompleted.SceneRef.Name, To: t.Spec.SceneRef.Name}, true
}
