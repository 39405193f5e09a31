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

// Package wire is the step pod's half of the output contract: how a step pod hands its output
// back without credentials. The step's entrypoint writes a small report into the container's
// termination message; an output that fits goes inside it, a larger one is printed to the
// container log between two frame lines and the report carries its size and digest. The
// controller reads the report from the pod's status and, for a framed output, the log through
// pods/log, and checks the digest. An agent runtime prints its progress and checkpoints into
// the same log in the same way.
//
// The entrypoint is copied into every step pod, so this package imports no Kubernetes
// libraries and stays small. What becomes of an output once the controller has it (the Run's
// status, the ConfigMap that keeps it, reading and checking it again) is the parent package,
// outputs.
package wire

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

const (
	// MaxSize is the largest output a step may hand back: what a ConfigMap holds, less room
	// for its key.
	MaxSize = 1<<20 - 1024
	// InlineSize is the largest output carried inside the termination message, whose limit is
	// maxReport; base64 and the report's fields must fit too. With artifacts, an output that
	// would not fit beside them is framed.
	InlineSize = 2048
	maxReport  = 4096

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
	// Reason and Message say why the command failed, when it knows better than its exit
	// code: the agent runtime names the budget it exhausted.
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	// Transcript is the record of an agent step, its second output; it is always framed.
	Transcript *Part `json:"transcript,omitempty"`
	// Signaled says the entrypoint was asked to stop (SIGTERM, SIGINT, SIGHUP) before the
	// command ended: the pod was being stopped, and the command's exit code may not say so.
	Signaled bool `json:"signaled,omitempty"`
	// Artifacts are the artifacts the entrypoint wrote to the store, after the command
	// ended with 0.
	Artifacts []Artifact `json:"artifacts,omitempty"`
}

// Artifact is one artifact a step wrote: its name, size and SHA-256 (hex).
type Artifact struct {
	Name   string `json:"n"`
	Size   int64  `json:"s"`
	SHA256 string `json:"d"`
}

// Transferred is what Ergon's artifact binary (cmd/artifacts) tells the entrypoint on its
// stdout: the artifacts it wrote, or why it failed.
type Transferred struct {
	Artifacts []Artifact `json:"artifacts,omitempty"`
	Reason    string     `json:"reason,omitempty"`
	Message   string     `json:"message,omitempty"`
}

// Part is a value framed in the log, known by its size and digest.
type Part struct {
	Size   int    `json:"size"`
	SHA256 string `json:"sha256"`
}

// Result is everything a step hands back.
type Result struct {
	Output   []byte
	ExitCode int
	// Reason and Message explain a failure (MaxMessage bytes at most are kept).
	Reason, Message string
	// Transcript, when not nil, is framed in the log too.
	Transcript []byte
	// Signaled says the command was asked to stop before it ended.
	Signaled bool
	// Artifacts the step wrote.
	Artifacts []Artifact
}

// MaxMessage bounds Report.Message, so that the report fits the termination message.
const MaxMessage = 512

// Digest is the hex SHA-256 of an output.
func Digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Write hands an output back: it prints a frame to log when the output is too large for the
// report, and returns the report to write as the termination message.
func Write(log io.Writer, output []byte, exitCode int) ([]byte, error) {
	return WriteResult(log, Result{Output: output, ExitCode: exitCode})
}

// WriteResult is Write with a failure reason and a transcript.
func WriteResult(log io.Writer, res Result) ([]byte, error) {
	output := res.Output
	r := Report{Version: version, ExitCode: res.ExitCode, Size: len(output), SHA256: Digest(output),
		Reason: res.Reason, Message: truncate(res.Message, MaxMessage), Signaled: res.Signaled, Artifacts: res.Artifacts}
	if res.Transcript != nil {
		t := res.Transcript
		if len(t) > MaxSize {
			// Keep the start; the transcript is a record, and a cut one is better than none.
			t = t[:MaxSize]
		}
		r.Transcript = &Part{Size: len(t), SHA256: Digest(t)}
		if err := writeFrame(log, t, r.Transcript.SHA256); err != nil {
			return nil, err
		}
	}
	switch {
	case len(output) > MaxSize:
		// The entrypoint reads one byte past the limit, no more: the true size is unknown.
		r.Error = fmt.Sprintf("the output is more than %s bytes, the most a step can hand back; "+
			"write a smaller output, or keep large data elsewhere and hand back where it is", Thousands(MaxSize))
	case len(output) <= InlineSize && inlineFits(r, len(output)):
		r.Data = base64.StdEncoding.EncodeToString(output)
	default:
		r.Framed = true
		if err := writeFrame(log, output, r.SHA256); err != nil {
			return nil, err
		}
	}
	return json.Marshal(r)
}

// inlineFits says an output of size bytes fits inside the report beside its other fields.
func inlineFits(r Report, size int) bool {
	b, err := json.Marshal(r)
	return err == nil && len(b)+base64.StdEncoding.EncodedLen(size)+len(`,"data":""`) <= maxReport
}

