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

package fakellm

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func post(t *testing.T, url, body string) (int, http.Header, string) {
	t.Helper()
	resp, err := http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

func TestAScriptFileDrivesTheServer(t *testing.T) {
	path := filepath.Join(t.TempDir(), "script.yaml")
	script := `rules:
- match: {lastRole: tool}
  reply: {content: done}
- match: {lastContains: busy}
  times: 1
  reply: {status: 429, error: slow down, retryAfter: "3"}
- reply:
    toolCalls: [{name: http_fetch, arguments: '{"url":"http://x"}'}]
routes:
  /data: {contentType: application/json, body: '{"a":1}'}
`
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(New(*s))
	defer srv.Close()

	code, h, body := post(t, srv.URL, `{"model":"m","messages":[{"role":"user","content":"busy?"}]}`)
	if code != 429 || h.Get("Retry-After") != "3" || !strings.Contains(body, "slow down") {
		t.Fatalf("first busy request: %d %q %s", code, h.Get("Retry-After"), body)
	}
	// times: 1 — the same conversation now falls through to the tool call.
	code, _, body = post(t, srv.URL, `{"model":"m","messages":[{"role":"user","content":"busy?"}]}`)
	var c struct {
		Choices []struct {
			FinishReason string `json:"finish_reason"`
			Message      struct {
				ToolCalls []struct {
					Function struct{ Name string } `json:"function"`
				} `json:"tool_calls"`
			} `json:"message"`
		} `json:"choices"`
		Usage struct {
			Total int `json:"total_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal([]byte(body), &c); err != nil || code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	if c.Choices[0].FinishReason != "tool_calls" || c.Choices[0].Message.ToolCalls[0].Function.Name != "http_fetch" || c.Usage.Total == 0 {
		t.Fatalf("second request: %s", body)
	}
	_, _, body = post(t, srv.URL, `{"model":"m","messages":[{"role":"user","content":"x"},{"role":"tool","content":"r","tool_call_id":"c"}]}`)
	if !strings.Contains(body, `"content":"done"`) {
		t.Fatalf("after a tool result: %s", body)
	}
	resp, err := http.Get(srv.URL + "/data")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if string(b) != `{"a":1}` || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("route: %s", b)
	}
	if n := len(New(*s).Requests()); n != 0 {
		t.Fatalf("a new server has %d requests", n)
	}
}

func TestAnUnknownScriptFieldIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "script.yaml")
	if err := os.WriteFile(path, []byte("rules: [{reply: {contnet: typo}}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), "contnet") {
		t.Fatalf("err = %v; want the unknown field named", err)
	}
}

func TestEchoLastRepeatsWhatTheModelWasJustTold(t *testing.T) {
	srv := httptest.NewServer(New(Script{Rules: []Rule{{Match: Match{LastRole: "tool"}, Reply: Reply{Content: "told: ", EchoLast: true}}}}))
	defer srv.Close()
	code, _, body := post(t, srv.URL, `{"model":"m","messages":[{"role":"user","content":"x"},`+
		`{"role":"tool","content":"{\"region\":\"eu-7\"}","tool_call_id":"c"}]}`)
	if code != 200 || !strings.Contains(body, `"content":"told: {\"region\":\"eu-7\"}"`) {
		t.Fatalf("%d %s", code, body)
	}
}
