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

package v1alpha1

import (
	"encoding/json"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The agent side of a Scene: the models its agent steps call and what an agent step is.

// ModelSpec points at an OpenAI-compatible chat completions API.
type ModelSpec struct {
	// baseURL of the API, for example http://llm.example/v1.
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^https?://[^\s]+$`
	// +required
	BaseURL URL `json:"baseURL"`

	// model is the model name the API expects.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +required
	Model string `json:"model"`

	// apiKeySecretRef selects the API key. It reaches the agent's pod as an environment
	// variable from the Secret and nowhere else.
	// +optional
	APIKeySecretRef *corev1.SecretKeySelector `json:"apiKeySecretRef,omitempty"`

	// temperature as a decimal string from "0" to "2", for example "0.2".
	// +kubebuilder:validation:Pattern=`^(0(\.[0-9]{1,3})?|1(\.[0-9]{1,3})?|2(\.0{1,3})?)$`
	// +optional
	Temperature *string `json:"temperature,omitempty"`

	// seed asks the API for reproducible sampling where it supports it.
	// +optional
	Seed *int64 `json:"seed,omitempty"`

	// contextBudget bounds what each request to the model sends. Before each turn the agent
	// runtime keeps the system prompt, the context and the task whole, and trims the oldest
	// tool results, then the oldest whole exchanges, until the conversation fits (see
	// docs/step-contract.md). Unset sends the whole conversation.
	// +optional
	ContextBudget *ContextBudget `json:"contextBudget,omitempty"`

	// fallback names other entries of the Scene's models to switch to, in order, when this one
	// fails: after a 5xx answer, or once a 429 or a connection error has used up its retries.
	// Each fallback model uses its own baseURL, model, key and contextBudget; the switch is a
	// note in the transcript. A model may not name itself.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=63
	// +optional
	Fallback []string `json:"fallback,omitempty"`

	// pricing is what the model costs, for the cost in the Run's usage.
	// +optional
	Pricing *ModelPricing `json:"pricing,omitempty"`
}

// ModelPricing is the price of a million tokens, as decimal strings such as "3.00", in
// whatever currency the Scene's author chooses; a cost in a Run's status is in the same one.
type ModelPricing struct {
	// inputPerMillion is the price of a million prompt tokens.
	// +kubebuilder:validation:Pattern=`^[0-9]{1,6}(\.[0-9]{1,6})?$`
	// +kubebuilder:validation:MaxLength=13
	// +required
	InputPerMillion string `json:"inputPerMillion"`

	// outputPerMillion is the price of a million completion tokens.
	// +kubebuilder:validation:Pattern=`^[0-9]{1,6}(\.[0-9]{1,6})?$`
	// +kubebuilder:validation:MaxLength=13
	// +required
	OutputPerMillion string `json:"outputPerMillion"`
}

// ContextBudget is a budget in characters or in tokens; a token budget counts four
// characters a token, an estimate that errs on the side of sending less.
// +kubebuilder:validation:XValidation:rule="has(self.chars) != has(self.tokens)",message="set exactly one of contextBudget.chars or contextBudget.tokens"
type ContextBudget struct {
	// chars is the budget in characters, at least 1000.
	// +kubebuilder:validation:Minimum=1000
	// +kubebuilder:validation:Maximum=100000000
	// +optional
	Chars *int64 `json:"chars,omitempty"`

	// tokens is the budget in tokens, at least 250; set it somewhat below the model's context
	// window, to leave room for the tools' definitions and the answer.
	// +kubebuilder:validation:Minimum=250
	// +kubebuilder:validation:Maximum=25000000
	// +optional
	Tokens *int64 `json:"tokens,omitempty"`
}

// CharsBudget is the budget in characters.
func (b *ContextBudget) CharsBudget() int64 {
	switch {
	case b == nil:
		return 0
	case b.Chars != nil:
		return *b.Chars
	case b.Tokens != nil:
		return *b.Tokens * 4
	}
	return 0
}

// AgentTool is a tool an agent step may call. In YAML it is either the name of a built-in
// tool (`http_fetch`), or an object that names exactly one kind of tool:
//
//	{name: shell, requireApproval: true}            a built-in tool, with options
//	{name: shell, approval: {minApprovals: 2}}      ... whose calls two other people approve
//	{scene: summarize, description: "..."}          another Scene, called as a tool
//	{name: lint, container: {image: ..., ...}}      a one-shot container, called as a tool
//	{mcp: {url: ..., allow: [search]}}              the tools of an MCP server
//
// Admission checks every entry and names the field of the one it refuses.
// +kubebuilder:validation:Schemaless
// +kubebuilder:validation:Type=""
// +kubebuilder:pruning:PreserveUnknownFields
type AgentTool struct {
	// name is the built-in tool's name, or the name the model calls a Scene or container tool
	// by (a Scene tool defaults to the Scene's name).
	Name string `json:"name,omitempty"`

	// description tells the model what the tool does (Scene, container and MCP tools).
	Description string `json:"description,omitempty"`

	// requireApproval makes every call of the tool (of each tool of an MCP server) wait for a
	// person to approve it through a Gate; a rejected call returns the rejection to the model
	// as the tool's result. The person behind the Run cannot approve their own agent's calls;
	// approval says who can.
	RequireApproval bool `json:"requireApproval,omitempty"`

	// approval says who approves the tool's calls; setting it makes every call wait for
	// approval, as requireApproval does.
	Approval *ToolApproval `json:"approval,omitempty"`

	// scene names a Scene of the same namespace to call as a tool: its params are the tool's
	// arguments and its output is the tool's result.
	Scene SceneName `json:"scene,omitempty"`

	// container runs a one-shot container as a tool.
	Container *ContainerTool `json:"container,omitempty"`

	// mcp offers the tools of a Model Context Protocol server.
	MCP *MCPTool `json:"mcp,omitempty"`

	// ask says who answers the questions of the built-in tool ask_human, or of an MCP server
	// (MCP elicitation, which only a server with ask may use), and how long a question
	// waits; only those two take it.
	Ask *AskHuman `json:"ask,omitempty"`
}

// AskHuman says who answers an agent's questions (the tool ask_human) and how long each
// waits. Each question opens an input Gate: unlike a tool call's approval, the person behind
// the Run may answer it unless forbidSelfApproval says otherwise.
type AskHuman struct {
	// approvers may answer, besides the person behind the Run and anyone granted the verb
	// approve on gates by RBAC.
	// +optional
	Approvers *Approvers `json:"approvers,omitempty"`

	// minApprovals is how many different people must give the same answer, from 1 (the
	// default) to 10.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10
	// +optional
	MinApprovals *int32 `json:"minApprovals,omitempty"`

	// forbidSelfApproval keeps the person behind the Run from answering their own agent.
	// +optional
	ForbidSelfApproval bool `json:"forbidSelfApproval,omitempty"`

	// timeout is how long a question waits for its answer (24h by default, 10m for an MCP
	// server's, whose call waits in the step's pod, at most 1h); then the agent is told
	// nobody answered and goes on.
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`
}

// AgentConversation says who may talk with an agent step and for how long. Each reply of the
// agent opens an input Gate whose answer is the next message, stamped with who wrote it.
type AgentConversation struct {
	// participants may write, besides the person behind the Run and anyone granted the verb
	// approve on gates by RBAC.
	// +optional
	Participants *Approvers `json:"participants,omitempty"`

	// maxMessages bounds the people's messages (default 20); then the step ends with the
	// agent's last reply.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=200
	// +optional
	MaxMessages *int32 `json:"maxMessages,omitempty"`

	// idleTimeout is how long a reply waits for the next message (24h by default); then the
	// conversation ends with it.
	// +optional
	IdleTimeout *metav1.Duration `json:"idleTimeout,omitempty"`
}

// AnnotationConversation marks the Gate that takes the next message of a chat step.
const AnnotationConversation = "agent.ergon.dev/conversation"

// Defaults of a conversation.
const (
	DefaultConversationMessages = 20
	DefaultConversationIdle     = 24 * time.Hour
)

// DefaultAskTimeout is how long an agent's question waits when its tool sets no timeout.
const DefaultAskTimeout = 24 * time.Hour

// DefaultMCPAskTimeout is how long an MCP server's question waits when its ask sets no
// timeout: its call waits in the step's pod meanwhile.
const DefaultMCPAskTimeout = 10 * time.Minute

// ToolApproval says who approves the calls of an agent's tool, as a gate step says who decides
// its Gate, except that the person behind the Run may not approve unless allowSelfApproval
// says so: an agent's calls are approved by someone other than the person it acts for.
type ToolApproval struct {
	// approvers may approve, besides anyone granted the verb approve on gates by RBAC.
	// +optional
	Approvers *Approvers `json:"approvers,omitempty"`

	// minApprovals is how many different people must approve each call, from 1 (the
	// default) to 10; any rejection decides.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10
	// +optional
	MinApprovals *int32 `json:"minApprovals,omitempty"`

	// allowSelfApproval lets the person behind the Run approve their own agent's calls.
	// +optional
	AllowSelfApproval bool `json:"allowSelfApproval,omitempty"`
}

// ContainerTool is a one-shot container an agent calls as a tool.
type ContainerTool struct {
	// image runs the tool.
	Image string `json:"image"`

	// command and args are the program, templates over the call's arguments
	// (`{{ .args.NAME }}`).
	Command []string `json:"command,omitempty"`
	Args    []string `json:"args,omitempty"`

	// parameters is the JSON Schema of the tool's arguments (an object schema).
	Parameters *apiextensionsv1.JSON `json:"parameters,omitempty"`
}

// MCPTool is a Model Context Protocol server whose tools an agent may call.
type MCPTool struct {
	// url is the server's streamable HTTP endpoint.
	URL URL `json:"url"`

	// allow lists the server's tools the agent may call; the others are not offered.
	Allow []string `json:"allow"`
}

// Built-in tools agent steps may use. The filesystem and shell tools need a Workspace.
const (
	ToolReadFile  = "read_file"
	ToolWriteFile = "write_file"
	ToolListFiles = "list_files"
	ToolShell     = "shell"
	ToolHTTPFetch = "http_fetch"
	ToolRemember  = "remember" // proposes a memory write; needs spec.memory
	// ToolAskHuman asks people a question and returns their answer; the controller opens an
	// input Gate for each call (see ask).
	ToolAskHuman = "ask_human"
)

// BuiltinTools are the names of the built-in tools.
var BuiltinTools = []string{ToolReadFile, ToolWriteFile, ToolListFiles, ToolShell, ToolHTTPFetch, ToolRemember, ToolAskHuman}

// IsBuiltin says whether the tool is a built-in one: a name and no other kind.
func (t AgentTool) IsBuiltin() bool {
	return t.Scene == "" && t.Container == nil && t.MCP == nil
}

// AsksHuman says whether the tool is ask_human, whose calls the controller answers with a
// person's input.
func (t AgentTool) AsksHuman() bool {
	return t.IsBuiltin() && t.Name == ToolAskHuman
}

// NeedsApproval says whether every call of the tool waits for people to approve it.
func (t AgentTool) NeedsApproval() bool {
	return t.RequireApproval || t.Approval != nil
}

// ToolName is the name the model calls the tool by: its name, or a Scene tool's Scene.
func (t AgentTool) ToolName() string {
	if t.Name == "" && t.Scene != "" {
		return string(t.Scene)
	}
	return t.Name
}

// agentToolFields is AgentTool without its JSON methods.
type agentToolFields AgentTool

// UnmarshalJSON reads either form: a built-in tool's name, or an object.
func (t *AgentTool) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		*t = AgentTool{}
		return json.Unmarshal(b, &t.Name)
	}
	var f agentToolFields
	if err := json.Unmarshal(b, &f); err != nil {
		return err
	}
	*t = AgentTool(f)
	return nil
}

// MarshalJSON writes a built-in tool without options as its name, so what a user wrote in
// the short form reads back the same.
func (t AgentTool) MarshalJSON() ([]byte, error) {
	if t.IsBuiltin() && t.Description == "" && !t.NeedsApproval() && t.Ask == nil {
		return json.Marshal(t.Name)
	}
	return json.Marshal(agentToolFields(t))
}

// AgentStep runs Ergon's agent loop in the step's pod.
type AgentStep struct {
	// model names an entry of the Scene's models.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:default=default
	// +optional
	Model string `json:"model,omitempty"`

	// system is the system prompt, a template.
	// +kubebuilder:validation:MaxLength=65536
	// +optional
	System string `json:"system,omitempty"`

	// prompt is the task, a template. Context it takes from the Scene is wrapped in
	// delimiters and the model is told to treat it as data.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=262144
	// +required
	Prompt string `json:"prompt"`

	// tools the agent may call: built-in tools by name, or objects (see AgentTool).
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	// +optional
	Tools []AgentTool `json:"tools,omitempty"`

	// output is the contract the agent's answer must meet.
	// +optional
	Output *OutputContract `json:"output,omitempty"`

	// maxTurns bounds the model calls of one attempt.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=500
	// +kubebuilder:default=20
	// +optional
	MaxTurns *int32 `json:"maxTurns,omitempty"`

	// maxTokens bounds the tokens of one attempt, as the API reports them.
	// +kubebuilder:validation:Minimum=1
	// +optional
	MaxTokens *int64 `json:"maxTokens,omitempty"`

	// conversation makes the step a chat: when the model ends its turn, the step waits for a
	// person's next message instead of finishing, until the person ends it, maxMessages is
	// reached or nobody writes within idleTimeout. The output is the agent's last reply.
	// +optional
	Conversation *AgentConversation `json:"conversation,omitempty"`

	// allowHosts are hosts that http_fetch may reach although they resolve to private
	// addresses, such as in-cluster Services: a host name (llm.team.svc) or host:port, in
	// addition to the Scene's spec.allowHosts. Every other destination must be a public
	// address; loopback, private, link-local, CGNAT, multicast and cloud metadata addresses
	// are refused.
	// +listType=set
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=261
	// +kubebuilder:validation:items:Pattern=`^[A-Za-z0-9]([-A-Za-z0-9.]*[A-Za-z0-9])?(:[0-9]{1,5})?$`
	// +optional
	AllowHosts []Host `json:"allowHosts,omitempty"`

	// resources of the agent's container, as in a Pod. Unset, the Scene's stepResources
	// apply, then the agent runtime's own (50m CPU and 64Mi memory requested, 256Mi memory
	// limit). An agent step bound to a Workspace runs with the Workspace's resources.
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
}

// OutputContract is the type an agent's answer must have. Invalid answers are sent back to
// the model for repair, at most maxRepairs times, before the step fails.
// +kubebuilder:validation:XValidation:rule="!has(self.outputs) || !has(self.schema)",fieldPath=".schema",reason="FieldValueForbidden",message="with outputs, give each output its own schema; remove output.schema"
type OutputContract struct {
	// format of the answer: text, markdown, json, yaml, or another registered format.
	// +kubebuilder:validation:Pattern=`^[a-z][a-z0-9-]{0,31}$`
	// +kubebuilder:default=text
	// +optional
	Format string `json:"format,omitempty"`

	// schema is a JSON Schema the parsed answer must satisfy (json and yaml formats).
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +optional
	Schema *apiextensionsv1.JSON `json:"schema,omitempty"`

	// maxRepairs is how many times an invalid answer is sent back for repair.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10
	// +kubebuilder:default=2
	// +optional
	MaxRepairs *int32 `json:"maxRepairs,omitempty"`

	// outputs declares several named outputs instead of one. The model answers with one
	// labelled section per output (a line "## [name]" starts it); each is checked against its
	// own format and schema, and the step's output is a JSON object keyed by name, so later
	// steps read .steps.STEP.outputs.NAME. format and schema above are then not used.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	// +optional
	Outputs []NamedOutput `json:"outputs,omitempty"`
}

// NamedOutput is one of several outputs of an agent step.
type NamedOutput struct {
	// name of the output, also the label of its section.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Za-z_][A-Za-z0-9_]*$`
	// +required
	Name string `json:"name"`

	// format of this output: text, markdown, json, yaml, or another registered format.
	// +kubebuilder:validation:Pattern=`^[a-z][a-z0-9-]{0,31}$`
	// +kubebuilder:default=text
	// +optional
	Format string `json:"format,omitempty"`

	// schema is a JSON Schema this output must satisfy (json and yaml formats).
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +optional
	Schema *apiextensionsv1.JSON `json:"schema,omitempty"`
}

// HasBuiltin says whether the step may call the built-in tool of that name.
func (a *AgentStep) HasBuiltin(name string) bool {
	for _, t := range a.Tools {
		if t.IsBuiltin() && t.Name == name {
			return true
		}
	}
	return false
}
