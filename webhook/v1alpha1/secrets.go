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

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/closure"
)

// +kubebuilder:rbac:groups=authentication.k8s.io,resources=selfsubjectreviews,verbs=create

// ObjectReads lists the Secrets and ConfigMaps a walked Scene makes Ergon read: its secret
// params, its models' API keys, its container steps' env and envFrom (steps and finally), the
// env of the Workspace it binds, and the same of every Scene it calls, by sub-scene step or
// Scene tool, transitively (closure.Walk).
func ObjectReads(c closure.Closure) []closure.Ref {
	return closure.OfKind(c.Refs, closure.KindSecret, closure.KindConfigMap)
}

// readResources are the kinds of object whose use admission checks as a get, by resource.
var readResources = map[closure.Kind]string{closure.KindSecret: "secrets", closure.KindConfigMap: "configmaps"}

// secretAccess asks the API server whether the person behind an admission request may read
// the Secrets and ConfigMaps an object makes Ergon use, so nobody can make Ergon read one for
// them that they could not read themselves (a confused deputy).
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

// may asks whether the requester may get the named Secret or ConfigMap, or every one of the
// namespace when name is empty.
func (a *secretAccess) may(ctx context.Context, who *authorizationv1.SubjectAccessReviewSpec, kind closure.Kind,
	namespace, name string) (bool, error) {
	sar := &authorizationv1.SubjectAccessReview{Spec: *who.DeepCopy()}
	sar.Spec.ResourceAttributes = &authorizationv1.ResourceAttributes{
		Namespace: namespace, Verb: "get", Resource: readResources[kind], Name: name,
	}
	if err := a.client.Create(ctx, sar); err != nil {
		return false, fmt.Errorf("asking whether %s may get %s %s/%s: %w", who.User, kind, namespace, name, err)
	}
	return sar.Status.Allowed, nil
}

// check refuses every read of a Secret or ConfigMap the requester may not get, naming the
// field, the object and, for one another object holds, where. One review per object; other
// kinds of refs are left alone.
func (a *secretAccess) check(ctx context.Context, namespace string, refs []closure.Ref) (field.ErrorList, error) {
	reads := closure.OfKind(refs, closure.KindSecret, closure.KindConfigMap)
	if len(reads) == 0 {
		return nil, nil
	}
	who, err := a.requester(ctx)
	if err != nil || who == nil {
		return nil, err
	}
	type object struct {
		kind closure.Kind
		name string
	}
	allowed := map[object]bool{}
	var errs field.ErrorList
	for _, u := range reads {
		o := object{u.Kind, u.Name}
		ok, known := allowed[o]
		if !known {
			if ok, err = a.may(ctx, who, u.Kind, namespace, u.Name); err != nil {
				return nil, err
			}
			allowed[o] = ok
		}
		if ok {
			continue
		}
		errs = append(errs, field.Forbidden(u.Path, fmt.Sprintf(
			"%s may not get %s %q in namespace %s, so may not make Ergon use it%s; "+
				"ask for read access to that %s, or use one you may read", who.User, u.Kind, u.Name, namespace, u.Where(), u.Kind)))
	}
	return errs, nil
}

// checkUnknownScene refuses to start, for someone who may not read every Secret and ConfigMap
// of the namespace, a Scene that does not exist yet: what it will read cannot be checked now.
func (a *secretAccess) checkUnknownScene(ctx context.Context, namespace string, path *field.Path, scene string) (field.ErrorList, error) {
	who, err := a.requester(ctx)
	if err != nil || who == nil {
		return nil, err
	}
	for _, kind := range []closure.Kind{closure.KindSecret, closure.KindConfigMap} {
		ok, err := a.may(ctx, who, kind, namespace, "")
		if err != nil {
			return nil, err
		}
		if !ok {
			return field.ErrorList{field.Forbidden(path, fmt.Sprintf(
				"Scene %q does not exist yet, so the %ss it will make Ergon use cannot be checked against what %s may read; "+
					"create the Scene first", scene, kind, who.User))}, nil
		}
	}
	return nil, nil
}

// sceneSecretsAt checks the requester against the Secrets and ConfigMaps a Scene that an
// object runs reads, with the Scenes it calls; each error points at path, the object's field
// that names the Scene, and says where in the Scene the object is used.
func sceneSecretsAt(ctx context.Context, reader client.Reader, access *secretAccess, scene *ergonv1alpha1.Scene,
	path *field.Path) (field.ErrorList, error) {
	c, err := closure.Walk(scene.Name, &scene.Spec, closure.Reader(ctx, reader, scene.Namespace))
	if err != nil {
		return nil, err
	}
	return access.check(ctx, scene.Namespace, reroot(ObjectReads(c), scene.Name, path))
}

// reroot points refs a Scene's walk found at path, the field of another object that runs the
// Scene, and says in Via where in the Scene each one is.
func reroot(refs []closure.Ref, scene string, path *field.Path) []closure.Ref {
	out := make([]closure.Ref, 0, len(refs))
	for _, r := range refs {
		via := fmt.Sprintf("Scene %s's %s", scene, r.Path)
		if r.Via != "" {
			via += ", which runs " + r.Via
		}
		r.Path, r.Via = path, via
		out = append(out, r)
	}
	return out
}
