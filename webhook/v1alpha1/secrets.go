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

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

// +kubebuilder:rbac:groups=authentication.k8s.io,resources=selfsubjectreviews,verbs=create

// SecretUse is one place where an object makes Ergon use a Secret: a step pod reads it through
// the kubelet, the agent sends it to a model's API, the hooks endpoint checks signatures with it.
type SecretUse struct {
	// Path is the field of the admitted object that causes the use.
	Path *field.Path
	// Secret is the Secret's name, in the object's namespace.
	Secret string
	// Via says, for a use in another Scene the object runs, which Scene and field: "Scene
	// publish-report's spec.params[0].valueFrom.secretKeyRef". Empty for the object's own.
	Via string
}

// SceneSecretUses lists the Secrets a Scene makes Ergon use: its secret params, its models'
// API keys, its container steps' env and envFrom, and those of the Scenes it calls, found in
// namespace and followed through their own calls (each Scene once).
func SceneSecretUses(spec *ergonv1alpha1.SceneSpec, namespace []ergonv1alpha1.Scene) []SecretUse {
	byName := map[string]*ergonv1alpha1.SceneSpec{}
	for i := range namespace {
		byName[namespace[i].Name] = &namespace[i].Spec
	}
	uses := ownSecretUses(field.NewPath("spec"), spec)
	for i, s := range spec.Steps {
		if s.Scene == nil {
			continue
		}
		call := field.NewPath("spec", "steps").Index(i).Child("scene", "name")
		for _, u := range calledSecretUses(s.Scene.Name, byName, map[string]bool{}) {
			uses = append(uses, SecretUse{Path: call, Secret: u.Secret, Via: u.Via})
		}
	}
	return uses
}

// calledSecretUses are the uses of a called Scene and of the Scenes it calls in turn.
func calledSecretUses(name string, scenes map[string]*ergonv1alpha1.SceneSpec, visited map[string]bool) []SecretUse {
	spec, ok := scenes[name]
	if !ok || visited[name] {
		return nil
	}
	visited[name] = true
	var uses []SecretUse
	for _, u := range ownSecretUses(field.NewPath("spec"), spec) {
		uses = append(uses, SecretUse{Secret: u.Secret, Via: fmt.Sprintf("Scene %s's %s", name, u.Path)})
	}
	for _, s := range spec.Steps {
		if s.Scene != nil {
			uses = append(uses, calledSecretUses(s.Scene.Name, scenes, visited)...)
		}
	}
	return uses
}

// ownSecretUses are the Secrets one Scene spec names itself.
func ownSecretUses(spec *field.Path, s *ergonv1alpha1.SceneSpec) []SecretUse {
	var uses []SecretUse
	add := func(p *field.Path, name string) {
		uses = append(uses, SecretUse{Path: p, Secret: name})
	}
	for i, p := range s.Params {
		if p.ValueFrom != nil {
			add(spec.Child("params").Index(i).Child("valueFrom", "secretKeyRef"), p.ValueFrom.SecretKeyRef.Name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(s.Models)) {
		if ref := s.Models[name].APIKeySecretRef; ref != nil {
			add(spec.Child("models").Key(name).Child("apiKeySecretRef"), ref.Name)
		}
	}
	for i, st := range s.Steps {
		if st.Container == nil {
			continue
		}
		c := spec.Child("steps").Index(i).Child("container")
		for j, e := range st.Container.Env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				add(c.Child("env").Index(j).Child("valueFrom", "secretKeyRef"), e.ValueFrom.SecretKeyRef.Name)
			}
		}
		for j, e := range st.Container.EnvFrom {
			if e.SecretRef != nil {
				add(c.Child("envFrom").Index(j).Child("secretRef"), e.SecretRef.Name)
			}
		}
	}
	return uses
}

// secretAccess asks the API server whether the person behind an admission request may read
// the Secrets an object makes Ergon use, so nobody can make Ergon read a Secret for them that
// they could not read themselves (a confused deputy).
type secretAccess struct {
	client  client.Client
	manager manager
}

func newSecretAccess(mgr ctrl.Manager, m manager) *secretAccess {
	return &secretAccess{client: mgr.GetClient(), manager: m}
}

