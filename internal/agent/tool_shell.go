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

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

func init() {
	registerTool(&Tool{
		Name: "shell", NeedsWorkspace: true,
		Description: "Run a command with bash -o pipefail -c (sh -c where the image has no bash) in the workspace " +
			"directory and return its exit code and output (capped). The command sees no secrets.",
		Parameters: jsonSchema(`{"type": "object", "additionalProperties": false, "required": ["command"],
			"properties": {"command": {"type": "string"}}}`),
		Call: shell,
	})
}

// cappedBuffer keeps the first max bytes written to it and counts the rest.
type cappedBuffer struct {
	buf     bytes.Buffer
	max     int
	dropped int
}

func (c *cappedBuffer) Write(p []byte) (int, error) {
	n := len(p)
	room := max(c.max-c.buf.Len(), 0)
	if room < len(p) {
		c.dropped += len(p) - room
		p = p[:room]
	}
	c.buf.Write(p)
	return n, nil
}

func shell(ctx context.Context, env *ToolEnv, raw json.RawMessage) (string, error) {
	var a struct {
		Command string `json:"command"`
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		return "", err
	}
	if env.Workspace == "" {
		return "", errors.New("this step is bound to no Workspace")
	}
	sh := shellOf(env.Env)
	cmd := exec.CommandContext(ctx, sh, append(shellArgs(sh), a.Command)...)
	cmd.Dir = env.Workspace
	cmd.WaitDelay = 2 * time.Second // a child that keeps the pipes open does not hold the call
	// Only what the tool's environment says: the API key and secret params stay out.
	cmd.Env = env.Env
	out := &cappedBuffer{max: env.MaxResult}
	cmd.Stdout, cmd.Stderr = out, out
	err := cmd.Run()
	code := 0
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		return "", err
	}
	s := fmt.Sprintf("exit code %d\n%s", code, out.buf.String())
	if out.dropped > 0 {
		s += fmt.Sprintf("\n[truncated: %d more bytes of output]", out.dropped)
	}
	return s, nil
}

// shellOf is the shell a command runs under: bash when the directories of the tool
// environment's PATH hold it, so that a failure anywhere in a pipeline fails the command; sh
// otherwise (a busybox or distroless-with-shell image). The path is absolute, so the manager's
// own PATH does not decide what runs in the step's image.
func shellOf(env []string) string {
	path := "/usr/local/bin:/usr/bin:/bin"
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	var sh string
	for _, dir := range filepath.SplitList(path) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue
		}
		if executable(filepath.Join(dir, "bash")) {
			return filepath.Join(dir, "bash")
		}
		if sh == "" && executable(filepath.Join(dir, "sh")) {
			sh = filepath.Join(dir, "sh")
		}
	}
	if sh == "" {
		return "sh" // none found: let exec say so
	}
	return sh
}

// shellArgs are the flags a shell gets before the command.
func shellArgs(shell string) []string {
	if filepath.Base(shell) == "bash" {
		return []string{"-o", "pipefail", "-c"}
	}
	return []string{"-c"}
}

func executable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

// ToolEnviron is the environment the shell tool runs with: a plain PATH, HOME and TMPDIR,
// then the variables the spec's ToolEnv names (the Workspace's env, which may set its own
// PATH or HOME), as lookup finds them. A name the step contract reserves (ERGON_*) or that
// holds a model's key never reaches a tool, whatever ToolEnv says.
func ToolEnviron(spec *Spec, lookup func(string) (string, bool)) []string {
	home := spec.Workspace
	if home == "" {
		home = "/tmp"
	}
	vars := map[string]string{"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": home, "TMPDIR": "/tmp"}
	order := []string{"PATH", "HOME", "TMPDIR"}
	keys := map[string]bool{spec.APIKeyEnv: true}
	for _, fb := range spec.Fallbacks {
		keys[fb.APIKeyEnv] = true
	}
	for _, name := range spec.ToolEnv {
		v, ok := lookup(name)
		if !ok || keys[name] || strings.HasPrefix(name, "ERGON_") {
			continue
		}
		if _, seen := vars[name]; !seen {
			order = append(order, name)
		}
		vars[name] = v
	}
	env := make([]string, 0, len(order))
	for _, name := range order {
		env = append(env, name+"="+vars[name])
	}
	return env
}
