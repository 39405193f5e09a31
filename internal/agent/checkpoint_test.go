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
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/ergon-dev/ergon/internal/outputs/wire"
	"github.com/ergon-dev/ergon/test/fakellm"
)

// progressLog is a step pod's log as the runtime writes it; it can stop the attempt after
// some progress lines, as a killed pod would stop.
type progressLog struct {
	mu        sync.Mutex
	buf       bytes.Buffer
	lines     int
	stopAfter int
	stop      context.CancelFunc
}

func (p *progressLog) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if bytes.Contains(b, []byte("ERGON PROGRESS")) {
		p.lines++
		if p.lines == p.stopAfter && p.stop != nil {
			p.stop()
		}
	}
	return p.buf.Write(b)
}

// lastCheckpoint reads the log as the controller does: the last progress line, then its frame.
func (p *progressLog) lastCheckpoint(t *testing.T) (*wire.Progress, []byte) {
	t.Helper()
	log := p.buf.Bytes()
	prog, err := wire.LastProgress(bytes.NewReader(log))
	if err != nil || prog == nil {
		t.Fatalf("no progress line in the log (%v):\n%s", err, log)
	}
	if prog.Checkpoint == nil {
		return prog, nil
	}
	found, err := wire.FindFrames(bytes.NewReader(wire.CheckpointTail(*prog.Checkpoint).Of(log)), *prog.Checkpoint)
	if err != nil {
		t.Fatalf("the checkpoint frame of the last progress line: %v", err)
	}
	return prog, found[prog.Checkpoint.SHA256]
}

func resumeScript() fakellm.Script {
	return fakellm.Script{Rules: []fakellm.Rule{
		{Match: fakellm.Match{LastRole: "user"}, Times: 1, Reply: fakellm.Reply{ToolCalls: []fakellm.ToolCall{
			{Name: "list_files", Arguments: `{"path":"."}`}}}},
		{Match: fakellm.Match{LastRole: "tool"}, Times: 4, Reply: fakellm.Reply{Content: "Looking again.", ToolCalls: []fakellm.ToolCall{
			{Name: "list_files", Arguments: `{"path":"` + apiKey + `"}`}}}},
		{Match: fakellm.Match{LastRole: "tool"}, Reply: fakellm.Reply{Content: "done"}},
	}}
}

// TestAKilledAttemptResumesFromItsLastCheckpoint stops an attempt after its third turn, as a
// deleted pod stops, and starts the next one from the checkpoint in the log: the model sees
// no request again for turns it answered, and the transcript holds every turn.
func TestAKilledAttemptResumesFromItsLastCheckpoint(t *testing.T) {
	h := newHarness(t, resumeScript(), Spec{Tools: []string{"list_files"}, Workspace: t.TempDir()})
	h.runner.Tools.Workspace = h.runner.Spec.Workspace
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	log := &progressLog{stopAfter: 3, stop: cancel}
	h.runner.Progress = log
	_, tr, err := h.runner.Run(ctx)
	wantFailure(t, err.(*Failure), ReasonCancelled, "stopped")
	if tr.Policies["checkpoint"] != CheckpointPolicy {
		t.Errorf("the transcript's policies = %v", tr.Policies)
	}
	prog, raw := log.lastCheckpoint(t)
	if prog.Turn != 3 || prog.Reset || prog.TotalTokens == 0 {
		t.Fatalf("the last progress = %+v, want turn 3 with its tokens", prog)
	}
	if bytes.Contains(log.buf.Bytes(), []byte(apiKey)) {
		t.Fatal("the log holds the API key")
	}
	cp, rerr := ReadCheckpoint(raw)
	if rerr != nil || cp.Turn != 3 || cp.Attempts != 1 {
		t.Fatalf("checkpoint %+v, %v", cp, rerr)
	}
	first := len(h.llm.Requests())

	// The next attempt, in a new pod: a new runner with the checkpoint.
	next := *h.runner
	next.Resume = cp
	log2 := &progressLog{}
	next.Progress = log2
	out, tr2, err := next.Run(context.Background())
	if err != nil {
		t.Fatalf("the resumed attempt failed: %v", err)
	}
	if out != "done" {
		t.Fatalf("output %q", out)
	}
	reqs := h.llm.Requests()
	seen := map[string]int{}
	for i, r := range reqs {
		b, _ := json.Marshal(r.Messages)
		if j, ok := seen[string(b)]; ok && len(r.Messages) <= len(cp.Conversation) {
			t.Errorf("request %d repeats request %d, of a turn the checkpoint had completed", i, j)
		}
		seen[string(b)] = i
	}
	if got := len(reqs[first].Messages); got != len(cp.Conversation) {
		t.Errorf("the resumed attempt's first request sends %d messages, the checkpoint holds %d", got, len(cp.Conversation))
	}
	if extra := len(reqs) - 6; extra > 1 {
		t.Errorf("%d model calls for a 6-turn conversation: the kill cost %d turns, at most 1 allowed", len(reqs), extra)
	}
	if tr2.Usage.Turns < 6 || tr2.Usage.Turns != cp.Usage.Turns+len(reqs)-first {
		t.Errorf("the transcript counts %d turns; the checkpoint had %d and the resumed attempt made %d calls",
			tr2.Usage.Turns, cp.Usage.Turns, len(reqs)-first)
	}
	text := transcriptJSON(t, tr2)
	if !strings.Contains(text, "resumed from the checkpoint of turn 3") || !strings.Contains(text, `"turn":1,"role":"assistant"`) {
		t.Errorf("the transcript does not hold the earlier turns and the resume: %s", text)
	}
	if strings.Contains(text, apiKey) {
		t.Error("the transcript holds the API key")
	}
}

func TestACheckpointOfAnotherSpecIsNotUsed(t *testing.T) {
	h := newHarness(t, resumeScript(), Spec{Tools: []string{"list_files"}, Workspace: t.TempDir()})
	h.runner.Tools.Workspace = h.runner.Spec.Workspace
	h.runner.Resume = &Checkpoint{Version: checkpointVersion, Spec: "other", Turn: 4,
		Conversation: []Message{{Role: RoleSystem, Content: "old", Pinned: true}}}
	out, tr, f := h.run()
	if f != nil || out != "done" {
		t.Fatalf("%q, %v", out, f)
	}
	if reqs := h.llm.Requests(); reqs[0].Messages[0].Content == "old" {
		t.Error("the checkpoint of another spec was used")
	}
	if !strings.Contains(transcriptJSON(t, tr), "made for another agent spec") {
		t.Error("the transcript does not say why the checkpoint was not used")
	}
}

// TestAFailureARetryWouldRepeatResetsTheCheckpoint: a retry after MaxTurnsExceeded starts
// afresh, as it does without checkpoints.
func TestAFailureARetryWouldRepeatResetsTheCheckpoint(t *testing.T) {
	h := newHarness(t, resumeScript(), Spec{Tools: []string{"list_files"}, Workspace: t.TempDir(), MaxTurns: 2})
	h.runner.Tools.Workspace = h.runner.Spec.Workspace
	log := &progressLog{}
	h.runner.Progress = log
	_, _, f := h.run()
	wantFailure(t, f, ReasonMaxTurns, "maxTurns")
	prog, raw := log.lastCheckpoint(t)
	if !prog.Reset || raw != nil || prog.Turn != 2 {
		t.Errorf("the last progress = %+v; want a reset after turn 2", prog)
	}
}
