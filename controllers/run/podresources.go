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

package run

import (
	"context"
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/compile"
	"github.com/ergon-dev/ergon/internal/planner"
)

// Step pods are never BestEffort unless a Scene asks: the resources of a step's container are,
// in order, the step's own, the Scene's spec.stepResources, the namespace's LimitRange
// defaults (the API server applies them; Ergon sets nothing), and the manager's
// --step-default-* values. An agent step's runtime has its own in place of the last two.

// +kubebuilder:rbac:groups="",resources=limitranges,verbs=get;list;watch

// agentResources are the agent runtime's requests and limits, for an agent step that sets none.
var agentResources = corev1.ResourceRequirements{
	Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
	Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
}

// StepDefaultResources builds the manager's default requests and limits of step containers from
// its --step-default-* flags; an empty value sets nothing for that resource.
func StepDefaultResources(cpuRequest, memoryRequest, cpuLimit, memoryLimit string) (corev1.ResourceRequirements, error) {
	var r corev1.ResourceRequirements
	for _, v := range []struct {
		list  *corev1.ResourceList
		name  corev1.ResourceName
		value string
	}{
		{&r.Requests, corev1.ResourceCPU, cpuRequest}, {&r.Requests, corev1.ResourceMemory, memoryRequest},
		{&r.Limits, corev1.ResourceCPU, cpuLimit}, {&r.Limits, corev1.ResourceMemory, memoryLimit},
	} {
		if v.value == "" {
			continue
		}
		q, err := resource.ParseQuantity(v.value)
		if err != nil {
			return r, err
		}
		if *v.list == nil {
			*v.list = corev1.ResourceList{}
		}
		(*v.list)[v.name] = q
	}
	return r, nil
}

// unsetResources reports whether r asks for nothing: no requests, limits or claims.
func unsetResources(r corev1.ResourceRequirements) bool {
	return len(r.Requests) == 0 && len(r.Limits) == 0 && len(r.Claims) == 0
}

// sceneStepResources is the Scene's spec.stepResources; nil when it sets none.
func sceneStepResources(scene *compile.Scene) *corev1.ResourceRequirements {
	if scene == nil || scene.Spec == nil {
		return nil
	}
	return scene.Spec.StepResources
}

// defaultedResources are the resources of a container that sets own: own when it sets any,
// else the Scene's stepResources when it has them (even empty: the Scene asks for nothing),
// else fallback, which is nil where the namespace's LimitRange gives the default.
func defaultedResources(own corev1.ResourceRequirements, scene, fallback *corev1.ResourceRequirements) corev1.ResourceRequirements {
	switch {
	case !unsetResources(own):
		return own
	case scene != nil:
		return *scene.DeepCopy()
	case fallback != nil:
		return *fallback.DeepCopy()
	}
	return own
}

// hasContainerDefaults reports whether a LimitRange gives containers a default request or limit.
func hasContainerDefaults(ranges []corev1.LimitRange) bool {
	for _, lr := range ranges {
		for _, item := range lr.Spec.Limits {
			if item.Type == corev1.LimitTypeContainer && (len(item.Default) > 0 || len(item.DefaultRequest) > 0) {
				return true
			}
		}
	}
	return false
}

// managerDefaults are the manager's default resources for a step container in namespace: nil
// where a LimitRange of the namespace gives containers defaults, which then win.
func (r *RunReconciler) managerDefaults(ctx context.Context, namespace string) (*corev1.ResourceRequirements, error) {
	if unsetResources(r.Config.StepDefaultResources) {
		return nil, nil
	}
	ranges := &corev1.LimitRangeList{}
	if err := r.List(ctx, ranges, client.InNamespace(namespace)); err != nil {
		return nil, err
	}
	if hasContainerDefaults(ranges.Items) {
		return nil, nil
	}
	return &r.Config.StepDefaultResources, nil
}

// podParts reads what building the plan's pods needs (podParts), from the cache except the
// Workspace's pod: the node of the Workspace's pod when the Scene binds one, the params
// schemas of the Scenes its agent pods' Scene tools call (read now, so a Scene changed since
// the Run started is called as it is), and the manager's default resources when a container
// step or tool call may need them.
func (r *RunReconciler) podParts(ctx context.Context, run *ergonv1alpha1.Run, f *planner.Facts,
	plan *planner.Plan) (podParts, error) {
	parts := podParts{bins: ergonBinaries{Image: r.Config.EntrypointImage, Mode: r.Config.StepBinaries}, traced: r.Config.Traces != nil,
		artifacts: r.Config.Artifacts}
	if len(plan.Pods) == 0 && len(plan.ToolPods) == 0 {
		return parts, nil
	}
	if w := f.Workspace; w != nil && w.Object != nil {
		parts.workspace = w.Object
		node, err := r.workspaceNode(ctx, w.Object)
		if err != nil {
			return parts, err
		}
		parts.node = node
	}
	containers := len(plan.ToolPods) > 0
	for _, req := range plan.Pods {
		a := req.Step.Spec.Agent
		if a == nil {
			containers = true
			continue
		}
		for _, t := range a.Tools {
			if t.Scene == "" {
				continue
			}
			if _, ok := parts.schemas[string(t.Scene)]; ok {
				continue
			}
			scene := &ergonv1alpha1.Scene{}
			err := r.Get(ctx, client.ObjectKey{Namespace: run.Namespace, Name: string(t.Scene)}, scene)
			if apierrors.IsNotFound(err) {
				continue // an open schema: its child Run waits for it, as a scene step's does
			}
			if err != nil {
				return parts, err
			}
			if parts.schemas == nil {
				parts.schemas = map[string]json.RawMessage{}
			}
			parts.schemas[string(t.Scene)] = scene.Spec.ParamsSchema()
		}
	}
	if containers {
		defaults, err := r.managerDefaults(ctx, run.Namespace)
		if err != nil {
			return parts, err
		}
		parts.defaults = defaults
	}
	return parts, nil
}
