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
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/compile"
	webhookv1alpha1 "github.com/ergon-dev/ergon/webhook/v1alpha1"
)

func newLintCommand(o *Options) *cobra.Command {
	return &cobra.Command{
		Use:   "lint FILE|DIR|- ...",
		Short: "Check Scenes offline, as admission checks them",
		Long: "Compile the Scenes of YAML or JSON files offline with the same compiler and checks the\n" +
			"admission webhook uses (graph cycles, templates, conditions, params, models, tools, Scenes\n" +
			"calling each other among the files), and check Runs' params against Scenes of the files.\n" +
			"Messages name the field path and are those admission gives. Directories are read\n" +
			"recursively. The exit code is 1 when any object is invalid: use it in CI.\n" +
			"Checks of the CRD's schema itself (field types, patterns, CEL rules) are the API server's:\n" +
			"run kubectl apply --dry-run=server for those.",
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
	source string
	scene  *ergonv1alpha1.Scene
	run    *ergonv1alpha1.Run
}

// Lint checks the Ergon objects among documents: each Scene as the Scene webhook does, with
// the Scenes of the documents as its namespace, and each Run's params against its Scene when
// the documents hold it. Other objects are left alone.
func Lint(docs []Document) []LintResult {
	var objs []lintObject
	var results []LintResult
	scenes := map[string][]ergonv1alpha1.Scene{} // by namespace
	for _, d := range docs {
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(d.Data, &tm); err != nil {
			results = append(results, LintResult{Source: d.Source, Err: fmt.Errorf("not YAML: %w", err)})
			continue
		}
		if !strings.HasPrefix(tm.APIVersion, ergonv1alpha1.GroupVersion.Group+"/") {
			continue
		}
		obj := lintObject{source: d.Source}
		var err error
		switch tm.Kind {
		case "Scene":
			obj.scene = &ergonv1alpha1.Scene{}
			err = yaml.Unmarshal(d.Data, obj.scene)
			if err == nil {
				scenes[obj.scene.Namespace] = append(scenes[obj.scene.Namespace], *obj.scene)
			}
		case "Run":
			obj.run = &ergonv1alpha1.Run{}
			err = yaml.Unmarshal(d.Data, obj.run)
		default:
			continue
		}
		if err != nil {
			results = append(results, LintResult{Source: d.Source, Kind: tm.Kind, Err: fmt.Errorf("%s: %w", tm.Kind, err)})
			continue
		}
		objs = append(objs, obj)
	}
	for _, obj := range objs {
		if obj.scene != nil {
			results = append(results, LintScene(obj.source, obj.scene, scenes[obj.scene.Namespace]))
			continue
		}
		results = append(results, lintRun(obj.source, obj.run, scenes[obj.run.Namespace]))
	}
	return results
}

// LintScene checks a Scene with the functions the Scene webhook calls, and words what is
// wrong as the webhook does.
func LintScene(source string, scene *ergonv1alpha1.Scene, namespace []ergonv1alpha1.Scene) LintResult {
	res := LintResult{Source: source, Kind: "Scene", Name: scene.Name}
	errs := webhookv1alpha1.ValidateSceneSpec(&scene.Spec)
	callErrs, warnings := webhookv1alpha1.ValidateSceneCalls(scene, namespace)
	errs = append(errs, callErrs...)
	res.Warnings = warnings
	if len(errs) > 0 {
		res.Err = apierrors.NewInvalid(ergonv1alpha1.GroupVersion.WithKind("Scene").GroupKind(), scene.Name, errs)
	}
	return res
}

func lintRun(source string, run *ergonv1alpha1.Run, scenes []ergonv1alpha1.Scene) LintResult {
	res := LintResult{Source: source, Kind: "Run", Name: run.Name}
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
