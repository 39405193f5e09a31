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

package run

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/controllers/internal/shared"
	"github.com/ergon-dev/ergon/internal/authz"
	"github.com/ergon-dev/ergon/internal/closure"
	"github.com/ergon-dev/ergon/internal/identity"
)

// One authority: every effect Ergon performs for a Run is authorized, at the moment it happens,
// against the identity the Run acts for and against the last editor of every Scene in its
// closure (status.sceneEditors), from the object about to be created. Both must be allowed:
// otherwise whoever can edit a Scene that another person runs would borrow their authority.
// A refused effect creates nothing; the step it belongs to fails with a message that names the
// object and the permission missing (refusals.go).

// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// errNoIdentity is a Run with no identity stamped by admission: it does nothing.
var errNoIdentity = errors.New("the Run carries no identity (annotation " + ergonv1alpha1.AnnotationIdentity +
	"), which admission stamps on every Run; a Run without one does nothing. Create it again through the API server " +
	"with Ergon's admission webhooks installed")

// actors are the identities an effect of the Run must be allowed for.
func actors(run *ergonv1alpha1.Run) ([]authz.Actor, error) {
	id, ok, err := identity.Of(run, ergonv1alpha1.AnnotationIdentity)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errNoIdentity
	}
	out := []authz.Actor{{Identity: id, Role: "the Run's identity"}}
	for _, e := range identity.Union(run.Status.SceneEditors) {
		if identity.Key(e) != identity.Key(id) {
			out = append(out, authz.Actor{Identity: e, Role: "last editor of a Scene the Run runs"})
		}
	}
	return out, nil
}

// authorize asks whether everyone the Run acts for may do every one of the questions. The error
// is a *authz.Denied for a refusal, or the reason nobody could be asked.
func (a *runActor) authorize(ctx context.Context, run *ergonv1alpha1.Run, questions []authz.Attributes) error {
	who, err := actors(run)
	if err != nil {
		return &notAuthorized{err: err}
	}
	if err := a.authz.Check(ctx, who, questions); err != nil {
		if denied, ok := errors.AsType[*authz.Denied](err); ok {
			return &notAuthorized{err: denied}
		}
		return err
	}
	return nil
}

// authorizePod authorizes a pod about to be created for the Run: every Secret, ConfigMap and
// claim it makes the kubelet read, and, for a pod bound to a Workspace, the verb use on it
// (which vouches for the Workspace's own claim).
func (a *runActor) authorizePod(ctx context.Context, run *ergonv1alpha1.Run, pod *corev1.Pod, ws *ergonv1alpha1.Workspace) error {
	var questions []authz.Attributes
	if ws != nil {
		questions = append(questions, authz.Attributes{Verb: verbUse, Group: ergonv1alpha1.GroupVersion.Group,
			Resource: "workspaces", Namespace: run.Namespace, Name: ws.Name})
	}
	refs, err := authz.PodQuestions(pod, ownVolumes(pod))
	if err != nil {
		return &notAuthorized{err: err}
	}
	return a.authorize(ctx, run, append(questions, refs...))
}

// ownVolumes vouches for what the manager itself mounts in a pod, in volumes it names
// ergon-* (a step's spec has no volumes of its own): the Run's own state in ConfigMaps
// (inputs, checkpoints, tool results, its memory store, which the identity rule selects) and a
// bound Workspace's claim, which the verb use on the Workspace authorizes.
func ownVolumes(pod *corev1.Pod) func(resource, name string) bool {
	own := map[string]bool{}
	for _, v := range pod.Spec.Volumes {
		if !strings.HasPrefix(v.Name, "ergon-") && v.Name != workspaceVolume {
			continue
		}
		switch {
		case v.ConfigMap != nil:
			own["configmaps/"+v.ConfigMap.Name] = true
		case v.PersistentVolumeClaim != nil:
			own["persistentvolumeclaims/"+v.PersistentVolumeClaim.ClaimName] = true
		case v.Projected != nil:
			for _, src := range v.Projected.Sources {
				if src.ConfigMap != nil {
					own["configmaps/"+src.ConfigMap.Name] = true
				}
			}
		}
	}
	return func(resource, name string) bool { return own[resource+"/"+name] }
}

// authorizeChild authorizes a child Run about to be created: the person behind the parent must
// be allowed to create Runs themselves, as with a Run of their own (a role that may only create
// Runs is enough: reading the Scene is not needed to run it).
func (a *runActor) authorizeChild(ctx context.Context, run *ergonv1alpha1.Run, child *ergonv1alpha1.Run) error {
	return a.authorize(ctx, run, []authz.Attributes{
		{Verb: "create", Group: ergonv1alpha1.GroupVersion.Group, Resource: resourceRuns, Namespace: child.Namespace},
	})
}

