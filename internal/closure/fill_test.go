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
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

// The reference types, by their Go types alone: the named types of api/v1alpha1 that
// implement ergonv1alpha1.Reference, and the upstream selectors below. No field path is
// listed anywhere; a new field of one of these types anywhere in a Scene, a Workspace or a
// Trigger is a reference the walk must report.
var (
	referenceInterface = reflect.TypeFor[ergonv1alpha1.Reference]()
	localObjectRef     = reflect.TypeFor[corev1.LocalObjectReference]()
	// upstreamSelectors name an object of one kind through an embedded LocalObjectReference.
	upstreamSelectors = map[reflect.Type]Kind{
		reflect.TypeFor[corev1.SecretKeySelector]():    KindSecret,
		reflect.TypeFor[corev1.SecretEnvSource]():      KindSecret,
		reflect.TypeFor[corev1.ConfigMapKeySelector](): KindConfigMap,
		reflect.TypeFor[corev1.ConfigMapEnvSource]():   KindConfigMap,
	}
)

// referenceKind says whether t is a reference type, and of which kind ("" for a bare
// LocalObjectReference, whose kind its field decides).
func referenceKind(t reflect.Type) (Kind, bool) {
	if t.Kind() != reflect.Interface && t.Implements(referenceInterface) {
		return reflect.Zero(t).Interface().(ergonv1alpha1.Reference).ReferenceKind(), true
	}
	if k, ok := upstreamSelectors[t]; ok {
		return k, true
	}
	return "", t == localObjectRef
}

// sentinel is a value the filler put in a reference field.
type sentinel struct {
	kind Kind // "" when any kind will do
	path string
}

// filler fills a value by reflection: every string gets a sentinel of its own, every slice
// and map one element, every pointer a value, every bool true and every number 1. It records
// the sentinels it put in reference fields.
type filler struct {
	prefix string
	n      int
	refs   map[string]sentinel
}

func newFiller(prefix string) *filler {
	return &filler{prefix: prefix, refs: map[string]sentinel{}}
}

func (f *filler) next() string {
	f.n++
	return fmt.Sprintf("%s-%d", f.prefix, f.n)
}

// fill fills v; ref is the kind of the reference v is the name of, or nil when it is none.
func (f *filler) fill(v reflect.Value, path string, ref *Kind) {
	if len(path) > 2000 {
		panic("the filler went too deep: a recursive type? " + path)
	}
	t := v.Type()
	if k, ok := referenceKind(t); ok && t.Kind() == reflect.String {
		ref = &k
	}
	switch t.Kind() {
	case reflect.String:
		s := f.next()
		v.SetString(s)
		if ref != nil {
			f.refs[s] = sentinel{kind: *ref, path: path}
		}
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(1)
	case reflect.Uint, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(1)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1)
	case reflect.Pointer:
		v.Set(reflect.New(t.Elem()))
		f.fill(v.Elem(), path, ref)
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return // raw bytes (JSON documents): no fields in them
		}
		v.Set(reflect.MakeSlice(t, 1, 1))
		f.fill(v.Index(0), path+"[0]", ref)
	case reflect.Map:
		key := reflect.New(t.Key()).Elem()
		f.fill(key, path+"{key}", nil)
		val := reflect.New(t.Elem()).Elem()
		f.fill(val, fmt.Sprintf("%s[%v]", path, key), ref)
		v.Set(reflect.MakeMap(t))
		v.SetMapIndex(key, val)
	case reflect.Struct:
		selector, isSelector := upstreamSelectors[t]
		for i := range t.NumField() {
			sf := t.Field(i)
			if !sf.IsExported() {
				continue
			}
			var fieldRef *Kind
			switch {
			case isSelector && sf.Type == localObjectRef:
				fieldRef = &selector
			case t == localObjectRef && sf.Name == "Name":
				fieldRef = ref
				if fieldRef == nil {
					anyKind := Kind("")
					fieldRef = &anyKind
				}
			}
			f.fill(v.Field(i), path+"."+sf.Name, fieldRef)
		}
	}
}

// filledResolver resolves one Scene name to a filled Scene and every Workspace it is asked for
// to a filled Workspace, recording their sentinels.
type filledResolver struct {
	callee     string
	calleeSpec *ergonv1alpha1.SceneSpec
	workspaces map[string]*ergonv1alpha1.WorkspaceSpec
}

func (r *filledResolver) Scene(name string) (*ergonv1alpha1.Scene, error) {
	if name != r.callee {
		return nil, nil
	}
	return &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: *r.calleeSpec}, nil
}