// requester is who asks for an admission, or nil when it is the manager itself: the Runs it
// creates for Triggers and sub-scene steps were checked when their Trigger or Scene was.
func (a *secretAccess) requester(ctx context.Context) (*authorizationv1.SubjectAccessReviewSpec, error) {
	req, err := admission.RequestFromContext(ctx)
	if err != nil {
		return nil, err
	}
	if a.manager.is(req) {
		return nil, nil
	}
	extra := map[string]authorizationv1.ExtraValue{}
	for k, v := range req.UserInfo.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	return &authorizationv1.SubjectAccessReviewSpec{
		User: req.UserInfo.Username, Groups: req.UserInfo.Groups, UID: req.UserInfo.UID, Extra: extra,
	}, nil
}

// may asks whether the requester may get the named Secret, or every Secret of the namespace
// when name is empty.
func (a *secretAccess) may(ctx context.Context, who *authorizationv1.SubjectAccessReviewSpec, namespace, name string) (bool, error) {
	sar := &authorizationv1.SubjectAccessReview{Spec: *who.DeepCopy()}
	sar.Spec.ResourceAttributes = &authorizationv1.ResourceAttributes{
		Namespace: namespace, Verb: "get", Resource: "secrets", Name: name,
	}
	if err := a.client.Create(ctx, sar); err != nil {
		return false, fmt.Errorf("asking whether %s may get Secret %s/%s: %w", who.User, namespace, name, err)
	}
	return sar.Status.Allowed, nil
}

// check refuses every use of a Secret the requester may not get, naming the field, the Secret
// and, for a Scene it runs, which one. One review per Secret.
func (a *secretAccess) check(ctx context.Context, namespace string, uses []SecretUse) (field.ErrorList, error) {
	if len(uses) == 0 {
		return nil, nil
	}
	who, err := a.requester(ctx)
	if err != nil || who == nil {
		return nil, err
	}
	allowed := map[string]bool{}
	var errs field.ErrorList
	for _, u := range uses {
		ok, known := allowed[u.Secret]
		if !known {
			if ok, err = a.may(ctx, who, namespace, u.Secret); err != nil {
				return nil, err
			}
			allowed[u.Secret] = ok
		}
		if ok {
			continue
		}
		where := ""
		if u.Via != "" {
			where = " (through " + u.Via + ")"
		}
		errs = append(errs, field.Forbidden(u.Path, fmt.Sprintf(
			"%s may not get Secret %q in namespace %s, so may not make Ergon use it%s; "+
				"ask for read access to that Secret, or use one you may read", who.User, u.Secret, namespace, where)))
	}
	return errs, nil
}

// checkUnknownScene refuses to start, for someone who may not read every Secret of the
// namespace, a Scene that does not exist yet: the Secrets it will use cannot be checked now.
func (a *secretAccess) checkUnknownScene(ctx context.Context, namespace string, path *field.Path, scene string) (field.ErrorList, error) {
	who, err := a.requester(ctx)
	if err != nil || who == nil {
		return nil, err
	}
	ok, err := a.may(ctx, who, namespace, "")
	if err != nil || ok {
		return nil, err
	}
	return field.ErrorList{field.Forbidden(path, fmt.Sprintf(
		"Scene %q does not exist yet, so the Secrets it will make Ergon use cannot be checked against what %s may read; "+
			"create the Scene first", scene, who.User))}, nil
}

// sceneSecretsAt checks the requester against the Secrets a Scene that an object runs uses,
// with the Scenes it calls; each error points at path, the object's field that names the
// Scene, and says where in the Scene the Secret is used.
func sceneSecretsAt(ctx context.Context, reader client.Reader, access *secretAccess, scene *ergonv1alpha1.Scene,
	path *field.Path) (field.ErrorList, error) {
	scenes := &ergonv1alpha1.SceneList{}
	if err := reader.List(ctx, scenes, client.InNamespace(scene.Namespace)); err != nil {
		return nil, fmt.Errorf("listing the Scenes of namespace %s: %w", scene.Namespace, err)
	}
	uses := SceneSecretUses(&scene.Spec, scenes.Items)
	for i, u := range uses {
		via := fmt.Sprintf("Scene %s's %s", scene.Name, u.Path)
		if u.Via != "" {
			via += ", which runs " + u.Via
		}
		uses[i] = SecretUse{Path: path, Secret: u.Secret, Via: via}
	}
	return access.check(ctx, scene.Namespace, uses)
}
