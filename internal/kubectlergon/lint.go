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

package kubectlergon

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/compile"
	"github.com/ergon-dev/ergon/internal/validate"
)

func newLintCommand(o *Options) *cobra.Command {
	return &cobra.Command{
		Use:   "lint FILE|DIR|- ...",
		Short: "Check Scenes offline, as admission checks them",
		Long: "Compile the Scenes of YAML or JSON files offline with the same compiler and checks the\n" +
			"admission webhook uses (graph cycles, templates, conditions, params, models, tools, Scenes\n" +
			"calling each other among the files), and check Runs' params against Scenes of the files.\n" +
			"Messages name the field path and are those admission gives. Directories are read\n" +
			"recursively. Every Ergon object is first checked against its CRD's schema and validation\n" +
			"rules, built in, as the API server checks it. The exit code is 1 when any object is\n" +
			"invalid: use it in CI.",
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			docs, err := readDocuments(o.Streams.In, args)
			if err != nil {
				return err
			}
			results := Lint(docs)
			bad := 0
			for _, r := range results {
				for _, w := range r.Warnings {
					_, _ = fmt.Fprintf(o.Streams.ErrOut, "%s: Warning: %s\n", r.Source, w)
				}
				if r.Err != nil {
					bad++
					_, _ = fmt.Fprintf(o.Streams.Out, "%s: %v\n", r.Source, r.Err)
				}
			}
			_, _ = fmt.Fprintf(o.Streams.ErrOut, "%d objects checked, %d invalid\n", len(results), bad)
			if bad > 0 {
				return &ExitError{Code: ExitFailed}
			}
			return nil
		},
	}
}

// Document is one YAML document of a file.
type Document struct {
	// Source is the file and the document's index in it, e.g. scenes.yaml#2.
	Source string
	Data   []byte
}

// LintResult is what lint says of one Ergon object.
type LintResult struct {
	Source   string
	Kind     string
	Name     string
	Err      error
	Warnings []string
}

func readDocuments(stdin io.Reader, args []string) ([]Document, error) {
	var docs []Document
	add := func(name string, data []byte) error {
		r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
		for i := 1; ; i++ {
			doc, err := r.Read()
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			if len(bytes.TrimSpace(doc)) > 0 {
				docs = append(docs, Document{Source: fmt.Sprintf("%s#%d", name, i), Data: doc})
			}
		}
	}
	for _, arg := range args {
		if arg == "-" {
			data, err := readAll(stdin)
			if err != nil {
				return nil, err
			}
			if err := add("<stdin>", data); err != nil {
				return nil, err
			}
			continue
		}
		err := filepath.WalkDir(arg, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			ext := strings.ToLower(filepath.Ext(path))
			if d.IsDir() || (path != arg && ext != ".yaml" && ext != ".yml" && ext != ".json") {
				return nil
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			return add(path, data)
		})
		if err != nil {
			return nil, err
		}
	}
	return docs, nil
}

func readAll(r io.Reader) ([]byte, error) {
	if r == nil {
		return nil, errors.New("no standard input")
	}
	return io.ReadAll(r)
}

type lintObject struct {
	source   string
	scene    *ergonv1alpha1.Scene
	run      *ergonv1alpha1.Run
	warnings []string
}

// Lint checks the Ergon objects among documents as the API server does on create: each
// against its CRD's schema and validation rules (after the schema's defaults), then each
// Scene as the Scene webhook does, with the Scenes of the documents as its namespace, each
// Run's params against its Scene when the documents hold it, and each Trigger's and
// Workspace's spec as their webhooks do (what needs the cluster, such as the Trigger's Scene
// and Secret or a runCompleted cycle, is left out). Other objects are left alone.
func Lint(docs []Document) []LintResult {
	var objs []lintObject
	var results []LintResult
	scenes := map[string][]ergonv1alpha1.Scene{} // by namespace
	for _, d := range docs {
		res, obj, ok := decodeAndCheck(d)
		if !ok {
			continue
		}
		if res.Err != nil || (obj.scene == nil && obj.run == nil) {
			results = append(results, res)
			continue
		}
		if obj.scene != nil {
			scenes[obj.scene.Namespace] = append(scenes[obj.scene.Namespace], *obj.scene)
		}
		obj.warnings = res.Warnings
		objs = append(objs, obj)
	}
	for _, obj := range objs {
		var res LintResult
		if obj.scene != nil {
			res = LintScene(obj.source, obj.scene, scenes[obj.scene.Namespace])
		} else {
			res = lintRun(obj.source, obj.run, scenes[obj.run.Namespace])
		}
		res.Warnings = append(obj.warnings, res.Warnings...)
		results = append(results, res)
	}
	return results
}

