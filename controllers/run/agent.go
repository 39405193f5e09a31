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
	"encoding/json"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/agentspec"
	"github.com/ergon-dev/ergon/internal/compile"
	"github.com/ergon-dev/ergon/internal/planner"
	"github.com/ergon-dev/ergon/internal/stepcontract"
	"github.com/ergon-dev/ergon/internal/workspace"
)

// The pieces of an agent step pod.
const (
	// AgentInImage is where Ergon's image keeps the agent runtime.
	AgentInImage = "/ergon-agent"
	agentDir     = "/ergon/agent"
	agentSpecKey = "spec.json"
	// agentVolume projects the spec (and the answers) into an agent pod.
	agentVolume = "ergon-agent"
	// agentAnswersKey is the file that holds the answers to an attempt's live questions,
	// projected from the pod's annotationAnswers (elicit.go).
	agentAnswersKey = "answers.json"
	// annotationAgentSpec holds the rendered agent step, for the downward API to project.
	annotationAgentSpec = "agent.ergon.dev/spec"
	defaultModel        = "default"
	defaultMaxTurns     = 20
	defaultMaxRepairs   = 2
)

// allowHosts is the Scene's allow-list with the step's added, each host once.
func allowHosts(scene, step []ergonv1alpha1.Host) []string {
	var hosts []string
	for _, h := range slices.Concat(scene, step) {
		hosts = append(hosts, string(h))
	}
	slices.Sort(hosts)
	return slices.Compact(hosts)
}

// agentSpec renders an agent step into what the runtime reads. It holds no secret: the API
// key reaches the pod as an environment variable from its Secret. Secret params do not reach
// agent pods at all: neither the runtime nor its tools use them.
func agentSpec(scene *compile.Scene, req planner.PodRequest) *agentspec.Spec {
	a := req.Step.Spec.Agent
	name := a.Model
	if name == "" {
		name = defaultModel
	}
	m := scene.Spec.Models[name] // admission checked that it exists
	s := &agentspec.Spec{
		Model:  modelConfig(name, m),
		System: req.Rendered.AgentSystem, Prompt: req.Rendered.AgentPrompt,
		MaxTurns: defaultMaxTurns,
		HTTP:     agentspec.HTTPConfig{AllowHosts: allowHosts(scene.Spec.AllowHosts, a.AllowHosts)},
	}
	if m.APIKeySecretRef != nil {
		s.APIKeyEnv = stepcontract.EnvAgentAPIKey
	}
	s.Fallbacks = fallbackConfigs(scene.Spec.Models, m.Fallback)
	for _, t := range a.Tools {
		if t.IsBuiltin() && !t.AsksHuman() {
			s.Tools = append(s.Tools, t.Name)
		}
	}
	s.MCP = mcpServers(a.Tools)
	if planner.AsksPeople(req.Step) {
		s.Answers = agentDir + "/" + agentAnswersKey
	}
	s.Approve, s.CallTools = channelTools(a)
	if c := a.Conversation; c != nil {
		s.Conversation = &agentspec.Conversation{MaxMessages: ergonv1alpha1.DefaultConversationMessages}
		if c.MaxMessages != nil {
			s.Conversation.MaxMessages = int(*c.MaxMessages)
		}
	}
	if a.MaxTurns != nil {
		s.MaxTurns = int(*a.MaxTurns)
	}
	if a.MaxTokens != nil {
		s.MaxTokens = *a.MaxTokens
	}
	s.Output.MaxRepairs = defaultMaxRepairs
	if o := a.Output; o != nil {
		s.Output.Format = o.Format
		if o.Schema != nil {
			s.Output.Schema = json.RawMessage(o.Schema.Raw)
		}
		if o.MaxRepairs != nil {
			s.Output.MaxRepairs = int(*o.MaxRepairs)
		}
		for _, n := range o.Outputs {
			out := agentspec.NamedOutput{Name: n.Name, Format: n.Format}
			if n.Schema != nil {
				out.Schema = json.RawMessage(n.Schema.Raw)
			}
			s.Output.Outputs = append(s.Output.Outputs, out)
		}
	}
	// The runtime stops a little before the pod's deadline, so that it can say which budget
	// ran out and hand its transcript back.
	if t := req.Step.Spec.Timeout; t != nil {
		s.Timeout.Duration = t.Duration - min(10*time.Second, t.Duration/10)
	}
	if scene.Spec.Workspace != nil {
		s.Workspace = stepcontract.DefaultWorkspace
	}
	if len(req.Inputs) > 0 {
		s.ContextDir = stepcontract.InputsDir
	}
	for _, in := range req.Step.Spec.InputArtifacts {
		s.Attachments = append(s.Attachments, agentspec.Attachment{Step: in.Step, Name: in.Name, Path: inputArtifactPath(in)})
	}
	return s
}

