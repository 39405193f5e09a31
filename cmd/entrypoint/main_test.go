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
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ergon-dev/ergon/internal/outputs/wire"
	"github.com/ergon-dev/ergon/internal/stepcontract"
)

// TestTheReportSaysWhetherTheStepWasAskedToStop runs the built entrypoint as a step pod does.
// A command that ends on its own leaves a report without "signaled"; one that exits 0 after
// the entrypoint was sent SIGTERM (the kubelet stopping the pod) leaves a report that says so,
// so that the controller waits for the pod's phase instead of taking the exit code's word.
func TestTheReportSaysWhetherTheStepWasAskedToStop(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the entrypoint")
	}
	bin := filepath.Join(t.TempDir(), "entrypoint")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	start := func(t *testing.T, script string) (*exec.Cmd, string) {
		dir := t.TempDir()
		cmd := exec.Command(bin, "run", "--", "sh", "-c", script)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), stepcontract.EnvOutput + "=" + filepath.Join(dir, "value"),
			stepcontract.EnvTerminationLog + "=" + filepath.Join(dir, "termination-log")}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd, filepath.Join(dir, "termination-log")
	}
	report := func(t *testing.T, cmd *exec.Cmd, log string) *wire.Report {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("the entrypoint: %v", err)
		}
		msg, err := os.ReadFile(log)
		if err != nil {
			t.Fatal(err)
		}
		r, err := wire.ParseReport(string(msg))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}

	t.Run("a command that ends on its own", func(t *testing.T) {
		cmd, log := start(t, `printf done > "$ERGON_OUTPUT"`)
		r := report(t, cmd, log)
		out, _, err := r.Inline()
		if r.ExitCode != 0 || r.Signaled || err != nil || string(out) != "done" {
			t.Fatalf("report %+v, output %q, %v; want exit 0, not signaled, output done", r, out, err)
		}
	})
	t.Run("a command that exits 0 when it is asked to stop", func(t *testing.T) {
		ready := filepath.Join(t.TempDir(), "ready")
		cmd, log := start(t, `trap 'printf partial > "$ERGON_OUTPUT"; exit 0' TERM; touch `+ready+`; while :; do sleep 0.05; done`)
		deadline := time.Now().Add(10 * time.Second)
		for _, err := os.Stat(ready); err != nil; _, err = os.Stat(ready) {
			if time.Now().After(deadline) {
				t.Fatal("the command did not start")
			}
			time.Sleep(20 * time.Millisecond)
		}
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		r := report(t, cmd, log)
		if r.ExitCode != 0 || !r.Signaled {
			t.Fatalf("report %+v; want exit 0, signaled", r)
		}
		if b, _ := os.ReadFile(log); !strings.Contains(string(b), `"signaled":true`) {
			t.Fatalf("the termination message does not say signaled: %s", b)
		}
	})
}
