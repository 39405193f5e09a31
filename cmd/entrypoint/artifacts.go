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
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/ergon-dev/ergon/internal/outputs/wire"
	"github.com/ergon-dev/ergon/internal/stepcontract"
)

// reasonStoreFailed fails a step whose artifacts could not be moved, for want of a better reason.
const reasonStoreFailed = "ArtifactStoreFailed"

// ArtifactsBinary is the name of Ergon's artifact binary (cmd/artifacts) beside the
// entrypoint: in Ergon's image, and where the init container copies it.
const ArtifactsBinary = "ergon-artifacts"

// transferArtifacts runs the artifact binary's fetch or publish for a step that makes or reads
// artifacts ($ERGON_ARTIFACT_SPEC is set); it does nothing for any other step. Its stderr is the
// step's, so what it says lands in the step's log.
func transferArtifacts(op string) (wire.Transferred, bool) {
	var out wire.Transferred
	if os.Getenv(stepcontract.EnvArtifactSpec) == "" {
		return out, true
	}
	self, err := os.Executable()
	if err != nil {
		return wire.Transferred{Reason: reasonStoreFailed, Message: "finding Ergon's artifact binary: " + err.Error()}, false
	}
	cmd := exec.Command(filepath.Join(filepath.Dir(self), ArtifactsBinary), op)
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, os.Stderr
	runErr := cmd.Run()
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		return wire.Transferred{Reason: reasonStoreFailed, Message: fmt.Sprintf("Ergon's artifact binary (%s) said "+
			"nothing it could read: %v", op, runErr)}, false
	}
	if runErr != nil || out.Reason != "" {
		if !reasonPattern.MatchString(out.Reason) {
			out.Reason = reasonStoreFailed
		}
		return out, false
	}
	return out, true
}
