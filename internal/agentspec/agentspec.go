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

// Package agentspec is the contract between the Run controller and the agent runtime: the
// rendered agent step, handed to the step pod as a JSON file (its environment variables are in
// internal/stepcontract). It is a package of its own so
// that the manager does not link the runtime.
package agentspec

import (
	"encoding/json"
	"time"

	"github.com/ergon-dev/ergon/internal/cost"
)

// Spec is the rendered agent step, as the controller hands it to the pod (a JSON file). It
// never holds a secret: the API key and secret params come as environment variables.
type Spec struct {
	Model  ModelConfig `json:"model"`
	System string      `json:"system,omitempty"`
	Prompt string      `json:"prompt"`
	// Tools the model may call, by name.
	Tools []string `json:"tools,omitempty"`
	// Output is the contract the answer must meet.
	Output Contract `json:"output"`
	// MaxTurns bounds the model calls; MaxTokens the tokens the API reports (0: no bound).
	MaxTurns  int   `json:"maxTurns"`
	MaxTokens int64 `json:"maxTokens,omitempty"`
	// Timeout bounds the whole loop (0: no bound besides the pod's deadline).
	Timeout Duration `json:"timeout,omitempty"`
	// HTTP configures the http_fetch tool.
	HTTP HTTPConfig `json:"http,omitzero"`
	// Workspace is the directory the filesystem and shell tools are confined to; empty when
	// the step is bound to no Workspace.
	Workspace string `json:"workspace,omitempty"`
	// ContextDir holds the outputs of the step's dependencies, one file per step: the
	// context the model is told to treat as data.
	ContextDir string `json:"contextDir,omitempty"`
	// Attachments are the artifacts of earlier steps the step reads (inputArtifacts), which
	// the entrypoint has downloaded and checked before the runtime starts: an image is shown
	// to the model, text joins the context (docs/artifacts.md).
	Attachments []Attachment `json:"attachments,omitempty"`
	// SecretEnv names the environment variables whose values are secrets: they are
	// redacted from everything the runtime writes.
	SecretEnv []string `json:"secretEnv,omitempty"`
	// ToolEnv names the environment variables the shell tool sees besides its plain
	// environment: the Workspace's env. Those from Secrets are also in SecretEnv.
	ToolEnv []string `json:"toolEnv,omitempty"`
	// APIKeyEnv names the environment variable that holds the API key, if any.
	APIKeyEnv string `json:"apiKeyEnv,omitempty"`
	// Fallbacks are the models to switch to, in order, when the current one is unavailable
	// (a 5xx, or a 429 or connection error past its retries). Each names the environment
	// variable of its own key in its APIKeyEnv.
	Fallbacks []ModelConfig `json:"fallbacks,omitempty"`
	// MCP are the Model Context Protocol servers whose tools the model may call.
	MCP []MCPServer `json:"mcp,omitempty"`
	// Memory, when set, is the Scene's memory: read into the context, written through the
	// remember tool.
	Memory *MemoryConfig `json:"memory,omitempty"`
	// CallTools are the tools the controller carries out (see toolcalls.go); Approve names
	// the built-in tools whose calls wait for a person's approval.
	CallTools []CallTool `json:"callTools,omitempty"`
	Approve   []string   `json:"approve,omitempty"`
	// Conversation, when set, makes the step a chat: each final reply is handed to the
	// controller as a RequestMessage, whose result is a person's next message.
	Conversation *Conversation `json:"conversation,omitempty"`
	// Answers is the file the answers to the step's live questions (Ask) appear in, a JSON
	// object of Answers by question id; empty when no MCP server may ask.
	Answers string `json:"answers,omitempty"`
}

// Attachment is an artifact an agent step reads, at Path in its pod.
type Attachment struct {
	Step string `json:"step"`
	Name string `json:"name"`
	Path string `json:"path"`
}

// Conversation bounds a chat step.
type Conversation struct {
	// MaxMessages is how many messages people may write; then the last reply is the output.
	MaxMessages int `json:"maxMessages"`
}

// MCPServer is a Model Context Protocol server, reached over the streamable HTTP transport
// through http_fetch's address guard (HTTP.AllowHosts applies).
type MCPServer struct {
	// URL is the server's streamable HTTP endpoint.
	URL string `json:"url"`
	// Allow names the server's tools the model is offered, under their own names.
	Allow []string `json:"allow"`
	// Description, when set, comes before each offered tool's own description.
	Description string `json:"description,omitempty"`
	// Ask, when set, lets the server ask people questions while a call runs (MCP
	// elicitation): the runtime declares the capability and waits at most Ask for each
	// answer (elicit.go).
	Ask *Duration `json:"ask,omitempty"`
}

// MemoryConfig is the memory of an agent step's Scene.
type MemoryConfig struct {
	// Name is spec.memory.name; Scope its scope (Scene or User).
	Name  string `json:"name"`
	Scope string `json:"scope"`
	// File holds the store (internal/memory's JSON document); a missing file is an empty
	// memory.
	File string `json:"file"`
}

// ModelConfig selects the chat model.
type ModelConfig struct {
	BaseURL     string   `json:"baseURL"`
	Model       string   `json:"model"`
	Temperature *float64 `json:"temperature,omitempty"`
	Seed        *int64   `json:"seed,omitempty"`
	// ContextBudget bounds what each request sends, in characters (a token budget is
	// rendered as four characters a token); 0 means no bound.
	ContextBudget int64 `json:"contextBudget,omitempty"`
	// Name is the model's name among the Scene's models.
	Name string `json:"name,omitempty"`
	// APIKeyEnv names the environment variable of a fallback model's key; the first model's
	// is Spec.APIKeyEnv.
	APIKeyEnv string `json:"apiKeyEnv,omitempty"`
	// Pricing, when set, has the runtime add up what its calls of this model cost.
	Pricing *cost.Pricing `json:"pricing,omitempty"`
}

// HTTPConfig configures http_fetch.
type HTTPConfig struct {
	// AllowHosts are host names or host:port pairs that http_fetch may reach even when they
	// resolve to private addresses (in-cluster Services). Everything else must be public.
	AllowHosts []string `json:"allowHosts,omitempty"`
}

// Contract is the output contract.
type Contract struct {
	// Format of the answer, a registered format: text, markdown, json, yaml.
	Format string `json:"format,omitempty"`
	// Schema is a JSON Schema the parsed answer must satisfy.
	Schema json.RawMessage `json:"schema,omitempty"`
	// MaxRepairs is how often an invalid answer goes back to the model.
	MaxRepairs int `json:"maxRepairs"`
	// Outputs, when set, asks for several named outputs in labelled sections.
	Outputs []NamedOutput `json:"outputs,omitempty"`
}

// NamedOutput is one section of a multi-output answer.
type NamedOutput struct {
	Name   string          `json:"name"`
	Format string          `json:"format,omitempty"`
	Schema json.RawMessage `json:"schema,omitempty"`
}

// Duration is a time.Duration written as a Go duration string in JSON.
type Duration struct{ time.Duration }

// MarshalJSON writes the duration as a string such as "1m30s".
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// UnmarshalJSON reads a duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	d.Duration = v
	return nil
}
