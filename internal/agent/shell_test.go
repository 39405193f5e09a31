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
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// shellDir is a directory that holds the named shells of this machine, as links, so that a
// tool environment's PATH can offer bash or not.
func shellDir(t *testing.T, shells ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range shells {
		path, err := exec.LookPath(name)
		if err != nil {
			t.Skipf("no %s here", name)
		}
		if err := os.Symlink(path, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestShellRunsUnderBashWithPipefailWhenTheImageHasBash(t *testing.T) {
	for _, tc := range []struct {
		name     string
		shells   []string
		wantExit string
		wantBash bool
	}{
		{"bash and sh: bash, and a failing pipeline fails", []string{"sh", "bash"}, "exit code 1\n", true},
		{"only sh: sh, where a pipeline's status is its last command's", []string{"sh"}, "exit code 0\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := workspaceEnv(t)
			env.Env = []string{"PATH=" + shellDir(t, tc.shells...)}
			if got := filepath.Base(shellOf(env.Env)); (got == "bash") != tc.wantBash {
				t.Errorf("shellOf chose %s", got)
			}
			out, err := registry["shell"].call(context.Background(), env, `{"command":"false | true"}`)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(out, tc.wantExit) {
				t.Errorf("false | true: %q, want %q", out, tc.wantExit)
			}
		})
	}
}

func TestShellFallsBackToShOnThePathWhenNoneIsFound(t *testing.T) {
	if got := shellOf([]string{"PATH=/nonexistent:relative"}); got != "sh" {
		t.Errorf("shellOf = %q, want sh", got)
	}
	if got := shellArgs("/bin/sh"); strings.Join(got, " ") != "-c" {
		t.Errorf("sh args = %q", got)
	}
}

func TestShellSeesNoSecretOfTheRuntime(t *testing.T) {
	env := workspaceEnv(t)
	env.Env = []string{"PATH=" + shellDir(t, "sh"), "HOME=" + env.Workspace}
	t.Setenv("ERGON_AGENT_API_KEY", "sk-live-key")
	t.Setenv("ERGON_PARAM_token", "s3cret")
	out, err := registry["shell"].call(context.Background(), env, `{"command":"set; cat /proc/self/environ"}`)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"sk-live-key", "s3cret", "ERGON_AGENT_API_KEY"} {
		if strings.Contains(out, secret) {
			t.Errorf("the command's environment holds %q:\n%s", secret, out)
		}
	}
	if !strings.Contains(out, "HOME") {
		t.Errorf("the command's environment lacks what the tool gives it:\n%s", out)
	}
}

// TestToolEnvironKeepsKeysOut checks what the shell tool's commands see: the plain variables,
// the Workspace's env (which may override them), never a model's key or Ergon's own variables.
func TestToolEnvironKeepsKeysOut(t *testing.T) {
	process := map[string]string{
		"LANG": "C.UTF-8", "PATH": "/opt/go/bin:/usr/bin", "ERGON_AGENT_API_KEY": "sk-1",
		"ERGON_AGENT_API_KEY_FALLBACK_1": "sk-2", "KEYISH": "sk-3", "ERGON_RUN": "r",
	}
	lookup := func(n string) (string, bool) { v, ok := process[n]; return v, ok }
	cases := []struct {
		name string
		spec Spec
		want []string
	}{
		{"no Workspace env", Spec{Workspace: "/workspace"},
			[]string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/workspace", "TMPDIR=/tmp"}},
		{"no Workspace at all", Spec{},
			[]string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/tmp", "TMPDIR=/tmp"}},
		{"the Workspace's env, its PATH winning, a missing name skipped",
			Spec{Workspace: "/workspace", ToolEnv: []string{"LANG", "PATH", "MISSING"}},
			[]string{"PATH=/opt/go/bin:/usr/bin", "HOME=/workspace", "TMPDIR=/tmp", "LANG=C.UTF-8"}},
		{"keys and Ergon's variables never, whatever ToolEnv says",
			Spec{Workspace: "/workspace", APIKeyEnv: "KEYISH", ToolEnv: []string{"KEYISH", "ERGON_AGENT_API_KEY", "ERGON_RUN",
				"ERGON_AGENT_API_KEY_FALLBACK_1"}, Fallbacks: []ModelConfig{{APIKeyEnv: "ERGON_AGENT_API_KEY_FALLBACK_1"}}},
			[]string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/workspace", "TMPDIR=/tmp"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := ToolEnviron(&c.spec, lookup); !slices.Equal(got, c.want) {
				t.Errorf("ToolEnviron = %q, want %q", got, c.want)
			}
		})
	}
}
