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

// Package outputs is how a step pod hands its output back without credentials. The step's
// entrypoint writes a small report into the container's termination message; an output that
// fits goes inside it, a larger one is printed to the container log between two frame lines
// and the report carries its size and digest. The controller reads the report from the pod's
// status and, for a framed output, the log through pods/log, and checks the digest.
package outputs

import (
	"bufio"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

const (
	// MaxSize is the largest output a step may hand back: what a ConfigMap holds, less room
	// for its key.
	MaxSize = 1<<20 - 1024
	// InlineSize is the largest output carried inside the termination message, whose limit is
	// 4096 bytes; base64 and the report's fields must fit too.
	InlineSize = 2048

	frameBegin = "----- ERGON OUTPUT BEGIN "
	frameEnd   = "----- ERGON OUTPUT END -----"
	lineWidth  = 76
	version    = 1
)

// Report is what the entrypoint writes into the termination message.
type Report struct {
	Version int `json:"v"`
	// ExitCode of the user's command.
	ExitCode int `json:"exit"`
	// Size and SHA256 of the whole output.
	Size   int    `json:"size"`
	SHA256 string `json:"sha256"`
	// Data is the whole output, base64, when it is at most InlineSize.
	Data string `json:"data,omitempty"`
	// Framed says the output is in the container log.
	Framed bool `json:"framed,omitempty"`
	// Error says why the output could not be handed back (too large, unreadable).
	Error string `json:"error,omitempty"`
}

// Digest is the hex SHA-256 of an output.
func Digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Write hands an output back: it prints a frame to log when the output is too large for the
// report, and returns the report to write as the termination message.
func Write(log io.Writer, output []byte, exitCode int) ([]byte, error) {
	r := Report{Version: version, ExitCode: exitCode, Size: len(output), SHA256: Digest(output)}
	switch {
	case len(output) > MaxSize:
		r.Error = fmt.Sprintf("the output is %d bytes; at most %d are handed back", len(output), MaxSize)
	case len(output) <= InlineSize:
		r.Data = base64.StdEncoding.EncodeToString(output)
	default:
		r.Framed = true
		if err := writeFrame(log, output, r.SHA256); err != nil {
			return nil, err
		}
	}
	return json.Marshal(r)
}

func writeFrame(w io.Writer, output []byte, digest string) error {
	// bufio.Writer keeps the first error and returns it from Flush.
	bw := bufio.NewWriter(w)
	_, _ = fmt.Fprintf(bw, "\n%s%s -----\n", frameBegin, digest)
	enc := base64.StdEncoding.EncodeToString(output)
	for len(enc) > 0 {
		n := min(lineWidth, len(enc))
		_, _ = bw.WriteString(enc[:n])
		_ = bw.WriteByte('\n')
		enc = enc[n:]
	}
	_, _ = bw.WriteString(frameEnd + "\n")
	return bw.Flush()
}

// ParseReport reads the termination message of a step container.
func ParseReport(message string) (*Report, error) {
	var r Report
	if err := json.Unmarshal([]byte(strings.TrimSpace(message)), &r); err != nil || r.Version != version {
		return nil, errors.New("the step's container left no output report: was its entrypoint replaced?")
	}
	return &r, nil
}

// Inline returns the output carried inside the report; ok is false for a framed output.
func (r *Report) Inline() (output []byte, ok bool, err error) {
	if r.Error != "" {
		return nil, true, errors.New(r.Error)
	}
	if r.Framed {
		return nil, false, nil
	}
	b, err := base64.StdEncoding.DecodeString(r.Data)
	if err != nil {
		return nil, true, fmt.Errorf("the output report is corrupt: %w", err)
	}
	if Digest(b) != r.SHA256 {
		return nil, true, errors.New("the output does not match its digest")
	}
	return b, true, nil
}

// FromLog finds the framed output of the report in a container log. The last frame with the
// report's digest wins, so a command that prints frame lines of its own cannot forge it.
func (r *Report) FromLog(log io.Reader) ([]byte, error) {
	sc := bufio.NewScanner(log)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	begin := frameBegin + r.SHA256 + " -----"
	var found []byte
	var enc strings.Builder
	in := false
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == begin:
			in = true
			enc.Reset()
		case in && line == frameEnd:
			in = false
			b, err := base64.StdEncoding.DecodeString(enc.String())
			if err == nil && len(b) == r.Size && Digest(b) == r.SHA256 {
				found = b
			}
		case in:
			enc.WriteString(line)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading the step's log: %w", err)
	}
	if found == nil {
		return nil, fmt.Errorf("the step's log holds no output of %d bytes with digest %s", r.Size, r.SHA256)
	}
	return found, nil
}
