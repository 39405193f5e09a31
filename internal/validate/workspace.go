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

package validate

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/stepcontract"
)

// Bounds a Workspace must stay within. A pod below them does not start, or cannot run a
// tool; an idle timeout below a minute would stop the pod between two turns of an agent.
var (
	minWorkspaceMemory  = resource.MustParse("64Mi")
	minWorkspaceStorage = resource.MustParse("1Mi")
)

const minIdleTimeout = time.Minute

// Workspace checks what the schema cannot: quantities against each other and
// against the bounds above, names the kubelet would refuse, and env names of the step
// contract's. (The schema refuses duplicate env names.)
func Workspace(spec *ergonv1alpha1.WorkspaceSpec) field.ErrorList {
	root := field.NewPath("spec")
	errs := workspaceShape(root, spec.Resources, spec.Storage, spec.Env)
	if t := spec.IdleTimeout; t != nil && t.Duration < minIdleTimeout {
		errs = append(errs, field.Invalid(root.Child("idleTimeout"), t.Duration.String(),
			"must be at least 1m, or the pod stops between two turns of an agent"))
	}
	return errs
}

// WorkspacePool checks a pool's template as Workspace checks a Workspace: its warm pods are
// the pods of Workspaces of that shape.
func WorkspacePool(spec *ergonv1alpha1.WorkspacePoolSpec) field.ErrorList {
	t := spec.Template
	return workspaceShape(field.NewPath("spec", "template"), t.Resources, t.Storage, t.Env)
}

// workspaceShape checks the fields a Workspace's pod and volume are made of, under root.
func workspaceShape(root *field.Path, resources corev1.ResourceRequirements, storage ergonv1alpha1.WorkspaceStorage,
	envs []corev1.EnvVar) field.ErrorList {
	var errs field.ErrorList
	res := root.Child("resources")
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if _, ok := resources.Limits[name]; !ok {
			errs = append(errs, field.Required(res.Child("limits").Key(string(name)),
				fmt.Sprintf("set a %s limit, for example {cpu: \"1\", memory: 2Gi}", name)))
		}
	}
	errs = append(errs, requestsWithinLimits(res, resources)...)
	if memory, ok := resources.Limits[corev1.ResourceMemory]; ok && memory.Cmp(minWorkspaceMemory) < 0 {
		errs = append(errs, field.Invalid(res.Child("limits").Key("memory"), memory.String(),
			fmt.Sprintf("must be at least %s for the workspace's shell and tools to start", minWorkspaceMemory.String())))
	}
	if size := storage.Size; size.Cmp(minWorkspaceStorage) < 0 {
		errs = append(errs, field.Invalid(root.Child("storage", "size"), size.String(),
			fmt.Sprintf("must be at least %s, for example 10Gi", minWorkspaceStorage.String())))
	}
	for i, env := range envs {
		name := root.Child("env").Index(i).Child("name")
		for _, msg := range validation.IsEnvVarName(env.Name) {
			errs = append(errs, field.Invalid(name, env.Name, msg))
		}
		// Every step pod bound to the Workspace carries its env: an ERGON_ variable there
		// would be one of the step contract's, which Ergon sets (workspace.StepEnv puts the
		// step's own over it, but a variable the step does not set would get through).
		if strings.HasPrefix(env.Name, stepcontract.EnvPrefix) {
			errs = append(errs, field.Invalid(name, env.Name, fmt.Sprintf("names beginning with %s are the step "+
				"contract's, which Ergon sets in every step bound to the Workspace; choose another name", stepcontract.EnvPrefix)))
		}
	}
	return errs
}
