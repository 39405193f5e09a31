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

// Package closure lists everything a Scene can make Ergon do: the Secrets, ConfigMaps,
// Workspaces, memories, endpoints and hosts it names, in its steps and finally steps (a
// forEach or loop is an attribute of its step, whose body is the step itself), its agent
// steps' tools of every kind, its bound Workspace's env, and the same of every Scene it calls,
// through sub-scene steps and Scene tools, transitively. It finds call cycles through every
// kind of call.
//
// Admission, kubectl ergon lint and the controller all walk a Scene with it, so what one of
// them checks the others see too. Its tests fill every field of a generated Scene with a
// sentinel and fail when a sentinel in a reference-typed field (see api/v1alpha1's
// references.go) is missing from the walk, and read the CRD schemas for reference-like fields
// of plain types; a new field cannot escape it silently.
package closure

import (
	"fmt"
	"iter"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

// Kind is what a Ref names.
type Kind = ergonv1alpha1.ReferenceKind

// Kinds of Refs.
const (
	KindSecret                = ergonv1alpha1.ReferenceSecret
	KindConfigMap             = ergonv1alpha1.ReferenceConfigMap
	KindPersistentVolumeClaim = ergonv1alpha1.ReferencePersistentVolumeClaim
	KindScene                 = ergonv1alpha1.ReferenceScene
	KindWorkspace             = ergonv1alpha1.ReferenceWorkspace
	KindMemory                = ergonv1alpha1.ReferenceMemory
	KindURL                   = ergonv1alpha1.ReferenceURL
	KindHost                  = ergonv1alpha1.ReferenceHost
	// KindWatchedScene is the Scene whose Runs a runCompleted Trigger watches: Ergon reads
	// its Runs' outcomes, and runs nothing of it.
	KindWatchedScene Kind = "WatchedScene"
)

// Ref is one thing a Scene makes Ergon use.
type Ref struct {
	Kind Kind
	// Name of the object in the root's namespace, the memory's name, the URL or the host.
	Name string
	// Path is the field of the root object that causes the use: the field itself for the
	// root's own, the call (spec.steps[2].scene.name) or binding (spec.workspace.name) that
	// leads to it otherwise.
	Path *field.Path
	// Via says where the reference is when it is not in the root's own spec: "Scene b's
	// spec.finally[0].container.env[1].valueFrom.secretKeyRef", "Workspace w's spec.env[0]
	// .valueFrom.secretKeyRef". Empty for the root's own.
	Via string
	// Scene is the Scene whose spec holds the reference, or binds the Workspace whose env does.
	Scene string
}

// Where is Via worded for a message: "" for the root's own, " (through Via)" otherwise.
func (r Ref) Where() string {
	if r.Via == "" {
		return ""
	}
	return " (through " + r.Via + ")"
}

// OfKind keeps the refs of the kinds given.
func OfKind(refs []Ref, kinds ...Kind) []Ref {
	var out []Ref
	for _, r := range refs {
		if slices.Contains(kinds, r.Kind) {
			out = append(out, r)
		}
	}
	return out
}

// Cycle is a chain of calls that comes back to a Scene already on it.
type Cycle struct {
	// Path is the root's field where the chain starts.
	Path *field.Path
	// Scenes is the chain from the root, its last Scene the one called again: a, b, c, b.
	Scenes []string
}

// Closure is what a walk found.
type Closure struct {
	// Refs in the order the walk met them: a Scene's own, then, at each call, the callee's.
	Refs []Ref
	// Scenes reached, the root first, each once.
	Scenes []string
	// Missing are the Scenes and Workspaces named that the Resolver did not find; what they
	// would use is not in Refs.
	Missing []Ref
	// Cycle is the first call cycle met, nil when there is none. A Scene reached twice
	// without a cycle (a diamond) is walked once.
	Cycle *Cycle
}

// Resolver finds the objects a walk follows, by name, in the root's namespace.
//
// Scene returns the Scene of that name, Workspace the Workspace; both return nil and no error
// when there is none, and an error only when they cannot tell (the walk then stops with it).
// The walk never asks for the root itself: the root's spec is the one given to Walk, and a call
// back to it is a cycle. Each name is asked for at most once per walk. Implementations:
// Objects (from lists already read), Reader (a client, for admission and the controller), or
// one of the caller's own, such as a Run's snapshot of its callees.
type Resolver interface {
	Scene(name string) (*ergonv1alpha1.Scene, error)
	Workspace(name string) (*ergonv1alpha1.Workspace, error)
}

// Walk lists everything the Scene root, whose spec is spec, makes Ergon use, with the Scenes
// it calls, transitively, as r finds them. A nil r finds nothing. The error is r's.
func Walk(root string, spec *ergonv1alpha1.SceneSpec, r Resolver) (Closure, error) {
	w := newWalker(r)
	err := w.scene(root, spec, nil)
	return w.out, err
}

// WalkTrigger lists what a Trigger makes Ergon use: its webhook's Secret, the Scene it runs
// with that Scene's closure (under spec.sceneRef.name), and the Scene a runCompleted source
// watches (KindWatchedScene, not walked: nothing of it runs).
func WalkTrigger(spec *ergonv1alpha1.TriggerSpec, r Resolver) (Closure, error) {
	w := newWalker(r)
	if h := spec.Webhook; h != nil {
		w.add(Ref{Kind: KindSecret, Name: h.SecretRef.Name, Path: field.NewPath("spec", "webhook", "secretRef")})
	}
	if rc := spec.RunCompleted; rc != nil {
		w.add(Ref{Kind: KindWatchedScene, Name: rc.SceneRef.Name, Path: field.NewPath("spec", "runCompleted", "sceneRef", "name")})
	}
	ref := Ref{Kind: KindScene, Name: spec.SceneRef.Name, Path: field.NewPath("spec", "sceneRef", "name")}
	w.add(ref)
	err := w.call(ref)
	return w.out, err
}

// Steps yields every step of a Scene spec with its path: spec.steps[i], then spec.finally[i].
// A forEach or loop is an attribute of its step: the step is its body.
func Steps(spec *ergonv1alpha1.SceneSpec) iter.Seq2[*field.Path, *ergonv1alpha1.Step] {
	return func(yield func(*field.Path, *ergonv1alpha1.Step) bool) {
		for _, list := range []struct {
			name  string
			steps []ergonv1alpha1.Step
		}{{"steps", spec.Steps}, {"finally", spec.Finally}} {
			for i := range list.steps {
				if !yield(field.NewPath("spec", list.name).Index(i), &list.steps[i]) {
					return
				}
			}
		}
	}
}

// Own lists the references one Scene spec holds itself, with paths under spec, in the order
// of its fields; Walk follows them.
func Own(spec *ergonv1alpha1.SceneSpec) []Ref {
	var refs []Ref
	add := func(kind Kind, name string, path *field.Path) {
		refs = append(refs, Ref{Kind: kind, Name: name, Path: path})
	}
	root := field.NewPath("spec")
	for i, p := range spec.Params {
		if p.ValueFrom != nil {
			add(KindSecret, p.ValueFrom.SecretKeyRef.Name, root.Child("params").Index(i).Child("valueFrom", "secretKeyRef"))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(spec.Models)) {
		m, p := spec.Models[name], root.Child("models").Key(name)
		if m.APIKeySecretRef != nil {
			add(KindSecret, m.APIKeySecretRef.Name, p.Child("apiKeySecretRef"))
		}
		add(KindURL, string(m.BaseURL), p.Child("baseURL"))
	}
	if spec.Memory != nil {
		add(KindMemory, string(spec.Memory.Name), root.Child("memory", "name"))
	}
	for i, h := range spec.AllowHosts {
		add(KindHost, string(h), root.Child("allowHosts").Index(i))
	}
	if spec.Workspace != nil {
		add(KindWorkspace, spec.Workspace.Name, root.Child("workspace", "name"))
	}
	for path, s := range Steps(spec) {
		if c := s.Container; c != nil {
			refs = append(refs, EnvRefs(path.Child("container"), c.Env, c.EnvFrom)...)
		}
		if a := s.Agent; a != nil {
			p := path.Child("agent")
			for j, t := range a.Tools {
				tp := p.Child("tools").Index(j)
				if t.Scene != "" {
					add(KindScene, string(t.Scene), tp.Child("scene"))
				}
				if t.MCP != nil {
					add(KindURL, string(t.MCP.URL), tp.Child("mcp", "url"))
				}
				if t.IsBuiltin() && t.Name == ergonv1alpha1.ToolRemember && spec.Memory != nil {
					add(KindMemory, string(spec.Memory.Name), tp)
				}
			}
			for k, h := range a.AllowHosts {
				add(KindHost, string(h), p.Child("allowHosts").Index(k))
			}
		}
		if s.Scene != nil {
			add(KindScene, string(s.Scene.Name), path.Child("scene", "name"))
		}
	}
	return refs
}

// EnvRefs lists the Secrets and ConfigMaps a container's env and envFrom read, with paths
// under path.
func EnvRefs(path *field.Path, env []corev1.EnvVar, envFrom []corev1.EnvFromSource) []Ref {
	var refs []Ref
	for j, e := range env {
		if e.ValueFrom == nil {
			continue
		}
		p := path.Child("env").Index(j).Child("valueFrom")
		if r := e.ValueFrom.SecretKeyRef; r != nil {
			refs = append(refs, Ref{Kind: KindSecret, Name: r.Name, Path: p.Child("secretKeyRef")})
		}
		if r := e.ValueFrom.ConfigMapKeyRef; r != nil {
			refs = append(refs, Ref{Kind: KindConfigMap, Name: r.Name, Path: p.Child("configMapKeyRef")})
		}
	}
	for j, e := range envFrom {
		p := path.Child("envFrom").Index(j)
		if r := e.SecretRef; r != nil {
			refs = append(refs, Ref{Kind: KindSecret, Name: r.Name, Path: p.Child("secretRef")})
		}
		if r := e.ConfigMapRef; r != nil {
			refs = append(refs, Ref{Kind: KindConfigMap, Name: r.Name, Path: p.Child("configMapRef")})
		}
	}
	return refs
}

// WorkspaceRefs lists what a Workspace makes Ergon use for the steps bound to it: its env's
// Secrets and ConfigMaps, with paths under spec.
func WorkspaceRefs(spec *ergonv1alpha1.WorkspaceSpec) []Ref {
	return EnvRefs(field.NewPath("spec"), spec.Env, nil)
}

// visit is where a Scene is in the depth-first walk.
type visit int

const (
	unvisited visit = iota
	onStack
	done
)

type walker struct {
	r     Resolver
	out   Closure
	state map[string]visit
	stack []string
	// workspaces are those read already, nil for one not found.
	workspaces map[string]*ergonv1alpha1.Workspace
}

func newWalker(r Resolver) *walker {
	return &walker{r: r, state: map[string]visit{}, workspaces: map[string]*ergonv1alpha1.Workspace{}}
}

func (w *walker) add(r Ref) { w.out.Refs = append(w.out.Refs, r) }

// scene walks one Scene: at is the root's field that leads to it, nil for the root.
func (w *walker) scene(name string, spec *ergonv1alpha1.SceneSpec, at *field.Path) error {
	w.state[name] = onStack
	w.stack = append(w.stack, name)
	w.out.Scenes = append(w.out.Scenes, name)
	defer func() {
		w.stack = w.stack[:len(w.stack)-1]
		w.state[name] = done
	}()
	for _, own := range Own(spec) {
		ref := own
		ref.Scene = name
		if at != nil {
			ref.Path, ref.Via = at, fmt.Sprintf("Scene %s's %s", name, own.Path)
		}
		w.add(ref)
		var err error
		switch ref.Kind {
		case KindScene:
			err = w.call(ref)
		case KindWorkspace:
			err = w.workspace(ref)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// call follows a call to another Scene, once: a Scene on the chain already is a cycle, one
// walked already is a diamond.
func (w *walker) call(ref Ref) error {
	switch w.state[ref.Name] {
	case onStack:
		if w.out.Cycle == nil {
			w.out.Cycle = &Cycle{Path: ref.Path, Scenes: append(slices.Clone(w.stack), ref.Name)}
		}
		return nil
	case done:
		return nil
	}
	var callee *ergonv1alpha1.Scene
	if w.r != nil {
		var err error
		if callee, err = w.r.Scene(ref.Name); err != nil {
			return fmt.Errorf("reading Scene %s: %w", ref.Name, err)
		}
	}
	if callee == nil {
		w.out.Missing = append(w.out.Missing, ref)
		return nil
	}
	return w.scene(ref.Name, &callee.Spec, ref.Path)
}

// workspace adds what a bound Workspace's env uses.
func (w *walker) workspace(ref Ref) error {
	ws, known := w.workspaces[ref.Name]
	if !known && w.r != nil {
		var err error
		if ws, err = w.r.Workspace(ref.Name); err != nil {
			return fmt.Errorf("reading Workspace %s: %w", ref.Name, err)
		}
		w.workspaces[ref.Name] = ws
	}
	if ws == nil {
		w.out.Missing = append(w.out.Missing, ref)
		return nil
	}
	prefix := ""
	if ref.Via != "" {
		prefix = ref.Via + ", "
	}
	for _, e := range WorkspaceRefs(&ws.Spec) {
		w.add(Ref{Kind: e.Kind, Name: e.Name, Path: ref.Path, Scene: ref.Scene,
			Via: fmt.Sprintf("%sWorkspace %s's %s", prefix, ref.Name, e.Path)})
	}
	return nil
}
