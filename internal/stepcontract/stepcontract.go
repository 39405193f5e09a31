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

// Package stepcontract names what a step's container sees and leaves behind: the environment
// variables and directories the Run controller sets up, the entrypoint reads, and the agent
// runtime writes (docs/step-contract.md). The manager, the entrypoint and the agent all use
// it, so each name is written once.
package stepcontract

// Environment variables of a step's container.
const (
	// EnvPrefix begins the name of every variable of the contract: a step's own env may not
	// use it (admission refuses it), so no step can redirect its output or shadow a param.
	EnvPrefix = "ERGON_"
	// EnvOutput is the file the step writes its output to.
	EnvOutput = "ERGON_OUTPUT"
	// EnvRun, EnvStep and EnvAttempt name the Run, the step and the attempt (1, 2, ...).
	EnvRun     = "ERGON_RUN"
	EnvStep    = "ERGON_STEP"
	EnvAttempt = "ERGON_ATTEMPT"
	// EnvInputs is the directory of the outputs of the step's dependencies, a file per step.
	EnvInputs = "ERGON_INPUTS"
	// EnvParamPrefix prefixes the variable of each param the step's command or script uses.
	EnvParamPrefix = "ERGON_PARAM_"
	// EnvTerminationLog overrides where the entrypoint writes its report (tests only).
	EnvTerminationLog = "ERGON_TERMINATION_LOG"
	// EnvTraceparent is the attempt's span as a W3C traceparent, set when the manager
	// exports traces: the name OpenTelemetry's SDKs read a parent from, so that what the
	// step's program traces joins its Run's trace.
	EnvTraceparent = "TRACEPARENT"
)

// Environment variables of a step that makes or reads artifacts (docs/artifacts.md).
const (
	// EnvArtifacts is the directory a step writes its artifacts to, a file per name (unless
	// the artifact names another path); EnvInputArtifacts the directory of the artifacts it
	// reads, STEP/NAME.
	EnvArtifacts      = "ERGON_ARTIFACTS"
	EnvInputArtifacts = "ERGON_INPUT_ARTIFACTS"
	// EnvArtifactSpec is what the entrypoint writes and reads, and where (artifacts.PodSpec,
	// JSON); EnvArtifactEndpoint the manager's artifact endpoint (https://...), empty when
	// the manager keeps no artifacts; EnvArtifactCA the PEM of the CA that endpoint's
	// certificate is signed by.
	EnvArtifactSpec     = "ERGON_ARTIFACT_SPEC"
	EnvArtifactEndpoint = "ERGON_ARTIFACT_ENDPOINT"
	EnvArtifactCA       = "ERGON_ARTIFACT_CA"
	// EnvArtifactToken names the file of the pod's token for the endpoint (ArtifactTokenFile).
	EnvArtifactToken = "ERGON_ARTIFACT_TOKEN"
	// EnvArtifactServerName is the name the endpoint's certificate has, when
	// EnvArtifactEndpoint gives its address: a pod that may not look names up (a Workspace's
	// egress) reaches it by address and still checks whom it talks to.
	EnvArtifactServerName = "ERGON_ARTIFACT_SERVER_NAME"
)

// Environment variables of an agent step's container, besides those of every step.
const (
	// EnvAgentSpec names the file of the rendered agent step (agentspec.Spec, JSON).
	EnvAgentSpec = "ERGON_AGENT_SPEC"
	// EnvAnswerKey holds the public key (Ed25519, base64) the answers to an attempt's live
	// questions are signed with, and EnvPodUID the pod's UID, which each signature covers: a
	// pod trusts only answers the controller signed for it (agentspec.AnswerPayload).
	EnvAnswerKey = "ERGON_ANSWER_KEY"
	EnvPodUID    = "ERGON_POD_UID"
	// EnvAgentAPIKey holds the model API's key, from the Secret the model names.
	EnvAgentAPIKey = "ERGON_AGENT_API_KEY"
	// EnvTranscript and EnvFailure name the files the runtime leaves for the entrypoint: the
	// transcript, and why it failed (JSON {"reason","message"}).
	EnvTranscript = "ERGON_TRANSCRIPT"
	EnvFailure    = "ERGON_FAILURE"
	// EnvCheckpoint names the file of the last checkpoint of an earlier attempt of the step,
	// which the controller mounts from the step's checkpoint ConfigMap; a missing or empty
	// file means the attempt starts from turn 0.
	EnvCheckpoint = "ERGON_CHECKPOINT"
	// EnvToolResults names the file of the controller's results of the tool calls the
	// checkpoint hands over (agentspec.Results, JSON), from the same ConfigMap; missing when
	// there are none.
	EnvToolResults = "ERGON_TOOL_RESULTS"
	// EnvCheckpointSHA256, EnvToolResultsSHA256 and EnvMemorySHA256 pin the SHA-256 (hex) of
	// the checkpoint, the tool results and the memory the controller verified for the
	// attempt. The kubelet mounts those ConfigMaps by name, so the runtime reads such a file
	// only when it has the pinned digest; empty or unset, it reads none.
	EnvCheckpointSHA256  = "ERGON_CHECKPOINT_SHA256"
	EnvToolResultsSHA256 = "ERGON_TOOL_RESULTS_SHA256"
	EnvMemorySHA256      = "ERGON_MEMORY_SHA256"
)

// Directories and files of a step pod.
const (
	// BinDir holds Ergon's entrypoint (and the agent runtime), copied in by the init container.
	BinDir = "/ergon/bin"
	// OutputDir holds OutputFile, the value of EnvOutput.
	OutputDir  = "/ergon/output"
	OutputFile = OutputDir + "/value"
	// InputsDir is the value of EnvInputs.
	InputsDir = "/ergon/inputs"
	// ArtifactsDir and InputArtifactsDir are the values of EnvArtifacts and EnvInputArtifacts.
	ArtifactsDir      = "/ergon/artifacts"
	InputArtifactsDir = "/ergon/input-artifacts"
	// ArtifactTokenFile is the pod's token for the artifact endpoint (artifacts.Audience),
	// which the kubelet renews.
	ArtifactTokenDir  = "/ergon/artifact-token"
	ArtifactTokenFile = ArtifactTokenDir + "/token"
	// DefaultWorkspace is where a Workspace's volume is mounted in a step pod.
	DefaultWorkspace = "/workspace"
	// DefaultTerminationLog is where the entrypoint writes its report: the container's
	// termination message.
	DefaultTerminationLog = "/dev/termination-log"
)
