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
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/agentspec"
	"github.com/ergon-dev/ergon/internal/compile"
	"github.com/ergon-dev/ergon/internal/identity"
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
	errs := ValidateSceneSpec(&scene.Spec)
	scenes := &ergonv1alpha1.SceneList{}
	if err := v.Reader.List(ctx, scenes, client.InNamespace(scene.Namespace)); err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("listing the Scenes of namespace %s: %w", scene.Namespace, err))
	}
	callErrs, warnings := ValidateSceneCalls(scene, scenes.Items)
	errs = append(errs, callErrs...)
	if specChanged {
		secretErrs, err := v.secrets.check(ctx, scene.Namespace, SceneSecretUses(&scene.Spec, scenes.Items))
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		errs = append(errs, secretErrs...)
		wsErrs, wsWarnings, err := v.workspaces.check(ctx, scene.Namespace, SceneWorkspaceUses(&scene.Spec, scenes.Items), false)
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

// ValidateSceneSpec checks what one Scene spec decides alone: its graph, templates and
// conditions (compiled as the Run engine compiles them), that no param or output can rewrite
// a container step's program (compile.CheckPrograms), the models its agent steps name, and the
// tools they may use.
func ValidateSceneSpec(spec *ergonv1alpha1.SceneSpec) field.ErrorList {
	_, errs := compile.Compile(spec)
	errs = append(errs, compile.CheckPrograms(spec)...)
	errs = append(errs, validateModels(spec)...)
	errs = append(errs, validateMemory(spec)...)
	errs = append(errs, validateContainers(spec)...)
	steps := field.NewPath("spec", "steps")
	for i, s := range spec.Steps {
		if s.Agent == nil {
			continue
		}
		agent := steps.Index(i).Child("agent")
		model := s.Agent.Model
		if model == "" {
			model = "default"
		}
		if _, ok := spec.Models[model]; !ok {
			errs = append(errs, field.Invalid(agent.Child("model"), model,
				fmt.Sprintf("no model %q in spec.models; define it there or name another", model)))
		}
		errs = append(errs, validateOutputContract(agent.Child("output"), s.Agent.Output)...)
		errs = append(errs, validateTools(agent.Child("tools"), spec, s.Agent.Tools)...)
	}
	return errs
}

// validateOutputContract refuses formats the agent runtime does not know and schemas that do
// not compile, which would otherwise fail every attempt of the step.
func validateOutputContract(path *field.Path, o *ergonv1alpha1.OutputContract) field.ErrorList {
	if o == nil {
		return nil
	}
	var errs field.ErrorList
	check := func(p *field.Path, format string, schema *apiextensionsv1.JSON) {
		if format != "" && !slices.Contains(agentspec.Formats, format) {
			errs = append(errs, field.NotSupported(p.Child("format"), format, agentspec.Formats))
		}
		if schema != nil {
			if _, err := agentspec.CompileSchema(schema.Raw); err != nil {
				errs = append(errs, field.Invalid(p.Child("schema"), string(schema.Raw), err.Error()+"; fix the JSON Schema"))
			}
		}
	}
	check(path, o.Format, o.Schema)
	for i, n := range o.Outputs {
		check(path.Child("outputs").Index(i), n.Format, n.Schema)
	}
	return errs
}

// ValidateSceneCalls refuses a Scene that would call itself through other Scenes of its
// namespace (A calls B calls A), naming the cycle. Scenes it calls that do not exist yet only
// give warnings: GitOps applies objects in any order.
func ValidateSceneCalls(scene *ergonv1alpha1.Scene, namespace []ergonv1alpha1.Scene) (field.ErrorList, admission.Warnings) {
	calls := map[string][]string{}
	for _, s := range namespace {
		calls[s.Name] = calledScenes(&s.Spec)
	}
	calls[scene.Name] = calledScenes(&scene.Spec)

	var warnings admission.Warnings
	var errs field.ErrorList
	var paths []*field.Path
	var called []string
	for i, s := range scene.Spec.Steps {
		if s.Scene != nil {
			paths = append(paths, field.NewPath("spec", "steps").Index(i).Child("scene", "name"))
			called = append(called, s.Scene.Name)
		}
	}
	toolPaths, toolScenes := sceneTools(&scene.Spec)
	paths, called = append(paths, toolPaths...), append(called, toolScenes...)
	for i, name := range called {
		path := paths[i]
		if _, ok := calls[name]; !ok {
			warnings = append(warnings, fmt.Sprintf("%s: Scene %q does not exist yet; Runs of this Scene wait for it", path, name))
			continue
		}
		if cycle := pathTo(calls, name, scene.Name, []string{scene.Name}); cycle != nil {
			errs = append(errs, field.Invalid(path, name, fmt.Sprintf(
				"Scenes call each other in a cycle: %s; a Run of it would never end", strings.Join(cycle, " -> "))))
		}
	}
	return errs, warnings
}

func calledScenes(spec *ergonv1alpha1.SceneSpec) []string {
	var names []string
	for _, s := range spec.Steps {
		if s.Scene != nil && !slices.Contains(names, s.Scene.Name) {
			names = append(names, s.Scene.Name)
		}
	}
	// A Scene tool calls its Scene too, as often as the model likes.
	_, tools := sceneTools(spec)
	for _, name := range tools {
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	return names
}

// pathTo returns the call path from one Scene to another, or nil; a depth-first search that
// visits each Scene once.
func pathTo(calls map[string][]string, from, to string, path []string) []string {
	visited := map[string]bool{}
	var walk func(at string, path []string) []string
	walk = func(at string, path []string) []string {
		path = append(slices.Clone(path), at)
		if at == to {
			return path
		}
		if visited[at] {
			return nil
		}
		visited[at] = true
		for _, next := range calls[at] {
			if found := walk(next, path); found != nil {
				return found
			}
		}
		return nil
	}
	return walk(from, path)
}
