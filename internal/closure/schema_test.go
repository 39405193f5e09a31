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
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

// The schema test reads the generated CRDs, as the API server will see them, and fails when a
// property whose name looks like a reference is of a Go type that is not a reference type
// (referenceKind): a new plain-string field that names a Secret, a Scene or an endpoint would
// escape the fill test above, which finds references by type alone.
//
// What looks like a reference, on the property's name in lower case (the heuristic; widen it
// rather than add exceptions):
//   - it ends with "ref" or "refs": secretKeyRef, configMapRef, apiKeySecretRef, sceneRef;
//   - it holds "secret", "configmap", "persistentvolumeclaim", "claimname", "scene" or
//     "workspace": a field named after the kind it names;
//   - it ends with "url", "urls", "host" or "hosts": an endpoint (baseURL, url, allowHosts);
//   - it is "memory": the Scene's memory;
//   - it is "name" directly under a property that ends with "ref": the referent's name.
//
// A property that looks like a reference passes when its Go type is a reference type, or is a
// struct one of whose own fields is (sceneCall{name}, memory{name}). Only spec is read: status
// is the manager's to write, and names nothing a person chose. Where the CRD leaves a field
// schemaless (AgentTool, which takes a string or an object), the Go type's JSON names are read
// instead, with the same rules.
var (
	crdSpecs = map[string]reflect.Type{
		"ergon.dev_scenes.yaml":         reflect.TypeFor[ergonv1alpha1.SceneSpec](),
		"ergon.dev_triggers.yaml":       reflect.TypeFor[ergonv1alpha1.TriggerSpec](),
		"ergon.dev_workspaces.yaml":     reflect.TypeFor[ergonv1alpha1.WorkspaceSpec](),
		"ergon.dev_workspacepools.yaml": reflect.TypeFor[ergonv1alpha1.WorkspacePoolSpec](),
	}
	// notReferences are upstream selectors named like references that name no object: a field
	// of the pod itself, a resource of its container, a file of one of its own volumes.
	notReferences = []reflect.Type{
		reflect.TypeFor[corev1.ObjectFieldSelector](),
		reflect.TypeFor[corev1.ResourceFieldSelector](),
		reflect.TypeFor[corev1.FileKeySelector](),
	}
)

// looksLikeReference is the heuristic above.
func looksLikeReference(name, parent string) bool {
	n, p := strings.ToLower(name), strings.ToLower(parent)
	for _, s := range []string{"secret", "configmap", "persistentvolumeclaim", "claimname", "scene", "workspace"} {
		if strings.Contains(n, s) {
			return true
		}
	}
	for _, s := range []string{"ref", "refs", "url", "urls", "host", "hosts"} {
		if strings.HasSuffix(n, s) {
			return true
		}
	}
	return n == "memory" || (n == "name" && strings.HasSuffix(p, "ref"))
}

// elem is t without pointers, slices and maps around it.
func elem(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	return t
}

// isReference says whether a field of type t passes: a reference type, a struct holding one
// directly, or an upstream selector that names no object.
func isReference(t reflect.Type) bool {
	t = elem(t)
	if _, ok := referenceKind(t); ok || slices.Contains(notReferences, t) {
		return true
	}
	if t.Kind() != reflect.Struct {
		return false
	}
	for f := range t.Fields() {
		if _, ok := referenceKind(elem(f.Type)); ok {
			return true
		}
	}
	return false
}

// jsonFields are a struct's fields by JSON name, inline ones flattened.
func jsonFields(t reflect.Type) map[string]reflect.StructField {
	fields := map[string]reflect.StructField{}
	for f := range t.Fields() {
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-" || !f.IsExported():
		case f.Anonymous && elem(f.Type).Kind() == reflect.Struct && (name == "" || strings.Contains(opts, "inline")):
			maps.Copy(fields, jsonFields(elem(f.Type)))
		case name != "":
			fields[name] = f
		}
	}
	return fields
}

type schemaChecker struct {
	t      *testing.T
	failed []string
	seen   int // properties that looked like references
}

// check checks the field of type t that owner holds under the JSON name.
func (c *schemaChecker) check(path, name, parent string, t, owner reflect.Type) {
	if !looksLikeReference(name, parent) {
		return
	}
	c.seen++
	_, inReference := referenceKind(owner)
	if !isReference(t) && (name != "name" || !inReference) {
		c.failed = append(c.failed, path+" ("+t.String()+")")
	}
}