// agentPod builds the pod of one attempt of an agent step: Ergon's own image runs the agent
// runtime under the step entrypoint, so the answer travels back like any step's output. The
// image holds both binaries; no init container is needed (stepPod moves a step bound to a
// Workspace into the Workspace's image). The runtime's spec is whole before it is written
// into the pod's annotation, once: the schemas of its Scene tools, and the variables its
// shell tool sees in a Workspace.
func agentPod(run *ergonv1alpha1.Run, scene *compile.Scene, req planner.PodRequest, parts podParts) *corev1.Pod {
	spec := agentSpec(scene, req)
	for i, t := range spec.CallTools {
		if t.Kind == agentspec.RequestScene {
			spec.CallTools[i].Parameters = parts.sceneSchema(t.Scene)
		}
	}
	if parts.workspace != nil {
		spec.ToolEnv = workspace.ToolEnv(parts.workspace)
	}
	pod := basePod(run, req)
	mountMemory(pod, spec, run, scene)
	specJSON, _ := json.Marshal(spec) // plain data: cannot fail
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{} // addInputs may have set some
	}
	pod.Annotations[annotationAgentSpec] = string(specJSON)
	main := &pod.Spec.Containers[0]
	main.Env = append(main.Env,
		corev1.EnvVar{Name: stepcontract.EnvTranscript, Value: stepcontract.OutputDir + "/transcript"},
		corev1.EnvVar{Name: stepcontract.EnvFailure, Value: stepcontract.OutputDir + "/failure"},
		corev1.EnvVar{Name: stepcontract.EnvAgentSpec, Value: agentDir + "/" + agentSpecKey},
	)
	model := scene.Spec.Models[req.Step.Spec.Agent.Model]
	if req.Step.Spec.Agent.Model == "" {
		model = scene.Spec.Models[defaultModel]
	}
	if ref := model.APIKeySecretRef; ref != nil {
		main.Env = append(main.Env, corev1.EnvVar{Name: stepcontract.EnvAgentAPIKey,
			ValueFrom: &corev1.EnvVarSource{SecretKeyRef: ref.DeepCopy()}})
	}
	main.Env = append(main.Env, fallbackKeysEnv(scene.Spec.Models, model.Fallback)...)
	main.Image, main.ImagePullPolicy = parts.bins.Image, corev1.PullIfNotPresent
	main.Command, main.Args = []string{EntrypointInImage}, []string{entrypointRun, "--", AgentInImage}
	main.Resources = *agentResources.DeepCopy()
	if own := req.Step.Spec.Agent.Resources; own != nil {
		main.Resources = *own.DeepCopy()
	} else if sr := sceneStepResources(scene); sr != nil {
		main.Resources = *sr.DeepCopy()
	}
	main.VolumeMounts = append(main.VolumeMounts, corev1.VolumeMount{Name: agentVolume, MountPath: agentDir, ReadOnly: true})
	items := []corev1.DownwardAPIVolumeFile{{
		Path: agentSpecKey, FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['" + annotationAgentSpec + "']"},
	}}
	if spec.Answers != "" {
		// Empty until the controller writes the first answer; the kubelet updates the file
		// when the pod's annotation changes.
		items = append(items, corev1.DownwardAPIVolumeFile{Path: agentAnswersKey,
			FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['" + annotationAnswers + "']"}})
	}
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: agentVolume, VolumeSource: corev1.VolumeSource{
		DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: items},
	}})
	mountCheckpoint(pod, run, req.Step.Name)
	if usesChannel(req.Step) {
		mountToolResults(pod, run, req.Step.Name)
	}
	return pod
}
