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

package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"sigs.k8s.io/yaml"
)

// argoManifests turns Argo's cluster-install rendering (stdin) into what the comparison
// installs (stdout): without argo-server and the PriorityClass, the controller on the images
// built from source, and the emissary executor's containers under the restricted profile as
// the steps' own are.
func argoManifests(args []string) error {
	fs := flag.NewFlagSet("argo-manifests", flag.ContinueOnError)
	controller := fs.String("controller-image", "", "the workflow-controller image")
	executor := fs.String("executor-image", "", "the argoexec image")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *controller == "" || *executor == "" {
		return fmt.Errorf("-controller-image and -executor-image are needed")
	}
	in, err := io.ReadAll(os.Stdin)
	if err != nil {
		return err
	}
	var out []string
	for doc := range strings.SplitSeq(string(in), "\n---\n") {
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			return err
		}
		if obj == nil {
			continue
		}
		kind, _ := obj["kind"].(string)
		meta, _ := obj["metadata"].(map[string]any)
		name, _ := meta["name"].(string)
		if kind == "PriorityClass" || strings.HasPrefix(name, "argo-server") {
			continue
		}
		switch {
		case kind == "Deployment" && name == "workflow-controller":
			spec := obj["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
			delete(spec, "priorityClassName")
			c := spec["containers"].([]any)[0].(map[string]any)
			c["image"], c["imagePullPolicy"] = *controller, "IfNotPresent"
			c["command"] = []any{"/workflow-controller"}
			c["args"] = []any{"--executor-image", *executor, "--executor-image-pull-policy", "IfNotPresent"}
			delete(c, "livenessProbe")
		case kind == "ConfigMap" && name == "workflow-controller-configmap":
			obj["data"] = map[string]any{"executor": "securityContext:\n  runAsNonRoot: true\n  runAsUser: 65532\n" +
				"  allowPrivilegeEscalation: false\n  capabilities:\n    drop: [ALL]\n  seccompProfile:\n    type: RuntimeDefault\n"}
		}
		b, err := yaml.Marshal(obj)
		if err != nil {
			return err
		}
		out = append(out, string(b))
	}
	_, err = fmt.Print(strings.Join(out, "---\n"))
	return err
}
