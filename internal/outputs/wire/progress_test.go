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

package wire

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// TestTheLastCheckpointIsFoundInTheTailOfALongLog writes a progress line and a checkpoint
// per turn with stderr noise between, and reads the last of them as the controller does:
// the progress line from a short tail, then the checkpoint from the tail its size gives.
func TestTheLastCheckpointIsFoundInTheTailOfALongLog(t *testing.T) {
	var log bytes.Buffer
	var last []byte
	for turn := 1; turn <= 30; turn++ {
		last = []byte(fmt.Sprintf(`{"turn":%d,"conversation":%q}`, turn, strings.Repeat("x", 20000+turn)))
		if err := WriteProgress(&log, Progress{Turn: turn, TotalTokens: int64(100 * turn)}, last); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&log, "agent: the model API is rate limiting (429); retrying in 1s\n")
	}
	if err := WriteProgress(&log, Progress{Turn: 31, TotalTokens: 3100}, nil); err != nil {
		t.Fatal(err)
	}
	p, err := LastProgress(bytes.NewReader(ProgressTail.Of(log.Bytes())))
	if err != nil || p == nil || p.Turn != 31 || p.TotalTokens != 3100 || p.Checkpoint != nil {
		t.Fatalf("last progress = %+v, %v", p, err)
	}
	// Turn 31 had no checkpoint: the one before stands.
	prev, _ := LastProgress(bytes.NewReader(bytes.TrimSuffix(log.Bytes(), []byte(progressPrefix+`{"turn":31,"promptTokens":0,"completionTokens":0,"totalTokens":3100}`+"\n"))))
	if prev == nil || prev.Checkpoint == nil || prev.Turn != 30 {
		t.Fatalf("the progress of turn 30 = %+v", prev)
	}
	found, err := FindFrames(bytes.NewReader(CheckpointTail(*prev.Checkpoint).Of(log.Bytes())), *prev.Checkpoint)
	if err != nil || !bytes.Equal(found[prev.Checkpoint.SHA256], last) {
		t.Fatalf("the last checkpoint was not found in its tail: %v", err)
	}
	if err := WriteProgress(&log, Progress{Turn: 1}, make([]byte, MaxSize+1)); err == nil {
		t.Error("a checkpoint over MaxSize was written")
	}
}

// TestTheLastProgressOfAnEndedPodIsFoundPastTheEntrypointsFrames ends a log as an agent
// pod's ends: the last checkpoint and progress line, then the entrypoint's frames of the
// transcript and a framed output. The tails that the report's frames extend reach the line
// and the checkpoint; the tails without them do not, however the frames are sized.
func TestTheLastProgressOfAnEndedPodIsFoundPastTheEntrypointsFrames(t *testing.T) {
	for _, size := range []int{10, 4000, 40000, MaxSize} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			var log bytes.Buffer
			checkpoint := []byte(`{"turn":3,"pending":{"attempt":1}}`)
			if err := WriteProgress(&log, Progress{Turn: 3, TotalTokens: 330}, checkpoint); err != nil {
				t.Fatal(err)
			}
			msg, err := WriteResult(&log, Result{Output: bytes.Repeat([]byte("o"), size), ExitCode: 7,
				Transcript: bytes.Repeat([]byte("t"), size)})
			if err != nil {
				t.Fatal(err)
			}
			rep, err := ParseReport(string(msg))
			if err != nil {
				t.Fatal(err)
			}
			p, err := LastProgress(bytes.NewReader(ProgressTail.Plus(rep.Frames()).Of(log.Bytes())))
			if err != nil || p == nil || p.Turn != 3 || p.Checkpoint == nil {
				t.Fatalf("last progress past the frames = %+v, %v", p, err)
			}
			found, err := FindFrames(bytes.NewReader(CheckpointTail(*p.Checkpoint).Plus(rep.Frames()).Of(log.Bytes())), *p.Checkpoint)
			if err != nil || !bytes.Equal(found[p.Checkpoint.SHA256], checkpoint) {
				t.Fatalf("the checkpoint past the frames was not found: %v", err)
			}
			if size > 4000 {
				if p, _ := LastProgress(bytes.NewReader(ProgressTail.Of(log.Bytes()))); p != nil {
					t.Fatalf("the progress tail alone reached past %d bytes of frames: the test proves nothing", size)
				}
			}
		})
	}
}
