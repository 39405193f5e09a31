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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/closure"
)

// VerbUse is the verb on workspaces.ergon.dev that lets a person other than a Workspace's user
// run steps in it: bind a Scene to it, or start a Run of a Scene bound to it.
const VerbUse = "use"

// WorkspaceUses lists the Workspaces a walked Scene makes Ergon run steps in: its own, and
// those of the Scenes it calls, by sub-scene step or Scene tool, transitively (closure.Walk).
func WorkspaceUses(c closure.Closure) []closure.Ref {
	return closure.OfKind(c.Refs, closure.KindWorkspace)
}

// workspaceAccess asks whether the person behind an admission request may run steps in a
// Workspace: they are its user, or RBAC grants them the verb use on it. Without it, anyone
// who may edit Scenes in a namespace could run programs on another person's files.
type workspaceAccess struct {
	client client.Client
	reader client.Reader
	// secrets says who asks, and exempts the manager (secretAccess.requester).
	secrets *secretAccess
}

func newWorkspaceAccess(mgr ctrl.Manager, secrets *secretAccess) *workspaceAccess {
	return &workspaceAccess{client: mgr.GetClient(), reader: newReader(mgr), secrets: secrets}
}

// may asks whether who may use the named Workspace, or every Workspace of the namespace when
// name is empty.
func (a *workspaceAccess) may(ctx context.Context, who *authorizationv1.SubjectAccessReviewSpec, namespace, name string) (bool, error) {
	sar := &authorizationv1.SubjectAccessReview{Spec: *who.DeepCopy()}
	sar.Spec.ResourceAttributes = &authorizationv1.ResourceAttributes{
		Namespace: namespace, Verb: VerbUse, Group: ergonv1alpha1.GroupVersion.Group, Resource: "workspaces", Name: name,
	}
	if err := a.client.Create(ctx, sar); err != nil {
		return false, fmt.Errorf("asking whether %s may use Workspace %s/%s: %w", who.User, namespace, name, err)
	}
	return sar.Status.Allowed, nil
}

// check refuses every use of a Workspace by a requester who is not its user and may not use
// it, naming the field and the Workspace. A Workspace that does not exist yet is refused only
// when strict (a Run, which would start in it); for a Scene it is a warning, as its Runs are
// checked when they are created.
func (a *workspaceAccess) check(ctx context.Context, namespace string, uses []closure.Ref,
	strict bool) (field.ErrorList, admission.Warnings, error) {
	if len(uses) == 0 {
		return nil, nil, nil
	}
	who, err := a.secrets.requester(ctx)
	if err != nil || who == nil {
		return nil, nil, err
	}
	var errs field.ErrorList
	var warnings admission.Warnings
	decided := map[string]bool{}
	for _, u := range closure.OfKind(uses, closure.KindWorkspace) {
		ok, known := decided[u.Name]
		ws := &ergonv1alpha1.Workspace{}
		getErr := a.reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: u.Name}, ws)
		missing := apierrors.IsNotFound(getErr)
		if getErr != nil && !missing {
			return nil, nil, fmt.Errorf("reading Workspace %s/%s: %w", namespace, u.Name, getErr)
		}
		if !known {
			ok = !missing && ws.Spec.User == who.User
			if !ok {
				if ok, err = a.may(ctx, who, namespace, u.Name); err != nil {
					return nil, nil, err
				}
			}
			decided[u.Name] = ok
		}
		where := u.Where()
		switch {
		case ok:
		case missing && !strict:
			warnings = append(warnings, fmt.Sprintf("%s: Workspace %q does not exist yet; only its user, or someone granted "+
				"the verb use on it, may start Runs of this Scene%s", u.Path, u.Name, where))
		case missing:
			errs = append(errs, field.Forbidden(u.Path, fmt.Sprintf(
				"Workspace %q does not exist yet, so %s cannot be checked as its user%s; create the Workspace first, "+
					"or be granted the verb use on workspaces.ergon.dev in namespace %s", u.Name, who.User, where, namespace)))
		default:
			errs = append(errs, field.Forbidden(u.Path, fmt.Sprintf(
				"%s may not run steps in Workspace %q%s: only its user may, or someone granted the verb use on "+
					"workspaces.ergon.dev in namespace %s (the ClusterRole ergon-workspace-user)", who.User, u.Name, where, namespace)))
		}
	}
	return errs, warnings, nil
}

// checkUnknownScene refuses to start a Scene that does not exist yet, in a namespace that has
// Workspaces, for someone who may not use every one of them: the Scene may bind one later.
func (a *workspaceAccess) checkUnknownScene(ctx context.Context, namespace string, path *field.Path,
	scene string) (field.ErrorList, error) {
	who, err := a.secrets.requester(ctx)
	if err != nil || who == nil {
		return nil, err
	}
	list := &ergonv1alpha1.WorkspaceList{}
	if err := a.reader.List(ctx, list, client.InNamespace(namespace), client.Limit(1)); err != nil {
		return nil, err
	}
	if len(list.Items) == 0 {
		return nil, nil
	}
	ok, err := a.may(ctx, who, namespace, "")
	if err != nil || ok {
		return nil, err
	}
	return field.ErrorList{field.Forbidden(path, fmt.Sprintf(
		"Scene %q does not exist yet, so whether it runs steps in a Workspace that %s may not use cannot be checked; "+
			"create the Scene first", scene, who.User))}, nil
}

// sceneWorkspacesAt checks the requester against the Workspaces a Scene that an object runs
// uses, with the Scenes it calls; each error points at path, the object's field that names
// the Scene, and says which Scene binds the Workspace.
func sceneWorkspacesAt(ctx context.Context, reader client.Reader, access *workspaceAccess, scene *ergonv1alpha1.Scene,
	path *field.Path) (field.ErrorList, error) {
	c, err := closure.Walk(scene.Name, &scene.Spec, closure.Reader(ctx, reader, scene.Namespace))
	if err != nil {
		return nil, err
	}
	errs, _, err := access.check(ctx, scene.Namespace, reroot(WorkspaceUses(c), scene.Name, path), true)
	return errs, err
}
