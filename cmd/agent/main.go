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

// Command agent is Ergon's agent runtime: it runs an agent step in its pod, under the step
// entrypoint. It reads the rendered step from $ERGON_AGENT_SPEC, the API key from
// $ERGON_AGENT_API_KEY and the dependencies' outputs from the spec's context directory; it
// writes the answer to $ERGON_OUTPUT, the transcript to $ERGON_TRANSCRIPT and, when it
// fails, {"reason","message"} to $ERGON_FAILURE, and exits non-zero (see internal/agent).
package main

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/ergon-dev/ergon/internal/agent"
	"github.com/ergon-dev/ergon/internal/agentspec"
	"github.com/ergon-dev/ergon/internal/memory"
	"github.com/ergon-dev/ergon/internal/nodump"
	"github.com/ergon-dev/ergon/internal/stepcontract"
)

func main() {
	os.Exit(run())
}

func run() int {
	// First of all, before any tool runs: the commands the shell tool starts run as this
	// process's user and must not read the API key from its /proc/PID/environ.
	if err := nodump.Set(); err != nil {
		fmt.Fprintln(os.Stderr, "agent: hiding the environment:", err)
		return agent.ExitSpec
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	spec, err := readSpec(os.Getenv(stepcontract.EnvAgentSpec))
	if err != nil {
		return finish(nil, "", nil, &agent.Failure{Reason: agent.ReasonSpecInvalid, ExitCode: agent.ExitSpec, Message: err.Error()})
	}
	secrets := []string{}
	for _, name := range spec.SecretEnv {
		secrets = append(secrets, os.Getenv(name))
	}
	apiKey := ""
	if spec.APIKeyEnv != "" {
		apiKey = os.Getenv(spec.APIKeyEnv)
		_ = os.Unsetenv(spec.APIKeyEnv) // nothing this process starts inherits it
	}
	fallbackKeys := make([]string, len(spec.Fallbacks))
	for i, fb := range spec.Fallbacks {
		if fb.APIKeyEnv != "" {
			fallbackKeys[i] = os.Getenv(fb.APIKeyEnv)
			_ = os.Unsetenv(fb.APIKeyEnv)
		}
	}
	items, err := readContext(spec.ContextDir)
	if err != nil {
		return finish(nil, "", nil, &agent.Failure{Reason: agent.ReasonSpecInvalid, ExitCode: agent.ExitSpec, Message: err.Error()})
	}
	attached, images, err := agent.ReadAttachments(spec.Attachments)
	if err != nil {
		f, ok := errors.AsType[*agent.Failure](err)
		if !ok {
			f = &agent.Failure{Reason: agent.ReasonSpecInvalid, ExitCode: agent.ExitSpec, Message: err.Error()}
		}
		return finish(nil, "", nil, f)
	}
	items = append(items, attached...)
	resume, err := readCheckpoint(os.Getenv(stepcontract.EnvCheckpoint), os.Getenv(stepcontract.EnvCheckpointSHA256))
	if err != nil {
		// A checkpoint that cannot be read costs the turns it held, not the step.
		fmt.Fprintf(os.Stderr, "agent: not resuming: %v\n", err)
	}
	mem, err := readMemory(spec.Memory, os.Getenv(stepcontract.EnvMemorySHA256))
	if err != nil {
		// A memory that cannot be read costs what it held, not the step.
		fmt.Fprintf(os.Stderr, "agent: not reading the memory: %v\n", err)
	}
	results, err := readResults(os.Getenv(stepcontract.EnvToolResults), os.Getenv(stepcontract.EnvToolResultsSHA256))
	if err != nil {
		// The requests are handed over again; the controller answers them once more.
		fmt.Fprintf(os.Stderr, "agent: no tool results: %v\n", err)
	}
	attempt, _ := strconv.Atoi(os.Getenv(stepcontract.EnvAttempt))
	r := &agent.Runner{
		Spec: spec, APIKey: apiKey, FallbackKeys: fallbackKeys, Secrets: secrets, Context: items, Images: images,
		Retry:  agent.DefaultRetry,
		Memory: mem,
		// The log is the channel the controller reads progress and checkpoints from.
		Progress: os.Stdout, Resume: resume, Attempt: int32(attempt), Results: results,
		AnswerKey: answerKey(), PodUID: os.Getenv(stepcontract.EnvPodUID),
		Log: func(line string) { fmt.Fprintln(os.Stderr, "agent:", line) },
		Tools: agent.ToolEnv{
			Workspace: spec.Workspace,
			HTTP:      agent.NewHTTPClient(nil, spec.HTTP.AllowHosts),
			// The shell sees a plain environment and the Workspace's env: not the API keys,
			// not the secret params.
			Env: agent.ToolEnviron(spec, os.LookupEnv),
		},
	}
	out, transcript, runErr := r.Run(ctx)
	red := agent.NewRedactor(slices.Concat(secrets, []string{apiKey}, fallbackKeys)...)
	var f *agent.Failure
	if runErr != nil && !errors.As(runErr, &f) {
		f = &agent.Failure{Reason: agent.ReasonModelUnavailable, ExitCode: agent.ExitProvider, Message: runErr.Error()}
	}
	return finish(red, out, transcript, f)
}

// answerKey is the key the controller signs the answers to MCP servers' questions with; nil
// when the pod has none, and then no server may ask.
func answerKey() ed25519.PublicKey {
	b, err := base64.StdEncoding.DecodeString(os.Getenv(stepcontract.EnvAnswerKey))
	if err != nil || len(b) != ed25519.PublicKeySize {
		return nil
	}
	return b
}

func readSpec(path string) (*agent.Spec, error) {
	if path == "" {
		return nil, fmt.Errorf("$%s names no spec file", stepcontract.EnvAgentSpec)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the agent spec: %w", err)
	}
	var s agent.Spec
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("the agent spec %s is not valid: %w", path, err)
	}
	return &s, nil
}

