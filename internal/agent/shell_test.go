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
