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

// Command entrypoint runs a step's command inside its pod and hands its output back.
//
//	entrypoint copy DEST [SRC=DEST2]...
//	                              copy this binary to DEST, and each SRC to its DEST2 (the init
//	                              container does this; a Workspace step also gets the agent)
//	entrypoint run -- CMD ARG...  run CMD, then report $ERGON_OUTPUT and the exit code
//	entrypoint idle               wait for a stop signal (the workspace pod's command)
//	entrypoint files ls|cat PATH  list or print a file under /workspace, read-only
//
// The report goes into the container's termination message (internal/outputs/wire), so the pod
// needs no credentials. The exit code is CMD's, so the pod fails when the command does.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"regexp"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/ergon-dev/ergon/internal/nodump"
	"github.com/ergon-dev/ergon/internal/outputs/wire"
	"github.com/ergon-dev/ergon/internal/stepcontract"
	"github.com/ergon-dev/ergon/internal/workspace/files"
)

// reasonPattern is what a failure reason must look like to reach the Run's status.
var reasonPattern = regexp.MustCompile(`^[A-Z][A-Za-z0-9]{0,63}$`)

func main() {
	if len(os.Args) == 2 && os.Args[1] == "idle" {
		idle()
		return
	}
	if len(os.Args) < 3 {
		usage()
	}
	switch os.Args[1] {
	case "files":
		os.Exit(files.Command(workspaceRoot, os.Args[2:], os.Stdout, os.Stderr))
	case "copy":
		if err := copyAll(os.Args[2], os.Args[3:]); err != nil {
			fmt.Fprintln(os.Stderr, "entrypoint:", err)
			os.Exit(1)
		}
	case "run":
		args := os.Args[2:]
		if args[0] == "--" {
			args = args[1:]
		}
		if len(args) == 0 {
			usage()
		}
		os.Exit(run(args))
	default:
		usage()
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: entrypoint copy DEST [SRC=DEST]... | entrypoint run -- CMD [ARG...] |\n"+
		"       entrypoint idle | entrypoint files ls|cat PATH")
	os.Exit(2)
}

// copyAll copies this binary to dest and each SRC=DEST pair of files.
func copyAll(dest string, pairs []string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	if err := copyFile(self, dest); err != nil {
		return err
	}
	for _, p := range pairs {
		src, dst, ok := strings.Cut(p, "=")
		if !ok || src == "" || dst == "" {
			return fmt.Errorf("%q is not SRC=DEST", p)
		}
		if err := copyFile(src, dst); err != nil {
			return err
		}
	}
	return nil
}

// copyFile copies an executable.
func copyFile(src, dest string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer func() { _ = in.Close() }()
	out, err := os.OpenFile(dest, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o555)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

// run runs the command with this process's stdio, passes signals on, and reports. It first
// marks itself not dumpable: as PID 1 it holds the pod's environment, which for an agent step
// has the model's API key, and the commands an agent runs must not read it from /proc/1.
func run(args []string) int {
	if err := nodump.Set(); err != nil {
		fmt.Fprintln(os.Stderr, "entrypoint: hiding the environment:", err)
		return 1
	}
	if in, ok := transferArtifacts("fetch"); !ok {
		// The command does not run without its inputs.
		fmt.Fprintln(os.Stderr, "entrypoint:", in.Message)
		if err := report(1, false, in); err != nil {
			fmt.Fprintln(os.Stderr, "entrypoint: handing the failure back:", err)
		}
		return 1
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	code := 0
	var signaled atomic.Bool
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "entrypoint:", err)
		code = 127
	} else {
		signals := make(chan os.Signal, 4)
		signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
		go func() {
			for s := range signals {
				signaled.Store(true)
				_ = cmd.Process.Signal(s)
			}
		}()
		code = exitCode(cmd.Wait())
		signal.Stop(signals)
	}
	var out wire.Transferred
	if code == 0 && !signaled.Load() {
		var ok bool
		if out, ok = transferArtifacts("publish"); !ok {
			fmt.Fprintln(os.Stderr, "entrypoint:", out.Message)
			code = 1
		}
	}
	if err := report(code, signaled.Load(), out); err != nil {
		fmt.Fprintln(os.Stderr, "entrypoint: handing the output back:", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

func exitCode(err error) int {
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit):
		if status, ok := exit.Sys().(syscall.WaitStatus); ok && status.Signaled() {
			return 128 + int(status.Signal())
		}
		return exit.ExitCode()
	default:
		return 1
	}
}

// readLimited reads the file an environment variable names, at most limit bytes; nil when the
// variable is unset or the file does not exist.
func readLimited(env string, limit int64) ([]byte, error) {
	path := os.Getenv(env)
	if path == "" {
		return nil, nil
	}
	f, err := os.Open(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, nil
	case err != nil:
		return nil, err
	}
	defer func() { _ = f.Close() }()
	b, err := io.ReadAll(io.LimitReader(f, limit))
	if b == nil && err == nil {
		b = []byte{}
	}
	return b, err
}

// report reads the output file and writes the report into the termination message. Agent
// steps also leave a transcript ($ERGON_TRANSCRIPT) and, when they fail, a reason
// ($ERGON_FAILURE, JSON {"reason","message"}), unless moving its artifacts failed it (moved
// says why; otherwise it lists the artifacts written). signaled says a stop signal came before the
// command ended: the controller then waits for the pod's phase to learn why it stopped.
func report(code int, signaled bool, moved wire.Transferred) error {
	// Read one byte past the limit, so an oversized output is reported as such.
	output, err := readLimited(stepcontract.EnvOutput, wire.MaxSize+1)
	if err != nil {
		return err
	}
	res := wire.Result{Output: output, ExitCode: code, Signaled: signaled, Artifacts: moved.Artifacts,
		Reason: moved.Reason, Message: moved.Message}
	if res.Transcript, err = readLimited(stepcontract.EnvTranscript, wire.MaxSize); err != nil {
		return err
	}
	if code != 0 && moved.Reason == "" {
		if b, _ := readLimited(stepcontract.EnvFailure, 4096); len(b) > 0 {
			var f struct{ Reason, Message string }
			if json.Unmarshal(b, &f) == nil && reasonPattern.MatchString(f.Reason) {
				res.Reason, res.Message = f.Reason, f.Message
			}
		}
	}
	msg, err := wire.WriteResult(os.Stdout, res)
	if err != nil {
		return err
	}
	path := os.Getenv(stepcontract.EnvTerminationLog)
	if path == "" {
		path = stepcontract.DefaultTerminationLog
	}
	return os.WriteFile(path, msg, 0o644)
}