// readPinned reads a file the controller mounted from a ConfigMap by name: nil when it is
// missing or empty, and an error when it does not have the SHA-256 the controller pinned in
// the pod's environment (nothing pinned: the controller verified no such file). Anyone who may
// write ConfigMaps in the namespace can put one under that name; the pin is what makes it
// the controller's.
func readPinned(path, pinned, what string) ([]byte, error) {
	if path == "" {
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) || (err == nil && len(b) == 0) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(b)
	if got := hex.EncodeToString(sum[:]); got != pinned {
		if pinned == "" {
			return nil, fmt.Errorf("%s %s is not one the controller kept for this attempt; ignoring it", what, path)
		}
		return nil, fmt.Errorf("%s %s has SHA-256 %s, not %s, which the controller kept; ignoring it", what, path, got, pinned)
	}
	return b, nil
}

// readCheckpoint reads the checkpoint the controller mounted; none when the file is missing
// or empty.
func readCheckpoint(path, pinned string) (*agent.Checkpoint, error) {
	b, err := readPinned(path, pinned, "the checkpoint")
	if b == nil || err != nil {
		return nil, err
	}
	return agent.ReadCheckpoint(b)
}

// readMemory reads the entries of the Scene's memory the controller mounted; none when the
// spec has no memory or its file is missing (an empty store).
func readMemory(m *agentspec.MemoryConfig, pinned string) ([]memory.Entry, error) {
	if m == nil || m.File == "" {
		return nil, nil
	}
	b, err := readPinned(m.File, pinned, "the memory")
	if b == nil || err != nil {
		return nil, err
	}
	s, err := memory.Read(b)
	return s.Entries, err
}

// readResults reads the controller's results of the tool calls the checkpoint hands over;
// none when the file is missing or empty.
func readResults(path, pinned string) (*agentspec.Results, error) {
	b, err := readPinned(path, pinned, "the tool results")
	if b == nil || err != nil {
		return nil, err
	}
	var r agentspec.Results
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("the tool results are not valid JSON: %w", err)
	}
	return &r, nil
}

// readContext reads the dependencies' outputs, one file per step, in name order.
func readContext(dir string) ([]agent.ContextItem, error) {
	if dir == "" {
		return nil, nil
	}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var items []agent.ContextItem
	for _, e := range entries {
		// The kubelet's projected volumes keep their data behind ..data and dot entries.
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		items = append(items, agent.ContextItem{Name: e.Name(), Value: string(b)})
	}
	slices.SortFunc(items, func(a, b agent.ContextItem) int { return strings.Compare(a.Name, b.Name) })
	return items, nil
}

// finish writes the output, the transcript and the failure for the entrypoint, logs one line
// and returns the exit code.
func finish(red *agent.Redactor, out string, transcript *agent.Transcript, f *agent.Failure) int {
	code := 0
	if transcript != nil {
		if b, err := json.Marshal(transcript); err == nil {
			if err := writeEnvFile(stepcontract.EnvTranscript, b); err != nil {
				fmt.Fprintf(os.Stderr, "agent: %v\n", err)
			}
		}
	}
	if f != nil {
		msg := red.String(f.Message)
		b, _ := json.Marshal(map[string]string{"reason": f.Reason, "message": msg})
		if err := writeEnvFile(stepcontract.EnvFailure, b); err != nil {
			fmt.Fprintf(os.Stderr, "agent: %v\n", err)
		}
		fmt.Fprintf(os.Stderr, "agent: %s: %s\n", f.Reason, msg)
		code = f.ExitCode
	} else if err := writeEnvFile(stepcontract.EnvOutput, []byte(out)); err != nil {
		fmt.Fprintf(os.Stderr, "agent: %v\n", err)
		code = 1
	}
	if transcript != nil {
		u := transcript.Usage
		fmt.Fprintf(os.Stderr, "agent: %s after %d turns, %d tokens (%d prompt, %d completion)\n",
			transcript.Outcome, u.Turns, u.TotalTokens, u.PromptTokens, u.CompletionTokens)
	}
	return code
}

// writeEnvFile writes the file an environment variable names; nothing when it is unset.
func writeEnvFile(env string, b []byte) error {
	path := os.Getenv(env)
	if path == "" {
		return nil
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return fmt.Errorf("writing $%s: %w", env, err)
	}
	return nil
}