// Tail is the end of a container log that holds the frames of some parts: the entrypoint
// writes them last, so a reader needs only that many lines and bytes, whatever the command
// printed before. A log reader asks the kubelet for no more (PodLogOptions TailLines and
// LimitBytes), so it never holds more than the frames, which MaxSize bounds.
type Tail struct{ Lines, Bytes int64 }

// Of is the end of log that the kubelet serves for t: the last t.Lines lines, cut to t.Bytes.
// Log readers that stand in for the kubelet (in tests) serve it.
func (t Tail) Of(log []byte) []byte {
	lines := bytes.SplitAfter(log, []byte("\n"))
	if len(lines) > 0 && len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	}
	end := bytes.Join(lines[max(len(lines)-int(t.Lines), 0):], nil)
	return end[:min(int64(len(end)), t.Bytes)]
}

// Plus is the end of a log that holds t and, before it, u.
func (t Tail) Plus(u Tail) Tail { return Tail{Lines: t.Lines + u.Lines, Bytes: t.Bytes + u.Bytes} }

// Frames is the end of the log that the entrypoint's frames of this report take: what a
// reader of the lines the command printed last must read past.
func (r *Report) Frames() Tail {
	var parts []Part
	if r.Transcript != nil {
		parts = append(parts, *r.Transcript)
	}
	if r.Framed {
		parts = append(parts, Part{Size: r.Size, SHA256: r.SHA256})
	}
	return TailOf(parts...)
}

// TailOf is the Tail that holds the frames of parts, as writeFrame writes them.
func TailOf(parts ...Part) Tail {
	var t Tail
	for _, p := range parts {
		enc := int64(base64.StdEncoding.EncodedLen(max(p.Size, 0)))
		lines := (enc + lineWidth - 1) / lineWidth
		// A blank line, the begin line, the encoded lines and the end line, each ending in \n.
		t.Lines += lines + 3
		t.Bytes += 1 + int64(len(frameBegin)+len(p.SHA256)+len(" -----")+1) + enc + lines + int64(len(frameEnd)+1)
	}
	return t
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

// truncate cuts s to at most n bytes at a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// FromLog finds the framed output of the report in a container log. The last frame with the
// report's digest wins, so a command that prints frame lines of its own cannot forge it.
func (r *Report) FromLog(log io.Reader) ([]byte, error) {
	return FindFrame(log, r.Size, r.SHA256)
}

// FindFrame finds a framed value of the given size and digest in a container log.
func FindFrame(log io.Reader, size int, digest string) ([]byte, error) {
	found, err := FindFrames(log, Part{Size: size, SHA256: digest})
	return found[digest], err
}

// FindFrames finds framed values in a container log in one pass, by digest. The last frame
// of each wins, and only a frame whose size and digest match is kept. A missing one is an
// error; the values found are returned with it.
func FindFrames(log io.Reader, want ...Part) (map[string][]byte, error) {
	sizes := map[string]int{}
	for _, p := range want {
		if p.Size < 0 || p.Size > MaxSize {
			return nil, fmt.Errorf("a framed value of %d bytes is more than the %d a step may hand back", p.Size, MaxSize)
		}
		sizes[frameBegin+p.SHA256+" -----"] = p.Size
	}
	sc := bufio.NewScanner(log)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	found := map[string][]byte{}
	var enc strings.Builder
	var digest string
	size, in := 0, false
	for sc.Scan() {
		line := sc.Text()
		if n, ok := sizes[line]; ok {
			in, size, digest = true, n, strings.TrimSuffix(strings.TrimPrefix(line, frameBegin), " -----")
			enc.Reset()
			continue
		}
		switch {
		case in && line == frameEnd:
			in = false
			b, err := base64.StdEncoding.DecodeString(enc.String())
			if err == nil && len(b) == size && Digest(b) == digest {
				found[digest] = b
			}
		case in && enc.Len()+len(line) > base64.StdEncoding.EncodedLen(size):
			// Longer than the value it claims to be: not the entrypoint's frame. Dropping it
			// keeps what is held to one value of at most MaxSize.
			in = false
			enc.Reset()
		case in:
			enc.WriteString(line)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading the step's log: %w", err)
	}
	for _, p := range want {
		if _, ok := found[p.SHA256]; !ok {
			return found, fmt.Errorf("the step's log holds no value of %d bytes with digest %s", p.Size, p.SHA256)
		}
	}
	return found, nil
}

// StripFrames reads a step log without the framed outputs the entrypoint prints: base64 meant
// for Ergon, not for people. Each frame becomes one line that says where to read the output;
// kubectl ergon logs and the console show logs through it.
func StripFrames(r io.Reader) []string {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	var lines []string
	in := false
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, frameBegin):
			in = true
			lines = append(lines, "[a framed output: read it with kubectl ergon output]")
		case in && line == frameEnd:
			in = false
		case !in:
			lines = append(lines, line)
		}
	}
	return lines
}

// Thousands writes n with a comma between groups of three digits, as people read sizes:
// 1,047,552.
func Thousands(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
