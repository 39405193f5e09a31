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

package nodump

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestHelperHoldsSecret is the child process of TestChildCannotReadEnviron: it marks itself
// not dumpable unless told not to, says so, and waits.
func TestHelperHoldsSecret(t *testing.T) {
	if os.Getenv("NODUMP_HELPER") == "" {
		t.Skip("only the child of TestChildCannotReadEnviron runs this")
	}
	if os.Getenv("NODUMP_HELPER") == "set" {
		if err := Set(); err != nil {
			t.Fatal(err)
		}
	}
	_, _ = os.Stdout.WriteString("ready\n")
	buf := make([]byte, 1)
	_, _ = os.Stdin.Read(buf) // until the parent closes stdin
}

func TestSetClearsDumpable(t *testing.T) {
	// Run in a child, so the test binary itself stays dumpable.
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperDumpable$")
	cmd.Env = append(os.Environ(), "NODUMP_CHECK=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "dumpable before=true after=false") {
		t.Fatalf("child: %v\n%s", err, out)
	}
}

func TestHelperDumpable(t *testing.T) {
	if os.Getenv("NODUMP_CHECK") == "" {
		t.Skip("only the child of TestSetClearsDumpable runs this")
	}
	before, err := Dumpable()
	if err != nil {
		t.Fatal(err)
	}
	if err := Set(); err != nil {
		t.Fatal(err)
	}
	after, err := Dumpable()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("dumpable before=%v after=%v", before, after)
	_, _ = os.Stdout.WriteString("dumpable before=" + boolString(before) + " after=" + boolString(after) + "\n")
}

func boolString(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// TestChildCannotReadEnviron checks what the mark is for: the environment of a process that
// set it cannot be read from /proc by another process of the same user, while that of one
// that did not can. Run as root, both processes run as nobody, since root reads anything.
func TestChildCannotReadEnviron(t *testing.T) {
	var cred *syscall.Credential
	self := os.Args[0]
	if os.Getuid() == 0 {
		cred = &syscall.Credential{Uid: 65534, Gid: 65534}
		self = copyForNobody(t, self)
	}
	for _, mode := range []string{"set", "unset"} {
		t.Run(mode, func(t *testing.T) {
			cmd := exec.Command(self, "-test.run=^TestHelperHoldsSecret$")
			cmd.Env = append(os.Environ(), "NODUMP_HELPER="+mode, "NODUMP_SECRET=hunter2")
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
			stdin, _ := cmd.StdinPipe()
			stdout, _ := cmd.StdoutPipe()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = stdin.Close(); _ = cmd.Wait() }()
			buf := make([]byte, 6)
			if _, err := io.ReadFull(stdout, buf); err != nil {
				t.Fatal(err)
			}
			reader := exec.Command("cat", "/proc/"+strconv.Itoa(cmd.Process.Pid)+"/environ")
			reader.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
			out, err := reader.Output()
			readable := err == nil && strings.Contains(string(out), "hunter2")
			if readable != (mode == "unset") {
				t.Errorf("holder %s the mark: its environ readable by the same user = %v (%v)", mode, readable, err)
			}
		})
	}
}

// copyForNobody copies the test binary where nobody may run it: the build directory is root's.
func copyForNobody(t *testing.T, path string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "nodump")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dest := filepath.Join(dir, "nodump.test")
	if err := os.WriteFile(dest, b, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dest
}

// Dumpable reports whether the calling process is dumpable.
func Dumpable() (bool, error) {
	v, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prGetDumpable, 0, 0)
	if errno != 0 {
		return false, errno
	}
	return v != 0, nil
}
