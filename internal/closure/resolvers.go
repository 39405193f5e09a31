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

package closure

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

// Objects resolves names among objects already read, such as the Scenes of a namespace or of
// the files kubectl ergon lint reads. A later object of the same name wins.
func Objects(scenes []ergonv1alpha1.Scene, workspaces []ergonv1alpha1.Workspace) Resolver {
	o := objects{scenes: map[string]*ergonv1alpha1.Scene{}, workspaces: map[string]*ergonv1alpha1.Workspace{}}
	for i := range scenes {
		o.scenes[scenes[i].Name] = &scenes[i]
	}
	for i := range workspaces {
		o.workspaces[workspaces[i].Name] = &workspaces[i]
	}
	return o
}

type objects struct {
	scenes     map[string]*ergonv1alpha1.Scene
	workspaces map[string]*ergonv1alpha1.Workspace
}

func (o objects) Scene(name string) (*ergonv1alpha1.Scene, error) { return o.scenes[name], nil }

func (o objects) Workspace(name string) (*ergonv1alpha1.Workspace, error) {
	return o.workspaces[name], nil
}

// Reader resolves names in namespace with one Get each: for admission, the API server (a
// Scene applied a moment before counts, which a cache may not hold yet); for the controller,
// its cache or the API server. What it read is kept, so the caller can look at the objects
// it walked (their UIDs, who last edited them) without reading them again.
func Reader(ctx context.Context, reader client.Reader, namespace string) *ReaderResolver {
	return &ReaderResolver{ctx: ctx, reader: reader, namespace: namespace,
		Scenes: map[string]*ergonv1alpha1.Scene{}, Workspaces: map[string]*ergonv1alpha1.Workspace{}}
}

// ReaderResolver is the Resolver Reader returns.
type ReaderResolver struct {
	ctx       context.Context
	reader    client.Reader
	namespace string
	// Scenes and Workspaces are the objects read, by name; nil for one not found.
	Scenes     map[string]*ergonv1alpha1.Scene
	Workspaces map[string]*ergonv1alpha1.Workspace
}

// Scene gets the Scene of that name, nil when there is none.
func (r *ReaderResolver) Scene(name string) (*ergonv1alpha1.Scene, error) {
	if s, ok := r.Scenes[name]; ok {
		return s, nil
	}
	s := &ergonv1alpha1.Scene{}
	found, err := r.get(name, s)
	if err != nil {
		return nil, err
	}
	if !found {
		s = nil
	}
	r.Scenes[name] = s
	return s, nil
}

// Workspace gets the Workspace of that name, nil when there is none.
func (r *ReaderResolver) Workspace(name string) (*ergonv1alpha1.Workspace, error) {
	if w, ok := r.Workspaces[name]; ok {
		return w, nil
	}
	w := &ergonv1alpha1.Workspace{}
	found, err := r.get(name, w)
	if err != nil {
		return nil, err
	}
	if !found {
		w = nil
	}
	r.Workspaces[name] = w
	return w, nil
}

// get reads the object, and says whether it is there; no object has an empty name.
func (r *ReaderResolver) get(name string, obj client.Object) (bool, error) {
	if name == "" {
		return false, nil
	}
	err := r.reader.Get(r.ctx, client.ObjectKey{Namespace: r.namespace, Name: name}, obj)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}
