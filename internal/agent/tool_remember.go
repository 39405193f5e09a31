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
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/ergon-dev/ergon/internal/memory"
)

// ToolRemember is the name of the tool that proposes memory writes.
const ToolRemember = "remember"

// The remember tool keeps nothing itself: the pod has no credentials to write the store.
// Its successful calls are in the transcript, and when the attempt succeeds the runtime
// lists their writes in the transcript's memory, which the controller applies.
func init() {
	registerTool(&Tool{
		Name: ToolRemember,
		Description: "Remember a short note for later runs of this workflow: a fact, a decision, a preference. " +
			"Notes are kept only if this step succeeds, and later runs read them as data. " +
			"With a key, the note replaces the one kept under the same key. Never remember secrets.",
		Parameters: jsonSchema(fmt.Sprintf(`{"type":"object","properties":{
			"text":{"type":"string","minLength":1,"maxLength":%d,"description":"what to remember"},
			"key":{"type":"string","maxLength":%d,"description":"optional name of the note; a later note with the same key replaces it"}},
			"required":["text"],"additionalProperties":false}`, memory.MaxTextBytes, memory.MaxKeyBytes)),
		Call: func(_ context.Context, env *ToolEnv, _ json.RawMessage) (string, error) {
			if env.Memory == "" {
				return "", errors.New("this run keeps no memory (a User memory needs a person behind the Run); nothing was remembered")
			}
			return fmt.Sprintf("noted for memory %q; it is kept when this step succeeds", env.Memory), nil
		},
	})
}

// memoryWrites lists the writes of the successful remember calls in the transcript, in order.
// The transcript, which checkpoints carry, is their only record, so a resumed attempt keeps
// the writes of the turns before it.
func memoryWrites(entries []Entry) []memory.Write {
	args := map[string]string{}
	for _, e := range entries {
		for _, c := range e.ToolCalls {
			if c.Name == ToolRemember {
				args[fmt.Sprint(e.Turn, "/", c.ID)] = c.Arguments
			}
		}
	}
	var writes []memory.Write
	for _, e := range entries {
		if e.Role != RoleTool || e.Tool != ToolRemember || e.Error {
			continue
		}
		var w memory.Write
		if json.Unmarshal([]byte(args[fmt.Sprint(e.Turn, "/", e.ToolCallID)]), &w) == nil && w.Text != "" {
			writes = append(writes, w)
		}
	}
	return writes
}

// contextBlock is one block of the context: a dependency's output (attr name) or the
// Scene's memory (attr memory).
type contextBlock struct {
	ContextItem
	attr string
}

// contextBlocks are the blocks of the context, the memory first: what earlier Runs kept,
// then what this Run's steps produced.
func (l *loop) contextBlocks() []contextBlock {
	var blocks []contextBlock
	if m := l.Spec.Memory; m != nil && len(l.Memory) > 0 {
		blocks = append(blocks, contextBlock{ContextItem{Name: m.Name, Value: memory.Render(l.Memory)}, "memory"})
	}
	for _, item := range l.Context {
		blocks = append(blocks, contextBlock{item, "name"})
	}
	return blocks
}
