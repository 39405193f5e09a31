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
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/controllers/internal/shared"
	"github.com/ergon-dev/ergon/internal/agentspec"
	"github.com/ergon-dev/ergon/internal/compile"
	"github.com/ergon-dev/ergon/internal/gatepolicy"
	"github.com/ergon-dev/ergon/internal/naming"
	"github.com/ergon-dev/ergon/internal/planner"
	"github.com/ergon-dev/ergon/internal/stepcontract"
)

// The Run controller's side of the request channel (docs/step-contract.md, "Tool calls the
// controller fulfils"): it reads the requests an agent attempt's checkpoint lists, creates
// their Gates and child Runs (internal/planner/toolcalls.go decides which), and stores the
// results where the next attempt reads them.

const (
	// toolResultsKey is the key of the results in a step's results ConfigMap, and the file the
	// next attempt reads them from (beside its checkpoint).
	toolResultsKey = "tool-results"
	// annotationToolCall on a tool call's Gate is the id of the call it asks approval of.
	annotationToolCall = ergonv1alpha1.AnnotationToolCall
)

// channelTools splits an agent step's tools for the runtime: the tools the pod runs that need
// approval (built-in tools, and every tool an MCP server needing approval offers), and
// the Scene tools the controller carries out (agentPod gives each its Scene's params schema,
// read before act: podParts).
func channelTools(a *ergonv1alpha1.AgentStep) (approve []string, calls []agentspec.CallTool) {
	for _, t := range a.Tools {
		switch {
		case t.Scene != "":
			calls = append(calls, agentspec.CallTool{Name: t.ToolName(), Description: sceneToolDescription(t),
				Kind: agentspec.RequestScene, Scene: string(t.Scene), RequireApproval: t.NeedsApproval()})
		case t.Container != nil:
			calls = append(calls, containerCallTool(t))
		case t.AsksHuman():
			calls = append(calls, askCallTool)
		case t.IsBuiltin() && t.NeedsApproval():
			approve = append(approve, t.Name)
		case t.MCP != nil && t.NeedsApproval():
			approve = append(approve, t.MCP.Allow...)
		}
	}
	return approve, calls
}

// askCallTool is ask_human as the model sees it.
var askCallTool = agentspec.CallTool{
	Name: ergonv1alpha1.ToolAskHuman, Kind: agentspec.RequestAsk,
	Description: "Asks a person a question and waits for their answer, which is the result: a JSON object of the " +
		"values they gave. Give input, a JSON Schema of an object of fields (string, number, integer, boolean, " +
		"array, object; enum, default, title, description), to ask for structured values; without it the person " +
		"answers in text, as the field answer. Ask only what you cannot find out yourself.",
	Parameters: json.RawMessage(`{"type": "object", "required": ["question"], "additionalProperties": false,
		"properties": {"question": {"type": "string", "minLength": 1, "maxLength": 4000,
			"description": "what to ask, complete in itself: the person sees nothing else of your work"},
		"input": {"type": "object", "description": "a JSON Schema of the answer: {\"type\": \"object\", \"properties\": {...}}"}}}`),
}

func sceneToolDescription(t ergonv1alpha1.AgentTool) string {
	if t.Description != "" {
		return t.Description
	}
	return fmt.Sprintf("Runs the workflow %s with the arguments as its params; the result is its output.", t.Scene)
}

// usesChannel reports whether an agent step has tools whose calls go to the controller.
func usesChannel(step *compile.Step) bool {
	if step == nil || step.Spec.Agent == nil {
		return false
	}
	approve, calls := channelTools(step.Spec.Agent)
	return len(approve)+len(calls) > 0 || step.Spec.Agent.Conversation != nil
}

// gatherToolCalls reads, for each agent step that waits for tool calls or whose last pod
// failed, the requests its checkpoint lists and the results stored for them; and checks the
// arguments of Scene calls whose child Run does not exist yet against the Scene's params.
func (r *RunReconciler) gatherToolCalls(ctx context.Context, reader client.Reader, run *ergonv1alpha1.Run, scene *compile.Scene,
	f *planner.Facts) error {
	for _, s := range run.Status.Steps {
		step := scene.Steps[s.Name]
		if s.Phase.Finished() || !usesChannel(step) {
			continue
		}
		waiting := s.Phase == ergonv1alpha1.StepWaiting && s.Reason == planner.ReasonToolCallPending
		// The checkpoint kept last: one noted and not recorded yet (a status write lost), else
		// the one the status records.
		kept, noted := f.NotedCheckpoints[s.Name]
		if !noted {
			kept = s.CheckpointSHA256
		}
		checkpoint, _, err := r.readInternal(ctx, reader, run, naming.CheckpointConfigMapName(run.Name, s.Name),
			checkpointWants(run, s.Name, kept), waiting, f)
		if err != nil {
			return err
		}
		tc := planner.ToolCallFacts{Pending: agentspec.PendingOf([]byte(checkpoint)), Invalid: map[string]string{}}
		if tc.Pending == nil {
			continue
		}
		want := shared.RunWants(run, "the tool results of step "+s.Name, toolResultsKey)
		want.SHA256 = s.ToolResultsSHA256
		results, cm, err := r.readInternal(ctx, reader, run, naming.ToolResultsConfigMapName(run.Name, s.Name), want, waiting, f)
		if err != nil {
			return err
		}
		if cm != nil {
			tc.ResultsUID, tc.ResultsVersion = string(cm.UID), cm.ResourceVersion
		}
		var stored agentspec.Results
		if s.ToolResultsSHA256 != "" && json.Unmarshal([]byte(results), &stored) == nil {
			tc.Stored = stored.Attempt
		}
		for _, call := range tc.Pending.Calls {
			if err := r.checkSceneCall(ctx, run, step, call, f, tc.Invalid); err != nil {
				return err
			}
		}
		r.addRefusedToolPods(run, s.Name, f, tc.Pending)
		if f.ToolCalls == nil {
			f.ToolCalls = map[string]planner.ToolCallFacts{}
		}
		f.ToolCalls[s.Name] = tc
	}
	return nil
}

