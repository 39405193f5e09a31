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

package planner

import (
	"fmt"
	"time"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/agentspec"
	"github.com/ergon-dev/ergon/internal/compile"
	"github.com/ergon-dev/ergon/internal/template"
)

// Container tools (docs/step-contract.md, "Tool calls the controller fulfils"): a call of a
// container tool is handed over like a Scene tool's, and the controller runs it as a one-shot
// pod named like the call's Gate or child Run (naming.ToolCallName). The pod runs the tool's
// image with its command and args rendered over the call's arguments, under Ergon's
// entrypoint, hardened as a container step's pod; what it writes to $ERGON_OUTPUT is the
// result. A pod that fails, is deleted or cannot start gives an error result, never a step
// that waits for ever.

// DefaultToolPodDeadline bounds a tool pod's run (its activeDeadlineSeconds) when the agent
// step sets no timeout.
const DefaultToolPodDeadline = 10 * time.Minute

// ToolPodState is what the controller found of a container tool call's pod.
type ToolPodState struct {
	Pod PodState
	// Output is what the pod wrote to $ERGON_OUTPUT, read once it ended; OutputErr says why
	// it could not be read.
	Output, OutputErr string
}

// ToolPodRequest asks for the one-shot pod of a container tool call.
type ToolPodRequest struct {
	Name string
	// StandsFor is the call's pod name when someone else's object held it (names.go).
	StandsFor string
	// Step is the agent step; Attempt the attempt that handed the call over.
	Step    *compile.Step
	Attempt int32
	// CallID is the model's id of the call; Tool the tool's name.
	CallID, Tool string
	// Image is the tool's; Command and Args its program, rendered over the call's arguments.
	Image         string
	Command, Args []string
	// Deadline is the pod's activeDeadlineSeconds (ToolPodDeadline).
	Deadline time.Duration
}

// ToolPodDeadline is how long a container tool's pod may run: the agent step's timeout, or
// DefaultToolPodDeadline.
func ToolPodDeadline(step *compile.Step) time.Duration {
	if t := step.Spec.Timeout; t != nil && t.Duration > 0 {
		return t.Duration
	}
	return DefaultToolPodDeadline
}

// RenderToolArgv renders a container tool's command and args over a call's arguments, a
// JSON object read as ArgumentParams reads a Scene call's: each template sees the arguments
// as .args (strings as they are, other JSON values as JSON). A template that reads an
// argument the call does not give is an error.
func RenderToolArgv(c *ergonv1alpha1.ContainerTool, arguments string) (command, args []string, err error) {
	params, err := ArgumentParams(arguments)
	if err != nil {
		return nil, nil, err
	}
	values := make(map[string]any, len(params))
	for k, v := range params {
		values[k] = v
	}
	data := map[string]any{"args": values}
	render := func(field string, texts []string) ([]string, error) {
		out := make([]string, 0, len(texts))
		for i, text := range texts {
			t, err := template.Compile(fmt.Sprintf("container.%s[%d]", field, i), text)
			if err != nil {
				return nil, err
			}
			s, err := t.ExecuteMap(data)
			if err != nil {
				return nil, err
			}
			out = append(out, s)
		}
		return out, nil
	}
	if command, err = render("command", c.Command); err != nil {
		return nil, nil, err
	}
	if args, err = render("args", c.Args); err != nil {
		return nil, nil, err
	}
	return command, args, nil
}

// toolPodCall fulfils a container tool's call: it asks for the call's pod, waits while it
// runs, and makes its result once it ended.
// res is the call's result so far: the approval it needed, if any.
func (p *planner) toolPodCall(step *compile.Step, call agentspec.ToolRequest, tool *ergonv1alpha1.AgentTool, name string,
	attempt int32, res agentspec.ToolResult) (agentspec.ToolResult, string) {
	failed := func(format string, args ...any) (agentspec.ToolResult, string) {
		res.Content, res.Error = "error: "+fmt.Sprintf(format, args...), true
		return res, ""
	}
	if tool.Container == nil {
		return failed("the tool %s is not a container tool", call.Tool)
	}
	waiting := fmt.Sprintf("%s (tool pod %s)", call.Tool, name)
	state, ok := p.f.ToolPods[name]
	if !ok {
		if replaced := p.workspaceReplaced(); replaced != "" {
			// The tool pod would mount the Workspace; no pod is made.
			return failed("%s", replaced)
		}
		command, args, err := RenderToolArgv(tool.Container, call.Arguments)
		if err != nil {
			return failed("%v", err)
		}
		p.plan.ToolPods = append(p.plan.ToolPods, ToolPodRequest{Name: name, Step: step, Attempt: attempt, CallID: call.ID,
			Tool: call.Tool, Image: tool.Container.Image,
			Command: command, Args: args, Deadline: ToolPodDeadline(step)})
		return res, waiting
	}
	pod := state.Pod
	res.ToolPod = name
	switch pod.Phase {
	case PodSucceeded:
		if state.OutputErr != "" {
			return failed("the tool pod %s ended, but its output cannot be read: %s", name, state.OutputErr)
		}
		res.Content = capResult(state.Output)
		return res, ""
	case PodFailed:
		return failed("%s", toolPodFailure(name, pod, state.Output))
	case PodGone:
		return failed("the tool pod %s was deleted before it ended", name)
	case PodPending:
		if !PendingProblem(pod.Reason) || pod.CreatedAt.IsZero() {
			return res, waiting
		}
		timeout := p.pendingTimeout(step)
		if timeout <= 0 {
			timeout = DefaultToolPodDeadline
		}
		if deadline := pod.CreatedAt.Add(timeout); p.f.Now.Before(deadline) {
			p.wakeAt(deadline)
			return res, fmt.Sprintf("%s, which cannot start yet: %s: %s", waiting, pod.Reason, pod.Message)
		}
		p.plan.DeletePods = append(p.plan.DeletePods, pod.Name)
		return failed("the tool pod %s did not start within %s: %s: %s", name, timeout, pod.Reason, pod.Message)
	}
	return res, waiting
}

// toolPodFailure says how a tool pod failed: its reason and exit code, then what it wrote to
// $ERGON_OUTPUT, if anything.
func toolPodFailure(name string, pod PodState, output string) string {
	msg := "the tool pod " + name + " failed"
	if pod.Reason != "" {
		msg += ": " + pod.Reason
	}
	if pod.Message != "" {
		msg += ": " + pod.Message
	}
	if pod.ExitCode != nil {
		msg += fmt.Sprintf(" (exit code %d)", *pod.ExitCode)
	}
	if output != "" {
		msg += "\n" + output
	}
	return capResult(msg)
}

// toolCallPods are the pods of a step's container tool calls that have not ended: the Run
// deletes them when it stops.
func (p *planner) toolCallPods(step string) []string {
	var pods []string
	for _, name := range p.pendingCalls(step, func(name string) bool {
		s, ok := p.f.ToolPods[name]
		return ok && (s.Pod.Phase == PodPending || s.Pod.Phase == PodRunning)
	}) {
		pods = append(pods, p.f.ToolPods[name].Pod.Name) // an alternate, when the call's name was held
	}
	return pods
}