// authorizeStart asks whether the person the Run acts for may still create Runs in the
// namespace, as their own request would have needed. A Trigger acts as whoever last
// changed it, who may have lost access since; a Run of theirs starts nothing then. A retry
// or rerun reads the Run it names (live or archived) and copies its outputs for that person:
// they must still be allowed to get it, as admission checked when they asked.
func (r *RunReconciler) authorizeStart(ctx context.Context, run *ergonv1alpha1.Run) error {
	who, err := actors(run)
	if err != nil {
		return &notAuthorized{err: err}
	}
	group := ergonv1alpha1.GroupVersion.Group
	questions := []authz.Attributes{{Verb: "create", Group: group, Resource: resourceRuns, Namespace: run.Namespace}}
	if ref := run.Spec.RetryOf; ref != nil {
		questions = append(questions, authz.Attributes{Verb: "get", Group: group, Resource: resourceRuns,
			Namespace: run.Namespace, Name: ref.Name})
	}
	err = r.authorizer().Check(ctx, who[:1], questions)
	if denied, ok := errors.AsType[*authz.Denied](err); ok {
		return &notAuthorized{err: denied}
	}
	return err
}

// verbUse is the verb that lets a person run steps in a Workspace.
const verbUse = "use"

// resourceRuns is the resource of Runs, in authorization questions.
const resourceRuns = "runs"

// notAuthorized is an effect Ergon refused itself, before asking the API server to create it.
type notAuthorized struct{ err error }

func (n *notAuthorized) Error() string { return "not authorized: " + n.err.Error() }
func (n *notAuthorized) Unwrap() error { return n.err }

// isNotAuthorized reports whether err is an effect refused by authorization.
func isNotAuthorized(err error) bool {
	_, ok := errors.AsType[*notAuthorized](err)
	return ok
}

// authorizer is the reconciler's, made on first use when none was given.
func (r *RunReconciler) authorizer() *authz.Authorizer {
	r.authzOnce.Do(func() {
		if r.Authorizer == nil {
			r.Authorizer = &authz.Authorizer{Client: r.Client, Clock: r.Clock}
		}
	})
	return r.Authorizer
}

// editorsError is a Scene in the Run's closure whose editor is not known: the Run fails.
type editorsError struct{ msg string }

func (e *editorsError) Error() string { return e.msg }

// closureEditors are the last editors of the Scene and of every Scene it calls, through any
// kind of call, as they are now, and those its parent Run recorded: a child Run acts for
// the same people as its parent. A callee that does not exist yet is recorded by the child Run
// that runs it, when it starts.
func (r *RunReconciler) closureEditors(ctx context.Context, run *ergonv1alpha1.Run,
	scene *ergonv1alpha1.Scene) ([]ergonv1alpha1.UserIdentity, error) {
	resolver := closure.Reader(ctx, r.Client, run.Namespace)
	walked, err := closure.Walk(scene.Name, &scene.Spec, resolver)
	if err != nil {
		return nil, err
	}
	var editors []ergonv1alpha1.UserIdentity
	for _, name := range walked.Scenes {
		sc := scene
		if name != scene.Name {
			if sc = resolver.Scenes[name]; sc == nil {
				continue // not there yet: the child Run that runs it records its editor
			}
		}
		id, ok, err := identity.Of(sc, ergonv1alpha1.AnnotationEditor)
		if err != nil || !ok {
			return nil, &editorsError{fmt.Sprintf("Scene %s has no recorded editor (annotation %s), so Ergon cannot tell "+
				"whose authority its steps use; apply or edit it again so admission records who changed it",
				sc.Name, ergonv1alpha1.AnnotationEditor)}
		}
		editors = append(editors, id)
	}
	if parent := metav1.GetControllerOf(run); parent != nil && parent.Kind == shared.KindRun &&
		parent.APIVersion == ergonv1alpha1.GroupVersion.String() {
		p := &ergonv1alpha1.Run{}
		err := r.Get(ctx, types.NamespacedName{Namespace: run.Namespace, Name: parent.Name}, p)
		switch {
		case err == nil && p.UID == parent.UID:
			editors = append(p.Status.SceneEditors, editors...)
		case err != nil && !apierrors.IsNotFound(err):
			return nil, err
		}
	}
	return identity.Union(editors), nil
}
