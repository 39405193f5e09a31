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
	"encoding/json"
	"reflect"
	"testing"
)

func TestCallsOfAChatAreAttachedToTheReplyTheyLedTo(t *testing.T) {
	// A chat: the agent fetched a page and replied; dana wrote; the agent asked a person,
	// failed a fetch, and its last call waits for its result.
	const record = `{"entries": [
	  {"role": "system", "content": "be brief"},
	  {"role": "user", "content": "Help."},
	  {"role": "assistant", "toolCalls": [{"id": "c1", "name": "http_fetch", "arguments": "{\"url\":\"http://a\"}"}]},
	  {"role": "tool", "toolCallID": "c1", "tool": "http_fetch", "content": "page"},
	  {"role": "assistant", "content": "How can I help?"},
	  {"role": "user", "from": "dana", "content": "Deploy v2."},
	  {"role": "assistant", "toolCalls": [{"id": "c2", "name": "ask_human", "arguments": "{}"},
	    {"id": "c3", "name": "http_fetch", "arguments": "{\"url\":\"http://b\"}"}]},
	  {"role": "tool", "toolCallID": "c3", "tool": "http_fetch", "content": "error: refused", "error": true},
	  {"role": "tool", "toolCallID": "c2", "tool": "ask_human", "content": "{\"ok\":true}"},
	  {"role": "assistant", "toolCalls": [{"id": "c4", "name": "deploy", "arguments": "{}"}]}
	]}`
	var e entries
	if err := json.Unmarshal([]byte(record), &e); err != nil {
		t.Fatal(err)
	}
	want := []toolCall{
		{Before: 0, Name: "http_fetch", Arguments: `{"url":"http://a"}`, Result: "page", Done: true},
		{Before: 1, Name: "ask_human", Arguments: `{}`, Result: `{"ok":true}`, Done: true},
		{Before: 1, Name: "http_fetch", Arguments: `{"url":"http://b"}`, Result: "error: refused", Error: true, Done: true},
		{Before: 1, Name: "deploy", Arguments: `{}`},
	}
	if got := callsOf(e); !reflect.DeepEqual(got, want) {
		t.Errorf("calls = %+v\nwant %+v", got, want)
	}
}
