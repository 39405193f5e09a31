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
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/controllers/internal/shared"
	"github.com/ergon-dev/ergon/internal/agentspec"
	"github.com/ergon-dev/ergon/internal/compile"
	"github.com/ergon-dev/ergon/internal/naming"
	"github.com/ergon-dev/ergon/internal/planner"
	"github.com/ergon-dev/ergon/internal/stepcontract"
	"github.com/ergon-dev/ergon/internal/tracing"
)

// Container tools (internal/planner/toolpods.go decides): the Run controller runs each call of
// an agent's container tool as a one-shot pod, hardened as a container step's pod, and reads
// what it wrote to $ERGON_OUTPUT once it ended.

// annotationTool names, on a tool pod, the tool it runs.
const annotationTool = "agent.ergon.dev/tool"

// isToolPod reports whether a pod of the Run is a container tool call's, not a step attempt's.
func isToolPod(pod *corev1.Pod) bool {
	return pod.Labels[ergonv1alpha1.LabelToolCall] == shared.InternalTrue
}

// addRefusedToolPods records in the facts the pods of a step's container tool calls that the
// API server refused: a refused one as failed, one that waits for room in a quota as Pending.
func (r *RunReconciler) addRefusedToolPods(run *ergonv1alpha1.Run, step string, f *planner.Facts, pending *agentspec.Pending) {
	for _, call := range pending.Calls {
		name := naming.ToolCallName(run.Name, step, call.ID)
		if _, exists := f.ToolPods[name]; exists || call.Kind != agentspec.RequestContainer {
			continue
		}
		state, ok := r.refusedPod(run, name, pending.Attempt)
		if !ok {
			continue
		}
		if state.Phase == planner.PodGone {
			state.Phase = planner.PodFailed
		}
		if f.ToolPods == nil {
			f.ToolPods = map[string]planner.ToolPodState{}
		}
		f.ToolPods[name] = planner.ToolPodState{Pod: state}
	}
}

// addToolPod records a tool pod in the facts and, once it ended while its step waits for it,
// what it wrote to $ERGON_OUTPUT (its termination message, or its log for a large output).
func (r *RunReconciler) addToolPod(ctx context.Context, f *planner.Facts, pod *corev1.Pod, phases map[string]ergonv1alpha1.StepPhase) {
	state := planner.ToolPodState{Pod: podState(pod)}
	ended := state.Pod.Phase == planner.PodSucceeded || state.Pod.Phase == planner.PodFailed
	if ended && phases[pod.Labels[ergonv1alpha1.LabelStep]] == ergonv1alpha1.StepWaiting {
		out := r.readOutput(ctx, pod)
		state.Output = out.Value
		if state.Pod.Phase == planner.PodSucceeded {
			state.OutputErr = out.Err
		}
	}
	if f.ToolPods == nil {
		f.ToolPods = map[string]planner.ToolPodState{}
	}
	// By the call's name: an alternate, when someone else's object held it, stands for it.
	f.ToolPods[shared.StandsFor(pod)] = state
}

// toolPod builds the pod of a container tool call: a container step's pod (basePod: no
// credentials, Pod Security "restricted", read-only root, no service links, the step
// contract's variables) running the tool's image with its rendered command under Ergon's
// entrypoint, bounded by the request's deadline, owned by the Run and labelled as a tool pod.
// In a Scene bound to a Workspace it mounts the Workspace's volume as a container step's pod
// does, but read-only: the write lease is the agent step's, which waits meanwhile.
func toolPod(run *ergonv1alpha1.Run, scene *compile.Scene, req planner.ToolPodRequest, parts podParts) *corev1.Pod {
	pod := basePod(run, planner.PodRequest{Name: req.Name, Step: req.Step, Attempt: req.Attempt})
	pod.Labels[ergonv1alpha1.LabelToolCall] = "true"
	pod.Annotations = map[string]string{annotationToolCall: req.CallID, annotationTool: req.Tool}
	pod.Spec.ActiveDeadlineSeconds = new(max(int64(req.Deadline.Seconds()), 1))
	main := &pod.Spec.Containers[0]
	main.Image = req.Image
	entrypoint, _ := parts.bins.add(pod, main, false)
	main.Command = []string{entrypoint}
	main.Args = append(append([]string{entrypointRun, "--"}, req.Command...), req.Args...)
	main.Resources = defaultedResources(main.Resources, sceneStepResources(scene), parts.defaults)
	if parts.traced {
		// The call's execute_tool span, so that what the tool traces joins the agent's.
		main.Env = append(main.Env, corev1.EnvVar{Name: stepcontract.EnvTraceparent,
			Value: tracing.Traceparent(tracing.ToolCallContext(run, req.Step.Name, req.Attempt, req.CallID))})
	}
	if parts.workspace != nil {
		// A step of no kind writes nothing: the volume is mounted read-only.
		bindToWorkspace(pod, &compile.Step{Name: req.Step.Name, Spec: &ergonv1alpha1.Step{Name: req.Step.Name}},
			parts.workspace, parts.node, parts.bins)
	}
	return pod
}

// createToolPods creates the pods the plan asks for.
func (a *runActor) createToolPods(ctx context.Context, run *ergonv1alpha1.Run, f *planner.Facts, plan *planner.Plan,
	parts podParts, held *heldNames) error {
	for _, req := range plan.ToolPods {
		log.FromContext(ctx).V(1).Info("Creating tool pod", "step", req.Step.Name, "tool", req.Tool, "pod", req.Name)
		pod := toolPod(run, f.Scene, req, parts)
		shared.MarkStandsFor(pod, req.StandsFor)
		err := a.authorizePod(ctx, run, pod, parts.workspace)
		if err == nil {
			err = a.createHeld(ctx, "pod", pod, held)
		}
		if refused(err) || isNotAuthorized(err) {
			// As a step's pod (refusals.go): the call fails with the API server's
			// message, which the model reads, or waits for room in a quota.
			a.podRefused(run, client.ObjectKeyFromObject(run).String(), pod, err,
				fmt.Sprintf("Step %s cannot create the pod %s of a call of its tool %s", req.Step.Name, req.Name, req.Tool))
			continue
		}
		if err != nil {
			return fmt.Errorf("creating tool pod %s: %w", req.Name, err)
		}
	}
	return nil
}

// containerCallTool is a container tool as the agent runtime sees it: its name, description
// and the JSON Schema of its arguments (none: any object).
func containerCallTool(t ergonv1alpha1.AgentTool) agentspec.CallTool {
	c := agentspec.CallTool{Name: t.ToolName(), Description: t.Description, Kind: agentspec.RequestContainer,
		RequireApproval: t.NeedsApproval()}
	if c.Description == "" {
		c.Description = fmt.Sprintf("Runs a one-shot container (image %s) with the arguments; the result is its output.",
			t.Container.Image)
	}
	if p := t.Container.Parameters; p != nil && len(p.Raw) > 0 {
		c.Parameters = json.RawMessage(p.Raw)
	}
	return c
}
