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

package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ergon-dev/ergon/internal/agentspec"
	"github.com/ergon-dev/ergon/internal/outputs/wire"
	"github.com/ergon-dev/ergon/internal/stepcontract"
	"github.com/ergon-dev/ergon/test/fakellm"
)

// TestTheRuntimeUnderTheEntrypoint runs the two binaries as a step pod does: the entrypoint
// runs the agent runtime, and its report carries the output, the transcript's digest and,
// on failure, the runtime's reason. Secrets stay out of all of it.
func TestTheRuntimeUnderTheEntrypoint(t *testing.T) {
	if testing.Short() {
		t.Skip("builds binaries")
	}
	bin := t.TempDir()
	for pkg, out := range map[string]string{".": "agent", "../entrypoint": "entrypoint"} {
		cmd := exec.Command("go", "build", "-o", filepath.Join(bin, out), pkg)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", pkg, err, b)
		}
	}
	llm := httptest.NewServer(fakellm.New(fakellm.Script{Rules: []fakellm.Rule{
		{Match: fakellm.Match{AnyContains: "fail please"}, Reply: fakellm.Reply{Content: "not json"}},
		{Reply: fakellm.Reply{Content: `{"title":"done with s3cr3t-param"}`}},
	}}))
	defer llm.Close()

	run := func(t *testing.T, prompt string) (*wire.Report, string, string) {
		dir := t.TempDir()
		inputs := filepath.Join(dir, "inputs")
		if err := os.MkdirAll(inputs, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(inputs, "fetch"), []byte("sprint data"), 0o644); err != nil {
			t.Fatal(err)
		}
		spec := agentspec.Spec{Model: agentspec.ModelConfig{BaseURL: llm.URL + "/v1", Model: "m"}, Prompt: prompt,
			MaxTurns: 3, Output: agentspec.Contract{Format: "json", MaxRepairs: 1}, ContextDir: inputs,
			SecretEnv: []string{"ERGON_PARAM_token"}, APIKeyEnv: stepcontract.EnvAgentAPIKey}
		b, _ := json.Marshal(spec)
		specPath := filepath.Join(dir, "spec.json")
		if err := os.WriteFile(specPath, b, 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(filepath.Join(bin, "entrypoint"), "run", "--", filepath.Join(bin, "agent"))
		cmd.Env = []string{
			"ERGON_OUTPUT=" + filepath.Join(dir, "value"),
			stepcontract.EnvTranscript + "=" + filepath.Join(dir, "transcript"),
			stepcontract.EnvFailure + "=" + filepath.Join(dir, "failure"),
			stepcontract.EnvAgentSpec + "=" + specPath,
			stepcontract.EnvAgentAPIKey + "=sk-key-under-test",
			"ERGON_PARAM_token=s3cr3t-param",
			"ERGON_TERMINATION_LOG=" + filepath.Join(dir, "termination-log"),
			// The first attempt: the controller's checkpoint volume holds nothing yet.
			stepcontract.EnvCheckpoint + "=" + filepath.Join(dir, "checkpoint", "checkpoint"),
		}
		var log bytes.Buffer
		cmd.Stdout, cmd.Stderr = &log, &log
		_ = cmd.Run()
		msg, err := os.ReadFile(filepath.Join(dir, "termination-log"))
		if err != nil {
			t.Fatalf("no report: %v\n%s", err, log.String())
		}
		r, err := wire.ParseReport(string(msg))
		if err != nil {
			t.Fatal(err)
		}
		if r.Transcript == nil {
			t.Fatalf("the report has no transcript: %s", msg)
		}
		transcript, err := wire.FindFrame(bytes.NewReader(log.Bytes()), r.Transcript.Size, r.Transcript.SHA256)
		if err != nil {
			t.Fatal(err)
		}
		all := log.String() + string(msg) + string(transcript)
		if strings.Contains(all, "s3cr3t-param") || strings.Contains(all, "sk-key-under-test") {
			t.Fatalf("a secret leaked:\n%s", all)
		}
		return r, string(transcript), log.String()
	}

	t.Run("success", func(t *testing.T) {
		r, transcript, _ := run(t, "Summarise.")
		out, inline, err := r.Inline()
		if r.ExitCode != 0 || !inline || err != nil || string(out) != `{"title":"done with [REDACTED]"}` {
			t.Fatalf("exit %d, output %q, %v", r.ExitCode, out, err)
		}
		if !strings.Contains(transcript, `BEGIN CONTEXT`) || !strings.Contains(transcript, "sprint data") {
			t.Errorf("the context is not in the transcript: %s", transcript)
		}
	})
	t.Run("failure", func(t *testing.T) {
		r, _, log := run(t, "fail please")
		if r.ExitCode != 4 || r.Reason != "OutputInvalid" || !strings.Contains(r.Message, "not valid JSON") {
			t.Fatalf("exit %d, reason %q, message %q\n%s", r.ExitCode, r.Reason, r.Message, log)
		}
		// The repair turn left a checkpoint; the failure, which a retry would repeat, resets it.
		p, err := wire.LastProgress(strings.NewReader(log))
		if err != nil || p == nil || !p.Reset || p.Turn != 2 {
			t.Errorf("the last progress line = %+v, %v; want a reset after turn 2\n%s", p, err, log)
		}
		if !strings.Contains(log, "ERGON OUTPUT BEGIN") {
			t.Errorf("no checkpoint frame in the log:\n%s", log)
		}
	})
}

// TestReadPinned: a file the kubelet mounts from a ConfigMap by name is read only when it has
// the digest the controller pinned; anyone who may write ConfigMaps can put one under the name.
func TestReadPinned(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "checkpoint")
	content := []byte(`{"version":1}`)
	if err := os.WriteFile(path, content, 0o644); err != nil {
		t.Fatal(err)
	}
	own := sha256.Sum256(content)
	other := sha256.Sum256([]byte(`{"version":1,"forged":true}`))
	for _, c := range []struct {
		name, path, pinned string
		read               bool
	}{
		{"a missing file is nothing to read", filepath.Join(dir, "none"), hex.EncodeToString(other[:]), false},
		{"a file with another digest than the pinned one is ignored", path, hex.EncodeToString(other[:]), false},
		{"a file where the controller pinned nothing is ignored", path, "", false},
		{"a file with the pinned digest is read", path, hex.EncodeToString(own[:]), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, err := readPinned(c.path, c.pinned, "the checkpoint")
			if c.read != (b != nil) {
				t.Fatalf("read %q, %v", b, err)
			}
			if !c.read && c.path == path && (err == nil || !strings.Contains(err.Error(), "ignoring it")) {
				t.Errorf("an ignored file is not said to be: %v", err)
			}
		})
	}
}