// readInternal reads a ConfigMap of the Run's internal state that may not exist: "" when it
// does not, or when it holds no content with the digest want records (none recorded yet, or
// a status write lost); and the Run's own ConfigMap under that name, nil for none.
// One that is not the Run's is a conflict the planner fails the step for (looked for around
// the cache too when live: the step waits for it). One of the Run's that holds other content
// than recorded is told in an Event and read as absent, so the content is kept again or the
// step starts afresh.
func (r *RunReconciler) readInternal(ctx context.Context, reader client.Reader, run *ergonv1alpha1.Run, name string,
	want shared.Want, live bool, f *planner.Facts) (string, *corev1.ConfigMap, error) {
	cm := &corev1.ConfigMap{}
	err := reader.Get(ctx, client.ObjectKey{Namespace: run.Namespace, Name: name}, cm)
	if apierrors.IsNotFound(err) && live {
		// The cache selects by Ergon's managed-by label: one without it is found only here.
		err = r.APIReader.Get(ctx, client.ObjectKey{Namespace: run.Namespace, Name: name}, cm)
	}
	if apierrors.IsNotFound(err) {
		return "", nil, nil
	}
	if err != nil {
		return "", nil, err
	}
	if _, err := shared.VerifyInternal(cm, shared.RunWants(run, want.What, want.Key)); err != nil {
		f.Conflicts[name] = err.Error()
		return "", nil, nil
	}
	if want.SHA256 == "" {
		return "", cm, nil
	}
	value, err := shared.VerifyInternal(cm, want)
	if err != nil {
		r.Recorder.Eventf(run, nil, corev1.EventTypeWarning, shared.ReasonUntrustedState, "ReadInternal", "%s", err.Error())
		return "", cm, nil
	}
	return value, cm, nil
}

// checkSceneCall checks the arguments of a Scene call whose child Run does not exist yet
// against the params of the Scene as it is now, as admission would check the child Run.
func (r *RunReconciler) checkSceneCall(ctx context.Context, run *ergonv1alpha1.Run, step *compile.Step, call agentspec.ToolRequest,
	f *planner.Facts, invalid map[string]string) error {
	if call.Kind != agentspec.RequestScene {
		return nil
	}
	if _, exists := f.Children[naming.ToolCallName(run.Name, step.Name, call.ID)]; exists {
		return nil
	}
	i := slices.IndexFunc(step.Spec.Agent.Tools, func(t ergonv1alpha1.AgentTool) bool { return t.ToolName() == call.Tool })
	if i < 0 {
		return nil // the planner answers it
	}
	sceneName := string(step.Spec.Agent.Tools[i].Scene)
	scene := &ergonv1alpha1.Scene{}
	err := r.Get(ctx, client.ObjectKey{Namespace: run.Namespace, Name: sceneName}, scene)
	if apierrors.IsNotFound(err) {
		return nil // the child Run waits for its Scene
	}
	if err != nil {
		return err
	}
	params, err := planner.ArgumentParams(call.Arguments)
	if err != nil {
		return nil // the planner answers it
	}
	if errs := compile.CheckParams(&scene.Spec, params); len(errs) > 0 {
		invalid[call.ID] = fmt.Sprintf("the arguments do not fit the params of Scene %s: %v", sceneName, errs.ToAggregate())
	}
	return nil
}

// storeToolResults keeps the results of the plan's steps' tool calls for their next
// attempts, in each step's results ConfigMap, the Run's internal state: a new one, or over the
// one gather found the Run's, guarded by its UID and resourceVersion (so a ConfigMap that
// replaced it under the name, or changed since, is never written).
func (a *runActor) storeToolResults(ctx context.Context, run *ergonv1alpha1.Run, plan *planner.Plan) error {
	for _, req := range plan.ToolResults {
		cm := stepState(run, req.Step, naming.ToolResultsConfigMapName(run.Name, req.Step), toolResultsKey, req.JSON,
			req.UID, req.ResourceVersion)
		if err := a.put(ctx, cm); err != nil {
			return fmt.Errorf("storing the tool results of step %s: %w", req.Step, err)
		}
	}
	return nil
}