// schema walks a CRD schema and the Go type it was generated from side by side.
func (c *schemaChecker) schema(s *apiextensionsv1.JSONSchemaProps, t reflect.Type, path string) {
	t = elem(t)
	switch {
	case s.Items != nil && s.Items.Schema != nil:
		c.schema(s.Items.Schema, t, path+"[]")
		return
	case s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil:
		c.schema(s.AdditionalProperties.Schema, t, path+"[*]")
		return
	case s.Type == "" && s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields && t.Kind() == reflect.Struct:
		c.goType(t, path, "", map[reflect.Type]bool{})
		return
	}
	if len(s.Properties) == 0 {
		return
	}
	fields := jsonFields(t)
	parent := path[strings.LastIndex(path, ".")+1:]
	for name, prop := range s.Properties {
		f, ok := fields[name]
		if !ok {
			c.t.Errorf("%s.%s: no field of %s has this JSON name; the test cannot tell its type", path, name, t)
			continue
		}
		c.check(path+"."+name, name, strings.TrimSuffix(parent, "[]"), f.Type, t)
		c.schema(&prop, f.Type, path+"."+name)
	}
}

// goType reads a type the CRD leaves schemaless by its JSON names.
func (c *schemaChecker) goType(t reflect.Type, path, parent string, seen map[reflect.Type]bool) {
	t = elem(t)
	if t.Kind() != reflect.Struct || seen[t] {
		return
	}
	seen[t] = true
	for name, f := range jsonFields(t) {
		c.check(path+"."+name, name, parent, f.Type, t)
		c.goType(f.Type, path+"."+name, name, seen)
	}
}

func readCRD(t *testing.T, file string) *apiextensionsv1.JSONSchemaProps {
	data, err := os.ReadFile(filepath.Join("..", "..", "config", "crd", "bases", file))
	if err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(data, crd); err != nil {
		t.Fatal(err)
	}
	for _, v := range crd.Spec.Versions {
		if v.Name == ergonv1alpha1.GroupVersion.Version {
			spec := v.Schema.OpenAPIV3Schema.Properties["spec"]
			return &spec
		}
	}
	t.Fatalf("%s has no version %s", file, ergonv1alpha1.GroupVersion.Version)
	return nil
}

func TestEveryReferenceLikeFieldOfTheCRDsHasAReferenceType(t *testing.T) {
	for file, goType := range crdSpecs {
		t.Run(file, func(t *testing.T) {
			c := &schemaChecker{t: t}
			c.schema(readCRD(t, file), goType, "spec")
			if c.seen == 0 {
				t.Fatal("no property looked like a reference: the heuristic reads nothing")
			}
			slices.Sort(c.failed)
			for _, f := range c.failed {
				t.Errorf("%s looks like a reference but its type is no reference type: give it a named type of "+
					"api/v1alpha1 that implements Reference (and have closure.Walk report it), or an upstream selector", f)
			}
		})
	}
}

func TestTheSchemaHeuristicCatchesAPlainStringReference(t *testing.T) {
	// A guard on the test itself: fields such as these, of plain types, must fail it.
	type plain struct {
		TokenSecret string `json:"tokenSecret"`
		Endpoint    struct {
			BaseURL string `json:"baseURL"`
		} `json:"endpoint"`
		CalleeRef struct {
			Name string `json:"name"`
		} `json:"calleeRef"`
		Tools []struct {
			Scene string `json:"scene"`
		} `json:"tools"`
	}
	str := apiextensionsv1.JSONSchemaProps{Type: "string"}
	s := &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
		"tokenSecret": str,
		"endpoint":    {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"baseURL": str}},
		"calleeRef":   {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"name": str}},
		"tools": {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{
			XPreserveUnknownFields: new(true)}}},
	}}
	c := &schemaChecker{t: t}
	c.schema(s, reflect.TypeFor[plain](), "spec")
	slices.Sort(c.failed)
	want := []string{"spec.calleeRef (struct { Name string \"json:\\\"name\\\"\" })", "spec.calleeRef.name (string)",
		"spec.endpoint.baseURL (string)", "spec.tokenSecret (string)", "spec.tools[].scene (string)"}
	if !slices.Equal(c.failed, want) {
		t.Fatalf("failed %q\nwant %q", c.failed, want)
	}
}
