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

// argoTuning is Argo as its own scaling advice tunes it for many short steps, each setting
// with where the advice comes from:
//   - DEFAULT_REQUEUE_TIME 1s (default 10s): how long the controller waits to look at a
//     Workflow again; workflow/controller/rate_limiters.go says lower values make Workflows
//     of many short steps progress faster, and that below 1s the informer is unlikely to be
//     up to date;
//   - --qps 100 --burst 200 (defaults 20 and 30): the Kubernetes client's rate limit, which
//     docs/scaling.md ("K8S API Client Side Rate Limiting") says to raise when the controller
//     logs client-side throttling, as it does here on fan-outs;
//   - resourceRateLimit {limit: 100, burst: 200} (default 10/s): the pod-creation rate limit of
//     the controller's ConfigMap (docs/workflow-controller-configmap.yaml), which otherwise
//     caps a fan-out of 100 at ten pods a second.
var argoTuning = struct {
	env               map[string]string
	args              []string
	resourceRateLimit string
}{
	env:               map[string]string{"DEFAULT_REQUEUE_TIME": "1s"},
	args:              []string{"--qps", "100", "--burst", "200"},
	resourceRateLimit: "limit: 100\nburst: 200\n",
}

// argoManifests turns Argo's cluster-install rendering (stdin) into what the comparison
// installs (stdout): without argo-server and the PriorityClass, the controller on the images
// built from source, tuned (argoTuning) unless -tuned=false, and the emissary executor's
// containers under the restricted profile as the steps' own are.
func argoManifests(args []string) error {
	fs := flag.NewFlagSet("argo-manifests", flag.ContinueOnError)
	controller := fs.String("controller-image", "", "the workflow-controller image")
	executor := fs.String("executor-image", "", "the argoexec image")
	tuned := fs.Bool("tuned", true, "tune the controller as Argo's scaling advice does (argoTuning)")
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
			args := []any{"--executor-image", *executor, "--executor-image-pull-policy", "IfNotPresent"}
			if *tuned {
				var env []any
				for k, v := range argoTuning.env {
					env = append(env, map[string]any{"name": k, "value": v})
				}
				c["env"] = append(asList(c["env"]), env...)
				for _, a := range argoTuning.args {
					args = append(args, a)
				}
			}
			c["args"] = args
			delete(c, "livenessProbe")
		case kind == "ConfigMap" && name == "workflow-controller-configmap":
			data := map[string]any{"executor": "securityContext:\n  runAsNonRoot: true\n  runAsUser: 65532\n" +
				"  allowPrivilegeEscalation: false\n  capabilities:\n    drop: [ALL]\n  seccompProfile:\n    type: RuntimeDefault\n"}
			if *tuned {
				data["resourceRateLimit"] = argoTuning.resourceRateLimit
			}
			obj["data"] = data
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

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}
