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

package agent

import "fmt"

// Reasons an attempt fails for. The step's status shows them; each budget has its own.
const (
	ReasonSpecInvalid      = "AgentSpecInvalid"
	ReasonMaxTurns         = "MaxTurnsExceeded"
	ReasonMaxTokens        = "MaxTokensExceeded"
	ReasonTimeout          = "AgentTimeoutExceeded"
	ReasonOutputInvalid    = "OutputInvalid"
	ReasonModelRefused     = "ModelRequestRefused"
	ReasonContextLength    = "ContextLengthExceeded"
	ReasonModelUnavailable = "ModelUnavailable"
	ReasonCancelled        = "AgentCancelled"
	// ReasonMCPUnavailable: an MCP server could not be reached, or lacks an allowed tool, at
	// the start of an attempt.
	ReasonMCPUnavailable = "MCPUnavailable"
)

// Exit codes of the runtime, by kind of failure.
const (
	ExitSpec     = 2
	ExitBudget   = 3
	ExitOutput   = 4
	ExitProvider = 5
	ExitCancel   = 6
)

// Failure is why an attempt failed: a CamelCase reason for the Run's status, a message for
// people, and the exit code of the runtime.
type Failure struct {
	Reason   string
	Message  string
	ExitCode int
}

func (f *Failure) Error() string { return fmt.Sprintf("%s: %s", f.Reason, f.Message) }

func fail(reason string, code int, format string, args ...any) *Failure {
	return &Failure{Reason: reason, ExitCode: code, Message: fmt.Sprintf(format, args...)}
}
