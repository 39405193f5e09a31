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

package console

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ergon-dev/ergon/internal/naming"
	"github.com/ergon-dev/ergon/internal/outputs"
)

// The tool calls of a chat step, for the conversation's cards: read, as the viewer, from the
// step's transcript once it ended, and while it runs from its checkpoint (each reply ends an
// attempt with one; the status records its digest, which is checked). Both are redacted by the
// runtime. The call's arguments and result are text the page shows as text.

// toolCall is one call of the agent's, and Before how many of the people's messages came
// before it: the page puts it above the reply it led to.
type toolCall struct {
	Before    int    `json:"before"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
	Result    string `json:"result,omitempty"`
	Error     bool   `json:"error,omitempty"`
	Done      bool   `json:"done"`
}

// entries is what a transcript and a checkpoint have in common.
type entries struct {
	Entries []struct {
		Role       string `json:"role"`
		From       string `json:"from"`
		Content    string `json:"content"`
		ToolCallID string `json:"toolCallID"`
		Error      bool   `json:"error"`
		ToolCalls  []struct {
			ID        string `json:"id"`
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"toolCalls"`
	} `json:"entries"`
}

// stepCalls answers with the tool calls of an agent step, in order.
func (s *Server) stepCalls(w http.ResponseWriter, r *http.Request, v *viewer) {
	l, st, err := loadStep(r, v)
	if err != nil {
		writeAPIError(w, err)
		return
	}
	run := l.run
	var raw []byte
	switch {
	case st.Transcript != nil:
		raw, err = l.value(r.Context(), v, st.Name, st.Transcript, outputs.KeyTranscript)
	case st.CheckpointSHA256 != "" && l.rec == nil:
		var cm corev1.ConfigMap
		err = v.c.Get(r.Context(), client.ObjectKey{Namespace: run.Namespace,
			Name: naming.CheckpointConfigMapName(run.Name, st.Name)}, &cm)
		if err == nil {
			raw = []byte(cm.Data["checkpoint"])
			if sum := sha256.Sum256(raw); hex.EncodeToString(sum[:]) != st.CheckpointSHA256 {
				err = errors.New("the step's checkpoint is not the one its status records")
			}
		}
	}
	if err != nil {
		writeAPIError(w, err)
		return
	}
	calls := []toolCall{}
	if len(raw) > 0 {
		var e entries
		if err := json.Unmarshal(raw, &e); err != nil {
			writeError(w, http.StatusInternalServerError, errors.New("the step's record is not JSON"))
			return
		}
		calls = callsOf(e)
	}
	writeJSON(w, map[string]any{"calls": calls})
}

// roleUser is a message of people's: with From, one a person wrote in the chat.
const roleUser = "user"

// callsOf pairs each call with its result.
func callsOf(e entries) []toolCall {
	results := map[string]int{}
	for i, x := range e.Entries {
		if x.Role == "tool" {
			results[x.ToolCallID] = i
		}
	}
	var calls []toolCall
	before := 0
	for _, x := range e.Entries {
		if x.Role == roleUser && x.From != "" {
			before++
		}
		for _, c := range x.ToolCalls {
			call := toolCall{Before: before, Name: c.Name, Arguments: c.Arguments}
			if i, ok := results[c.ID]; ok {
				call.Result, call.Error, call.Done = e.Entries[i].Content, e.Entries[i].Error, true
			}
			calls = append(calls, call)
		}
	}
	return calls
}
