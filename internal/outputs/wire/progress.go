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
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/ergon-dev/ergon/internal/agentspec"
)

// progressPrefix starts the line an agent runtime prints after each completed turn.
const progressPrefix = "----- ERGON PROGRESS "

// ProgressTail is the end of a log the controller reads for the last progress line: the
// runtime prints a few lines of its own between turns at most. Once the container ended, the
// entrypoint's frames follow the line, and a reader adds the Tail they take (Report.Frames).
var ProgressTail = Tail{Lines: 64, Bytes: 32 << 10}

// Progress is what a running agent step says about itself, in its log, after each completed
// turn: the step's status shows it while the step runs, and its checkpoint lets the next
// attempt resume there.
type Progress struct {
	// Turn is the last completed turn; the token counts sum the step's model calls so far,
	// over its attempts.
	Turn             int   `json:"turn"`
	PromptTokens     int64 `json:"promptTokens"`
	CompletionTokens int64 `json:"completionTokens"`
	TotalTokens      int64 `json:"totalTokens"`
	// Cost of the calls so far, a decimal string, when the models have a pricing.
	Cost string `json:"cost,omitempty"`
	// Checkpoint is the frame printed just before the line: the conversation after the
	// turn. Nil with Reset set says the step must not resume from any earlier checkpoint (the
	// attempt failed in a way a retry must not repeat); nil without it keeps the last one.
	Checkpoint *Part `json:"checkpoint,omitempty"`
	Reset      bool  `json:"reset,omitempty"`
	// Asks are the questions the attempt waits on while its MCP sessions stay open: the line
	// is printed again while they wait, so that it stays within the tail the controller reads.
	Asks []agentspec.Ask `json:"asks,omitempty"`
}

// WriteProgress prints a checkpoint frame, when there is one, and the progress line after it.
func WriteProgress(log io.Writer, p Progress, checkpoint []byte) error {
	if checkpoint != nil {
		if len(checkpoint) > MaxSize {
			return fmt.Errorf("the checkpoint of %s bytes is more than the %s a step may hand back",
				Thousands(len(checkpoint)), Thousands(MaxSize))
		}
		p.Checkpoint = &Part{Size: len(checkpoint), SHA256: Digest(checkpoint)}
		if err := writeFrame(log, checkpoint, p.Checkpoint.SHA256); err != nil {
			return err
		}
	}
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(log, "%s%s\n", progressPrefix, b)
	return err
}

// LastProgress finds the last progress line in a log; nil when there is none.
func LastProgress(log io.Reader) (*Progress, error) {
	var last *Progress
	sc := bufio.NewScanner(log)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), progressPrefix)
		if !ok {
			continue
		}
		var p Progress
		if json.Unmarshal([]byte(line), &p) == nil {
			last = &p
		}
	}
	return last, sc.Err()
}

// CheckpointTail is the end of a log that holds the frame of a checkpoint and the lines
// printed after it.
func CheckpointTail(p Part) Tail {
	return TailOf(p).Plus(ProgressTail)
}