// decodeAndCheck reads an Ergon object of a document and checks it against its CRD's
// schema; ok is false for documents that are not Ergon objects. A Scene or Run that passes
// comes back decoded, with the schema's defaults, for the webhook's checks.
func decodeAndCheck(d Document) (res LintResult, obj lintObject, ok bool) {
	res.Source, obj.source = d.Source, d.Source
	data, err := yaml.YAMLToJSON(d.Data)
	if err != nil {
		res.Err = fmt.Errorf("not YAML: %w", err)
		return res, obj, true
	}
	u := map[string]any{}
	if err := utiljson.Unmarshal(data, &u); err != nil {
		res.Err = fmt.Errorf("not a YAML object: %w", err)
		return res, obj, true
	}
	apiVersion, _ := u["apiVersion"].(string)
	group, version, _ := strings.Cut(apiVersion, "/")
	if group != ergonv1alpha1.GroupVersion.Group {
		return res, obj, false
	}
	res.Kind, _ = u["kind"].(string)
	if meta, isMap := u["metadata"].(map[string]any); isMap {
		res.Name, _ = meta["name"].(string)
	}
	gk := schema.GroupKind{Group: group, Kind: res.Kind}
	schemas, err := kindSchemas()
	if err != nil {
		res.Err = fmt.Errorf("the CRDs built into kubectl-ergon: %w", err)
		return res, obj, true
	}
	ks := schemas[version+"/"+res.Kind]
	if ks == nil {
		res.Err = fmt.Errorf("no kind %q in version %q of %s", res.Kind, version, group)
		return res, obj, true
	}
	unknown, errs := ks.validate(context.Background(), u)
	for _, f := range unknown {
		res.Warnings = append(res.Warnings, fmt.Sprintf("unknown field %q", f))
	}
	if len(errs) > 0 {
		res.Err = apierrors.NewInvalid(gk, res.Name, errs)
		return res, obj, true
	}
	switch res.Kind {
	case "Scene":
		obj.scene = &ergonv1alpha1.Scene{}
		err = runtime.DefaultUnstructuredConverter.FromUnstructured(u, obj.scene)
	case "Run":
		obj.run = &ergonv1alpha1.Run{}
		err = runtime.DefaultUnstructuredConverter.FromUnstructured(u, obj.run)
	case "Trigger":
		t := &ergonv1alpha1.Trigger{}
		if err = runtime.DefaultUnstructuredConverter.FromUnstructured(u, t); err == nil {
			errs := validate.Trigger(&t.Spec)
			errs = append(errs, validate.SceneRefName(field.NewPath("spec", "sceneRef", "name"), t.Spec.SceneRef.Name)...)
			if len(errs) > 0 {
				res.Err = apierrors.NewInvalid(gk, res.Name, errs)
			}
		}
	case "Workspace":
		w := &ergonv1alpha1.Workspace{}
		if err = runtime.DefaultUnstructuredConverter.FromUnstructured(u, w); err == nil {
			if errs := validate.Workspace(&w.Spec); len(errs) > 0 {
				res.Err = apierrors.NewInvalid(gk, res.Name, errs)
			}
		}
	case "WorkspacePool":
		p := &ergonv1alpha1.WorkspacePool{}
		if err = runtime.DefaultUnstructuredConverter.FromUnstructured(u, p); err == nil {
			if errs := validate.WorkspacePool(&p.Spec); len(errs) > 0 {
				res.Err = apierrors.NewInvalid(gk, res.Name, errs)
			}
		}
	}
	if err != nil {
		res.Err = fmt.Errorf("%s: %w", res.Kind, err)
	}
	return res, obj, true
}

// LintScene checks a Scene with the functions the Scene webhook calls, and words what is
// wrong as the webhook does.
func LintScene(source string, scene *ergonv1alpha1.Scene, namespace []ergonv1alpha1.Scene) LintResult {
	res := LintResult{Source: source, Kind: "Scene", Name: scene.Name}
	errs := validate.Scene(&scene.Spec)
	callErrs, warnings := validate.SceneCallsIn(scene, namespace)
	errs = append(errs, callErrs...)
	res.Warnings = warnings
	if len(errs) > 0 {
		res.Err = apierrors.NewInvalid(ergonv1alpha1.GroupVersion.WithKind("Scene").GroupKind(), scene.Name, errs)
	}
	return res
}

func lintRun(source string, run *ergonv1alpha1.Run, scenes []ergonv1alpha1.Scene) LintResult {
	res := LintResult{Source: source, Kind: "Run", Name: run.Name}
	if errs := validate.SceneRefName(field.NewPath("spec", "sceneRef", "name"), run.Spec.SceneRef.Name); len(errs) > 0 {
		res.Err = apierrors.NewInvalid(ergonv1alpha1.GroupVersion.WithKind("Run").GroupKind(), run.Name, errs)
		return res
	}
	for i := range scenes {
		if scenes[i].Name != run.Spec.SceneRef.Name {
			continue
		}
		if errs := compile.CheckParams(&scenes[i].Spec, run.Spec.Params); len(errs) > 0 {
			res.Err = apierrors.NewInvalid(ergonv1alpha1.GroupVersion.WithKind("Run").GroupKind(), run.Name, errs)
		}
		return res
	}
	res.Warnings = []string{fmt.Sprintf("%s: Scene %q is not among the files; the Run's params were not checked",
		field.NewPath("spec", "sceneRef", "name"), run.Spec.SceneRef.Name)}
	return res
}
