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
	"fmt"
	"strings"
)

// ContextPolicy names the context policy and its version; the transcript's header records it,
// so that runs under different policies are not compared unawares. Change the version with
// any change of what the policy keeps.
const ContextPolicy = "trim-oldest-tool-results/v1"

// CharsPerToken is how a token budget becomes a character budget: an estimate that holds for
// English text and code with the common tokenizers, erring on the side of sending less.
const CharsPerToken = 4

// trimStub replaces a tool result the policy removed.
const trimStub = "[removed by the context policy to fit the context budget: a tool result of %d characters]"

// trim is what one application of the policy did.
type trim struct {
	before, after int64
	// stubbed tool results, their characters, and the turns they came from.
	stubbed        int
	stubbedChars   int64
	stubFrom, stub int
	// dropped messages and the newest turn they came from.
	dropped     int
	droppedUpTo int
}

func (t trim) String() string {
	var parts []string
	if t.stubbed > 0 {
		parts = append(parts, fmt.Sprintf("replaced %d tool results of turns %d-%d (%d characters) with a stub",
			t.stubbed, t.stubFrom, t.stub, t.stubbedChars))
	}
	if t.dropped > 0 {
		parts = append(parts, fmt.Sprintf("dropped %d messages, up to turn %d, whole with their tool calls and results",
			t.dropped, t.droppedUpTo))
	}
	return fmt.Sprintf("context policy %s: the conversation of %d characters is over the budget; %s; %d characters remain",
		ContextPolicy, t.before, strings.Join(parts, "; "), t.after)
}

func (t *trim) noteStub(turn int, chars int64) {
	if t.stubbed == 0 || turn < t.stubFrom {
		t.stubFrom = turn
	}
	t.stub = max(t.stub, turn)
	t.stubbed++
	t.stubbedChars += chars
}

// fitContext makes the conversation fit a budget in characters, before a request. The pinned
// messages (system prompt, context, task) are always kept whole; so is the newest exchange,
// unless only its own tool results can make room. In this order, until the conversation fits:
//
//  1. the oldest tool results, except the newest exchange's, are replaced by a stub that says
//     how large they were (the call and its result both stay);
//  2. the oldest exchanges (an assistant message with all its tool results, or a user
//     message) are dropped whole, and one marker message says up to which turn;
//  3. the newest exchange's tool results are replaced by stubs, oldest first.
//
// No message is cut in half, and a tool call never loses its result nor a result its call.
// The conversation is changed in place (and its slice returned): what was trimmed stays
// trimmed, so the start of later requests does not change again. It is an error only when the
// pinned messages alone are over the budget.
func fitContext(conv []Message, budget int64) ([]Message, trim, error) {
	var t trim
	if budget <= 0 {
		return conv, t, nil
	}
	var total, pinned int64
	head := 0
	for i := range conv {
		s := conv[i].size()
		total += s
		if conv[i].Pinned {
			pinned += s
			head = i + 1
		}
	}
	t.before, t.after = total, total
	if total <= budget {
		return conv, t, nil
	}
	if pinned > budget {
		return conv, t, fail(ReasonContextLength, ExitSpec,
			"the system prompt, context and task take %d characters, more than the model's contextBudget of %d: "+
				"raise contextBudget or hand the step less context", pinned, budget)
	}
	newest := len(conv)
	for newest > head && conv[newest-1].Role == RoleTool {
		newest--
	}
	newest = max(newest-1, head) // the start of the newest exchange
	if newest > head && conv[newest].Role == RoleUser && conv[newest-1].Role == RoleAssistant {
		newest-- // a repair request stays with the answer it is about
	}
	stubRange := func(from, to int) {
		for i := from; i < to && total > budget; i++ {
			m := &conv[i]
			if m.Role != RoleTool || m.Trimmed {
				continue
			}
			stub := fmt.Sprintf(trimStub, len(m.Content))
			if len(stub) >= len(m.Content) {
				continue
			}
			total -= int64(len(m.Content) - len(stub))
			t.noteStub(m.Turn, int64(len(m.Content)))
			m.Content, m.Trimmed = stub, true
		}
	}
	stubRange(head, newest)
	if total > budget {
		// Drop whole exchanges after the marker, oldest first, up to the newest exchange.
		from := head
		if from < len(conv) && conv[from].Marker {
			from++
		}
		to := from
		upTo := 0
		var freed int64
		for to < newest && total-freed > budget {
			end := to + 1
			for end < len(conv) && conv[end].Role == RoleTool {
				end++
			}
			for i := to; i < end; i++ {
				freed += conv[i].size()
				upTo = max(upTo, conv[i].Turn)
			}
			t.dropped += end - to
			to = end
		}
		if to > from {
			var marker Message
			if from > head { // a marker from an earlier trim
				marker = conv[head]
				total -= marker.size()
			}
			marker = Message{Role: RoleUser, Marker: true, Turn: max(upTo, marker.Turn),
				Content: fmt.Sprintf("[The context policy removed the oldest messages of this conversation, up to turn %d, "+
					"to fit the context budget.]", max(upTo, marker.Turn))}
			t.droppedUpTo = marker.Turn
			total += marker.size() - freed
			conv = append(append(conv[:head], marker), conv[to:]...)
			newest -= to - head - 1
		}
	}
	stubRange(newest, len(conv))
	t.after = total
	return conv, t, nil
}

// trimmed says whether the policy changed anything.
func (t trim) trimmed() bool { return t.stubbed > 0 || t.dropped > 0 }
