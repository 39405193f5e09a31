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
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/closure"
	"github.com/ergon-dev/ergon/internal/identity"
	"github.com/ergon-dev/ergon/internal/validate"
)

// +kubebuilder:webhook:path=/mutate-ergon-dev-v1alpha1-scene,mutating=true,failurePolicy=fail,sideEffects=None,groups=ergon.dev,resources=scenes,verbs=create;update,versions=v1alpha1,name=mscene.ergon.dev,admissionReviewVersions=v1,timeoutSeconds=5
// +kubebuilder:webhook:path=/validate-ergon-dev-v1alpha1-scene,mutating=false,failurePolicy=fail,sideEffects=None,groups=ergon.dev,resources=scenes,verbs=create;update,versions=v1alpha1,name=vscene.ergon.dev,admissionReviewVersions=v1,timeoutSeconds=5

// SceneValidator refuses Scenes that cannot run: what the CRD's schema cannot see from one
// object (graph cycles, templates, conditions, models, tools, Scenes calling each other).
type SceneValidator struct {
	// Reader lists the namespace's Scenes, to find calls that form a cycle: the API server,
	// not the cache, which may not hold yet a Scene applied a moment before (kubectl apply -f
	// of a directory), and a cycle through it would pass.
	Reader client.Reader
	// secrets asks whether the requester may read the Secrets the Scene uses.
	secrets *secretAccess
	// workspaces asks whether the requester may run steps in the Workspaces it uses.
	workspaces *workspaceAccess
}

// SetupSceneWebhookWithManager registers the Scene webhook.
func SetupSceneWebhookWithManager(mgr ctrl.Manager) error {
	m, err := managerOf(mgr)
	if err != nil {
		return err
	}
	secrets := newSecretAccess(mgr, m)
	mgr.GetWebhookServer().Register(sceneEditorPath, &webhook.Admission{Handler: &sceneEditor{manager: m}})
	return ctrl.NewWebhookManagedBy(mgr, &ergonv1alpha1.Scene{}).
		WithValidator(&SceneValidator{Reader: mgr.GetAPIReader(), secrets: secrets, workspaces: newWorkspaceAccess(mgr, secrets)}).Complete()
}

// sceneEditorPath is where the API server asks sceneEditor.
const sceneEditorPath = "/mutate-ergon-dev-v1alpha1-scene"

// sceneEditor stamps a Scene with whoever last changed its spec (AnnotationEditor): every
// effect of a Run of it, or of a Run that calls it, is authorized against that person too.
// It reads only metadata and the spec as JSON, never the typed Scene: a mutating webhook runs
// before the CRD's schema, whose messages about a malformed spec must stay the API server's.
type sceneEditor struct{ manager manager }

// Handle stamps the editor on create and on a change of the spec, and keeps it otherwise.
func (e *sceneEditor) Handle(_ context.Context, req admission.Request) admission.Response {
	var obj, old struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
		Spec     json.RawMessage   `json:"spec"`
	}
	if err := json.Unmarshal(req.Object.Raw, &obj); err != nil {
		return admission.Allowed("") // not a Scene the schema will take; it refuses it
	}
	var before metav1.Object
	changed := false
	if len(req.OldObject.Raw) > 0 {
		if err := json.Unmarshal(req.OldObject.Raw, &old); err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
		before = &old.Metadata
		changed = !sameJSON(old.Spec, obj.Spec)
	}
	meta := obj.Metadata.DeepCopy()
	stampOnChange(req, e.manager, meta, before, ergonv1alpha1.AnnotationEditor, changed, identity.FromUserInfo(req.UserInfo))
	if equality.Semantic.DeepEqual(meta.Annotations, obj.Metadata.Annotations) {
		return admission.Allowed("")
	}
	var whole map[string]any
	if err := json.Unmarshal(req.Object.Raw, &whole); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	metadata, _ := whole["metadata"].(map[string]any)
	if metadata == nil {
		metadata = map[string]any{}
		whole["metadata"] = metadata
	}
	annotations := map[string]any{}
	for k, v := range meta.Annotations {
		annotations[k] = v
	}
	metadata["annotations"] = annotations
	patched, err := json.Marshal(whole)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	return admission.PatchResponseFromRaw(req.Object.Raw, patched)
}

// sameJSON reports whether two JSON documents hold the same value.
func sameJSON(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	return equality.Semantic.DeepEqual(x, y)
}

// ValidateCreate checks a new Scene.
func (v *SceneValidator) ValidateCreate(ctx context.Context, scene *ergonv1alpha1.Scene) (admission.Warnings, error) {
	return v.validate(ctx, scene, true)
}

// ValidateUpdate checks a changed Scene; Runs already running keep their snapshot. Whoever
// changes the spec of a Scene that uses Secrets must be able to read them: the change decides
// what is done with them.
func (v *SceneValidator) ValidateUpdate(ctx context.Context, old, scene *ergonv1alpha1.Scene) (admission.Warnings, error) {
	return v.validate(ctx, scene, !equality.Semantic.DeepEqual(old.Spec, scene.Spec))
}

// ValidateDelete allows every deletion.
func (v *SceneValidator) ValidateDelete(context.Context, *ergonv1alpha1.Scene) (admission.Warnings, error) {
	return nil, nil
}

func (v *SceneValidator) validate(ctx context.Context, scene *ergonv1alpha1.Scene, specChanged bool) (admission.Warnings, error) {
	errs := validate.Scene(&scene.Spec)
	c, err := closure.Walk(scene.Name, &scene.Spec, closure.Reader(ctx, v.Reader, scene.Namespace))
	if err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("walking the Scenes and Workspaces Scene %s uses: %w", scene.Name, err))
	}
	callErrs, warnings := validate.SceneCalls(c)
	errs = append(errs, callErrs...)
	if specChanged {
		secretErrs, err := v.secrets.check(ctx, scene.Namespace, c.Refs)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		errs = append(errs, secretErrs...)
		wsErrs, wsWarnings, err := v.workspaces.check(ctx, scene.Namespace, WorkspaceUses(c), false)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		errs, warnings = append(errs, wsErrs...), append(warnings, wsWarnings...)
	}
	if len(errs) > 0 {
		return warnings, apierrors.NewInvalid(ergonv1alpha1.GroupVersion.WithKind("Scene").GroupKind(), scene.Name, errs)
	}
	return warnings, nil
}
