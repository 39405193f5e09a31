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
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/compile"
)

type runOptions struct {
	params     []string
	paramFile  string
	name       string
	runTimeout time.Duration
	startOptions
}

func newRunCommand(o *Options) *cobra.Command {
	ro := &runOptions{}
	cmd := &cobra.Command{
		Use:   "run SCENE",
		Short: "Start a Run of a Scene, and with --follow wait for it",
		Long: "Start a Run of a Scene. Params are checked against the Scene before the Run is sent, with the\n" +
			"same messages its admission gives. With --follow, a line is printed per step transition and the\n" +
			"exit code is 0 when the Run Succeeded, 1 when it Failed (with the failed step's reason and the\n" +
			"last lines of its log), 2 when it was Cancelled or --timeout passed first.",
		Example: "  kubectl ergon run sprint-report -p sprint=43 --follow\n" +
			"  kubectl ergon run sprint-report --param-file params.yaml -p sprint=44",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeNames(o, "scenes"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd.Context(), args[0], ro)
		},
	}
	f := cmd.Flags()
	f.StringArrayVarP(&ro.params, "param", "p", nil, "a param as key=value; repeat for more, later ones win over --param-file")
	f.StringVar(&ro.paramFile, "param-file", "", "a YAML or JSON file of params (a map of name to value); - reads stdin")
	f.StringVar(&ro.name, "name", "", "name of the Run; generated from the Scene's name when empty")
	ro.flags(cmd)
	f.DurationVar(&ro.runTimeout, "run-timeout", 0, "spec.timeout of the Run: it fails when it runs longer")
	_ = cmd.RegisterFlagCompletionFunc("param", completeParams(o))
	return cmd
}

// ParseParams merges a param file's content with -p key=value arguments, which win.
func ParseParams(file []byte, args []string) (map[string]string, error) {
	params := map[string]string{}
	if len(strings.TrimSpace(string(file))) > 0 {
		var raw map[string]any
		if err := yaml.Unmarshal(file, &raw); err != nil {
			return nil, fmt.Errorf("the param file is not a map of param names to values: %w", err)
		}
		for k, v := range raw {
			switch v := v.(type) {
			case string:
				params[k] = v
			case nil:
				params[k] = ""
			case map[string]any, []any:
				return nil, fmt.Errorf("param %q in the param file is a %s; params are strings (quote it, or write it as JSON text)",
					k, map[bool]string{true: "map", false: "list"}[isMap(v)])
			default:
				params[k] = fmt.Sprint(v)
			}
		}
	}
	for _, a := range args {
		k, v, ok := strings.Cut(a, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("-p %q: write a param as key=value", a)
		}
		params[k] = v
	}
	return params, nil
}

func isMap(v any) bool { _, ok := v.(map[string]any); return ok }

func readParamFile(o *Options, path string) ([]byte, error) {
	if path == "" {
		return nil, nil
	}
	if path == "-" {
		b, err := readAll(o.Streams.In)
		return b, err
	}
	return os.ReadFile(path)
}

func (o *Options) run(ctx context.Context, sceneName string, ro *runOptions) error {
	file, err := readParamFile(o, ro.paramFile)
	if err != nil {
		return err
	}
	params, err := ParseParams(file, ro.params)
	if err != nil {
		return err
	}
	c, ns, err := o.clientIn()
	if err != nil {
		return err
	}
	scene := &ergonv1alpha1.Scene{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: sceneName}, scene); err != nil {
		return err
	}
	if errs := compile.CheckParams(&scene.Spec, params); len(errs) > 0 {
		return paramError(sceneName, errs)
	}
	run := newRun(ns, ro.name, sceneName, params)
	if ro.runTimeout > 0 {
		run.Spec.Timeout = &metav1.Duration{Duration: ro.runTimeout}
	}
	return o.start(ctx, run, &ro.startOptions)
}

// newRun is a Run of a Scene; a Run without a name gets one generated from the Scene's.
func newRun(namespace, name, scene string, params map[string]string) *ergonv1alpha1.Run {
	run := &ergonv1alpha1.Run{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec:       ergonv1alpha1.RunSpec{Params: params},
	}
	run.Spec.SceneRef.Name = scene
	if name == "" {
		run.GenerateName = scene[:min(len(scene), 52)] + "-"
	}
	if len(params) == 0 {
		run.Spec.Params = nil
	}
	return run
}

// paramError lists what is wrong with the params, one field error a line, as admission
// words them.
func paramError(scene string, errs field.ErrorList) error {
	lines := make([]string, 0, len(errs))
	for _, e := range errs {
		lines = append(lines, "  "+e.Error())
	}
	slices.Sort(lines)
	return fmt.Errorf("the params do not fit Scene %s:\n%s", scene, strings.Join(lines, "\n"))
}