func (r *filledResolver) Workspace(name string) (*ergonv1alpha1.Workspace, error) {
	if ws, ok := r.workspaces[name]; ok {
		return &ergonv1alpha1.Workspace{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: *ws}, nil
	}
	return nil, nil
}

// missingFrom lists the sentinels that no Ref names with their kind.
func missingFrom(refs []Ref, want map[string]sentinel) []string {
	var missing []string
	for _, s := range slices.Sorted(maps.Keys(want)) {
		w := want[s]
		if !slices.ContainsFunc(refs, func(r Ref) bool { return r.Name == s && (w.kind == "" || r.Kind == w.kind) }) {
			missing = append(missing, fmt.Sprintf("%s (%s, kind %q)", w.path, s, w.kind))
		}
	}
	return missing
}

// filledWorkspaces fills a Workspace for every bare LocalObjectReference among refs, the only
// way a Scene names a Workspace, and adds its references to want.
func filledWorkspaces(refs map[string]sentinel, want map[string]sentinel, into map[string]*ergonv1alpha1.WorkspaceSpec) {
	for name, s := range refs {
		if s.kind != "" {
			continue
		}
		wf := newFiller("ws-" + name)
		ws := &ergonv1alpha1.WorkspaceSpec{}
		wf.fill(reflect.ValueOf(ws).Elem(), "Workspace("+name+").spec", nil)
		into[name] = ws
		maps.Copy(want, wf.refs)
	}
}

func TestWalkReportsEveryReferenceOfAFilledScene(t *testing.T) {
	root := &ergonv1alpha1.SceneSpec{}
	rf := newFiller("root")
	rf.fill(reflect.ValueOf(root).Elem(), "root.spec", nil)
	callee := &ergonv1alpha1.SceneSpec{}
	cf := newFiller("callee")
	cf.fill(reflect.ValueOf(callee).Elem(), "callee.spec", nil)

	var calls []string
	for s, r := range rf.refs {
		if r.kind == KindScene {
			calls = append(calls, s)
		}
	}
	slices.Sort(calls)
	if len(calls) < 4 {
		t.Fatalf("the filled Scene calls %d Scenes; want one per place a call can be (steps and finally, step and tool)", len(calls))
	}
	// Each way a Scene can call another leads to the callee: resolve one call at a time.
	for _, call := range calls {
		t.Run(rf.refs[call].path, func(t *testing.T) {
			want := maps.Clone(rf.refs)
			maps.Copy(want, cf.refs)
			r := &filledResolver{callee: call, calleeSpec: callee, workspaces: map[string]*ergonv1alpha1.WorkspaceSpec{}}
			filledWorkspaces(rf.refs, want, r.workspaces)
			filledWorkspaces(cf.refs, want, r.workspaces)
			if len(r.workspaces) != 2 {
				t.Fatalf("%d Workspaces filled, want the root's and the callee's", len(r.workspaces))
			}

			c, err := Walk("root", root, r)
			if err != nil {
				t.Fatal(err)
			}
			if missing := missingFrom(c.Refs, want); len(missing) > 0 {
				t.Errorf("the walk does not report %d references:\n%s", len(missing), strings.Join(missing, "\n"))
			}
			if !slices.Equal(c.Scenes, []string{"root", call}) {
				t.Errorf("scenes %q, want root and %s", c.Scenes, call)
			}
		})
	}
}

func TestWalkTriggerReportsEveryReferenceOfAFilledTrigger(t *testing.T) {
	spec := &ergonv1alpha1.TriggerSpec{}
	f := newFiller("trigger")
	f.fill(reflect.ValueOf(spec).Elem(), "trigger.spec", nil)
	if len(f.refs) < 3 {
		t.Fatalf("only %d references filled: %v", len(f.refs), f.refs)
	}
	c, err := WalkTrigger(spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	if missing := missingFrom(c.Refs, f.refs); len(missing) > 0 {
		t.Errorf("the walk does not report %d references:\n%s", len(missing), strings.Join(missing, "\n"))
	}
}

func TestTheFillerFindsReferencesByType(t *testing.T) {
	// A guard on the test itself: the filler must see the kinds of reference a Scene holds.
	f := newFiller("x")
	f.fill(reflect.ValueOf(&ergonv1alpha1.SceneSpec{}).Elem(), "spec", nil)
	kinds := map[Kind]int{}
	for _, s := range f.refs {
		kinds[s.kind]++
	}
	for _, k := range []Kind{KindSecret, KindConfigMap, KindScene, KindMemory, KindURL, KindHost, ""} {
		if kinds[k] == 0 {
			t.Errorf("no reference of kind %q filled: %v", k, kinds)
		}
	}
}
