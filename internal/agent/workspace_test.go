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
	"time"
)

func workspaceEnv(t *testing.T) *ToolEnv {
	t.Helper()
	dir := t.TempDir()
	return &ToolEnv{Workspace: dir, Timeout: 2 * time.Second, MaxResult: 1024, Env: []string{"PATH=/usr/bin:/bin"}}
}

func TestWorkspaceFileTools(t *testing.T) {
	env := workspaceEnv(t)
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("outside"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(env.Workspace, "escape")); err != nil {
		t.Fatal(err)
	}
	call := func(tool, args string) (string, error) {
		return registry[tool].call(context.Background(), env, args)
	}
	if _, err := call("write_file", `{"path":"notes/a.txt","content":"hello"}`); err != nil {
		t.Fatal(err)
	}
	if out, err := call("read_file", `{"path":"notes/a.txt"}`); err != nil || out != "hello" {
		t.Fatalf("read back %q, %v", out, err)
	}
	if out, err := call("read_file", `{"path":"`+env.Workspace+`/notes/a.txt"}`); err != nil || out != "hello" {
		t.Fatalf("an absolute path inside the workspace: %q, %v", out, err)
	}
	if out, err := call("list_files", `{}`); err != nil || !strings.Contains(out, "notes/a.txt") {
		t.Fatalf("list: %q, %v", out, err)
	}
	for _, tc := range []struct{ tool, args string }{
		{"read_file", `{"path":"../../etc/passwd"}`},
		{"read_file", `{"path":"/etc/passwd"}`},
		{"read_file", `{"path":"escape/secret"}`},
		{"write_file", `{"path":"escape/planted","content":"x"}`},
		{"write_file", `{"path":"notes/../../x","content":"x"}`},
		{"list_files", `{"path":"escape"}`},
		{"read_file", `{"path":7}`},
	} {
		if out, err := call(tc.tool, tc.args); err == nil {
			t.Errorf("%s %s was allowed: %q", tc.tool, tc.args, out)
		}
	}
	if _, err := os.Stat(filepath.Join(outside, "planted")); err == nil {
		t.Error("write_file wrote through the symlink")
	}
	big := strings.Repeat("y", 5000)
	if _, err := call("write_file", `{"path":"big","content":"`+big+`"}`); err != nil {
		t.Fatal(err)
	}
	if out, _ := call("read_file", `{"path":"big"}`); !strings.Contains(out, "[truncated") || len(out) > 1200 {
		t.Errorf("read_file is not capped: %d bytes", len(out))
	}
}

func TestShellTool(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	env := workspaceEnv(t)
	t.Setenv("ERGON_PARAM_token", "s3cret")
	out, err := registry["shell"].call(context.Background(), env, `{"command":"pwd; echo token=$ERGON_PARAM_token; exit 3"}`)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out, "exit code 3\n"+env.Workspace+"\n") || strings.Contains(out, "s3cret") {
		t.Errorf("out = %q", out)
	}
	out, _ = registry["shell"].call(context.Background(), env, `{"command":"yes | head -c 5000"}`)
	if !strings.Contains(out, "[truncated: ") {
		t.Errorf("output is not capped: %d bytes", len(out))
	}
	start := time.Now()
	_, err = registry["shell"].call(context.Background(), env, `{"command":"sleep 30"}`)
	if err == nil || time.Since(start) > 10*time.Second {
		t.Errorf("sleep 30 with a 2s timeout: %v after %s", err, time.Since(start))
	}
}