// toolCallGate builds the Gate that asks approval of an agent's tool call: its approvers and
// minApprovals are the tool's approval's, and the person behind the Run may not decide it
// unless the tool's approval allows self-approval. Anyone granted the verb approve on gates by
// RBAC decides it too, as for a gate step.
func toolCallGate(run *ergonv1alpha1.Run, req planner.GateRequest) *ergonv1alpha1.Gate {
	spec := ergonv1alpha1.GateSpec{
		RunRef: corev1.LocalObjectReference{Name: run.Name}, Step: req.Step.Name,
		Message: req.Message, Options: []string{gatepolicy.OptionApprove, gatepolicy.OptionReject}, ForbidSelfApproval: true,
	}
	if a := toolApproval(req.Tool); a != nil {
		spec.Approvers, spec.MinApprovals, spec.ForbidSelfApproval = a.Approvers.DeepCopy(), a.MinApprovals, !a.AllowSelfApproval
	}
	return &ergonv1alpha1.Gate{
		ObjectMeta: metav1.ObjectMeta{
			Name: req.Name, Namespace: run.Namespace, Labels: childLabels(run, req.Step.Name),
			Annotations:     map[string]string{annotationToolCall: req.ToolCall},
			OwnerReferences: []metav1.OwnerReference{ownerRef(run)},
		},
		Spec: spec,
	}
}

// toolApproval is a tool's approval settings, or nil for none (requireApproval alone, or no
// tool).
func toolApproval(t *ergonv1alpha1.AgentTool) *ergonv1alpha1.ToolApproval {
	if t == nil {
		return nil
	}
	return t.Approval
}

// askGate builds the input Gate of an agent's question (ask_human): the question is its
// message and the schema the model gave its input; who answers, and for how long the question
// waits, are the tool's ask. Unlike a call's approval, the person behind the Run may answer
// unless ask forbids it.
func askGate(run *ergonv1alpha1.Run, req planner.GateRequest) *ergonv1alpha1.Gate {
	gate := toolCallGate(run, req)
	timeout := planner.AskTimeout(req.Tool)
	gate.Spec.Input, gate.Spec.Timeout = req.Input, &metav1.Duration{Duration: timeout}
	gate.Spec.Approvers, gate.Spec.MinApprovals, gate.Spec.ForbidSelfApproval = nil, nil, false
	if a := req.Tool.Ask; a != nil {
		gate.Spec.Approvers, gate.Spec.MinApprovals, gate.Spec.ForbidSelfApproval = a.Approvers.DeepCopy(), a.MinApprovals, a.ForbidSelfApproval
	}
	return gate
}

// messageGate builds the input Gate that shows a chat step's reply and takes the next
// message: the conversation's participants, the person behind the Run and RBAC's approvers
// may write; it waits the conversation's idleTimeout.
func messageGate(run *ergonv1alpha1.Run, req planner.GateRequest) *ergonv1alpha1.Gate {
	gate := toolCallGate(run, req)
	gate.Spec.Input = req.Input
	gate.Spec.Timeout = &metav1.Duration{Duration: planner.ConversationIdle(req.Chat)}
	gate.Spec.Approvers, gate.Spec.MinApprovals, gate.Spec.ForbidSelfApproval = req.Chat.Participants.DeepCopy(), nil, false
	gate.Annotations[ergonv1alpha1.AnnotationConversation] = shared.InternalTrue
	return gate
}

// gateOf builds a gate step's Gate, a tool call's, an agent's or an MCP server's question's, or
// a chat's.
func gateOf(run *ergonv1alpha1.Run, req planner.GateRequest) *ergonv1alpha1.Gate {
	switch {
	case req.ToolCall != "" && req.Chat != nil:
		return messageGate(run, req)
	case req.ToolCall != "" && req.Tool != nil && (req.Tool.AsksHuman() || req.Elicit):
		return askGate(run, req)
	case req.ToolCall != "":
		return toolCallGate(run, req)
	}
	return gateFor(run, req)
}

// mountToolResults gives an agent pod the results of the tool calls its checkpoint hands
// over, if there are any by the time it starts: an optional ConfigMap volume beside the
// checkpoint's, named by $ERGON_TOOL_RESULTS.
func mountToolResults(pod *corev1.Pod, run *ergonv1alpha1.Run, step string) {
	file := mountOptionalKey(pod, "ergon-tool-results", naming.ToolResultsConfigMapName(run.Name, step),
		toolResultsKey, toolResultsKey, toolResultsDir)
	c := &pod.Spec.Containers[0]
	c.Env = append(c.Env, corev1.EnvVar{Name: stepcontract.EnvToolResults, Value: file})
}

// toolResultsDir is where an agent pod finds the results of its tool calls.
const toolResultsDir = "/ergon/tool-results"
