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
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/ergon-dev/ergon/internal/agentspec"
	"github.com/ergon-dev/ergon/internal/outputs/wire"
)

// CheckpointPolicy names what a checkpoint holds and when it is written; the transcript's
// header records it.
const CheckpointPolicy = "after-each-turn/v1"

// checkpointVersion is the version of the Checkpoint document.
const checkpointVersion = 1

// Checkpoint is the state of an attempt after a completed turn: enough for the next attempt
// of the step to go on from there without asking the model again for any turn it answered.
// It is redacted like the transcript.
type Checkpoint struct {
	Version int `json:"version"`
	// Spec is the digest of the agent spec the checkpoint was made under: an attempt under
	// another spec starts afresh.
	Spec string `json:"spec"`
	// Turn is the last completed turn; Repairs the repairs asked for so far.
	Turn    int   `json:"turn"`
	Repairs int   `json:"repairs"`
	Usage   Usage `json:"usage"`
	// Conversation is what the next request sends, before the new turn's trimming.
	Conversation []Message `json:"conversation"`
	// Entries is the transcript so far.
	Entries []Entry `json:"entries"`
	// Attempts counts the attempts that got here, the one that wrote it included.
	Attempts int `json:"attempts"`
	// Pending are the tool calls the attempt handed to the controller; the turn's other
	// results are in Conversation. Requests counts the step's requests so far.
	Pending  *agentspec.Pending `json:"pending,omitempty"`
	Requests int                `json:"requests,omitempty"`
	// Started are the approved calls of Pending an attempt began to run (approved_calls.go):
	// an attempt that resumes from here does not run them again.
	Started []string `json:"started,omitempty"`
}

// ReadCheckpoint reads a checkpoint; empty input is no checkpoint.
func ReadCheckpoint(b []byte) (*Checkpoint, error) {
	if len(b) == 0 {
		return nil, nil
	}
	var c Checkpoint
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("the checkpoint is not valid JSON: %w", err)
	}
	if c.Version != checkpointVersion {
		return nil, fmt.Errorf("the checkpoint has version %d, this runtime reads %d", c.Version, checkpointVersion)
	}
	return &c, nil
}

// specDigest identifies a spec.
func specDigest(s *Spec) string {
	b, _ := json.Marshal(s) // plain data
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// resume restores the state of a checkpoint, when there is one made under the same spec. It
// returns the turn and repairs to go on from.
func (l *loop) resume() (turn, repairs int, ok bool) {
	c := l.Resume
	if c == nil {
		return 0, 0, false
	}
	if c.Spec != specDigest(l.Spec) {
		l.note(0, "the checkpoint of turn %d was made for another agent spec; starting from turn 0", c.Turn)
		return 0, 0, false
	}
	l.conv = c.Conversation
	l.t.Usage = c.Usage
	l.t.Entries = append(c.Entries, l.t.Entries...)
	l.attempts = c.Attempts
	l.waiting, l.requests, l.started = c.Pending, c.Requests, c.Started
	l.note(c.Turn, "resumed from the checkpoint of turn %d, made by attempt %d of the step; no model call of turns 1-%d is repeated",
		c.Turn, c.Attempts, c.Turn)
	return c.Turn, c.Repairs, true
}

// checkpoint prints the state after a completed turn to the progress log: a checkpoint frame
// and the progress line. It reports whether the checkpoint was written.
func (l *loop) checkpoint(turn, repairs int) bool {
	if l.Progress == nil {
		return false
	}
	c := Checkpoint{Version: checkpointVersion, Spec: l.specDigest, Turn: turn, Repairs: repairs, Usage: l.t.Usage,
		Conversation: l.conv, Entries: l.t.Entries, Attempts: l.attempts + 1, Pending: l.handing, Requests: l.requests, Started: l.started}
	b, err := json.Marshal(c)
	if err != nil {
		return false
	}
	// Everything in it is redacted already; once more, whole, costs little.
	b = []byte(l.red.String(string(b)))
	if len(b) > wire.MaxSize {
		l.note(turn, "the checkpoint of %d bytes is more than the %d a step may hand back; a retry resumes from an earlier one. "+
			"A contextBudget keeps checkpoints small", len(b), wire.MaxSize)
		b = nil
	}
	l.writeProgress(turn, b, false)
	return b != nil
}

// writeProgress prints the progress line, after the checkpoint frame when there is one.
func (l *loop) writeProgress(turn int, checkpoint []byte, reset bool) {
	u := l.t.Usage
	p := wire.Progress{Turn: turn, PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens,
		TotalTokens: u.TotalTokens, Cost: u.Cost, Reset: reset}
	if err := wire.WriteProgress(l.Progress, p, checkpoint); err != nil && l.Log != nil {
		l.Log(fmt.Sprintf("writing the progress: %v", err))
	}
}

// resumable says whether a retry may go on from the last checkpoint after a failure: yes
// when the attempt was stopped or the model was unavailable, no when the loop itself decided
// (a budget, the output contract, a refusal), which a resumed attempt would only decide again.
func resumable(reason string) bool {
	switch reason {
	case ReasonModelUnavailable, ReasonCancelled, ReasonTimeout, ReasonMCPUnavailable, agentspec.ReasonToolCallsPending:
		return true
	}
	return false
}

// note adds an entry of the runtime's own to the transcript.
func (l *loop) note(turn int, format string, args ...any) {
	l.t.Entries = append(l.t.Entries, Entry{Turn: turn, Role: RoleNote, Content: l.red.String(fmt.Sprintf(format, args...))})
}
