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
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ergon-dev/ergon/test/fakellm"
)

const fallbackKey = "sk-fallback-9876543210"

// withFallback gives the harness's model a fallback served by a fake model of its own.
func withFallback(t *testing.T, h *harness, script fakellm.Script) *fakellm.Server {
	t.Helper()
	llm := fakellm.New(script)
	srv := httptest.NewServer(llm)
	t.Cleanup(srv.Close)
	h.runner.Spec.Model.Name = "primary"
	h.runner.Spec.Fallbacks = []ModelConfig{{Name: "backup", BaseURL: srv.URL + "/v1", Model: "backup-model",
		APIKeyEnv: "ERGON_AGENT_API_KEY_FALLBACK_1"}}
	h.runner.FallbackKeys = []string{fallbackKey}
	return llm
}

func TestA503SwitchesToTheFallbackModel(t *testing.T) {
	h := newHarness(t, fakellm.Script{Rules: []fakellm.Rule{{Reply: fakellm.Reply{Status: 503, Error: "overloaded"}}}}, Spec{})
	backup := withFallback(t, h, fakellm.Script{Rules: []fakellm.Rule{
		{Match: fakellm.Match{Model: "backup-model"}, Reply: fakellm.Reply{Content: "done by the backup"}}}})
	out, tr, f := h.run()
	if f != nil || out != "done by the backup" {
		t.Fatalf("out %q, failure %v", out, f)
	}
	if n := len(h.llm.Requests()); n != 1 || len(h.waits) != 0 {
		t.Errorf("the primary got %d requests and the loop waited %v; want one request and no retry", n, h.waits)
	}
	reqs := backup.Requests()
	if len(reqs) != 1 || reqs[0].Authorization != "Bearer "+fallbackKey {
		t.Fatalf("the backup got %d requests, the first with %q", len(reqs), reqs[0].Authorization)
	}
	var sw *ModelSwitch
	for _, e := range tr.Entries {
		if e.Role == RoleNote && e.Switch != nil {
			sw = e.Switch
			if e.Turn != 1 || !strings.Contains(e.Content, "switched from model primary to its fallback backup") {
				t.Errorf("note = turn %d %q", e.Turn, e.Content)
			}
		}
		if e.Role == RoleAssistant && e.Model != "backup" {
			t.Errorf("the answer's entry names model %q, want backup", e.Model)
		}
	}
	if sw == nil || sw.From != "primary" || sw.To != "backup" || !strings.Contains(sw.Why, "(503): overloaded") {
		t.Fatalf("switch = %+v", sw)
	}
	if tr.Policies["fallback"] != FallbackPolicy {
		t.Errorf("policies = %v", tr.Policies)
	}
	if j := transcriptJSON(t, tr); strings.Contains(j, fallbackKey) || strings.Contains(j, apiKey) {
		t.Error("the transcript holds a key")
	}
}

func TestA429SwitchesOnlyOnceItsRetriesAreUsedUp(t *testing.T) {
	h := newHarness(t, fakellm.Script{Rules: []fakellm.Rule{{Reply: fakellm.Reply{Status: 429, Error: "slow down", RetryAfter: "1"}}}}, Spec{})
	withFallback(t, h, fakellm.Script{Rules: []fakellm.Rule{{Reply: fakellm.Reply{Content: "done"}}}})
	out, tr, f := h.run()
	if f != nil || out != "done" {
		t.Fatalf("out %q, failure %v", out, f)
	}
	if n := len(h.llm.Requests()); n != 4 {
		t.Errorf("the primary got %d requests, want 4 (3 retries)", n)
	}
	if j := transcriptJSON(t, tr); !strings.Contains(j, `"switch":{"from":"primary","to":"backup","why":"the model API is rate limiting (429): slow down (gave up after 4 attempts)"}`) {
		t.Errorf("transcript = %s", j)
	}
}

func TestWhenTheFallbacksFailTooTheStepFails(t *testing.T) {
	h := newHarness(t, fakellm.Script{Rules: []fakellm.Rule{{Reply: fakellm.Reply{Status: 500, Error: "boom"}}}}, Spec{})
	backup := withFallback(t, h, fakellm.Script{Rules: []fakellm.Rule{{Reply: fakellm.Reply{Status: 502, Error: "bad gateway"}}}})
	_, _, f := h.run()
	wantFailure(t, f, ReasonModelUnavailable, "(502): bad gateway (gave up after 4 attempts)")
	if len(h.llm.Requests()) != 1 || len(backup.Requests()) != 4 {
		t.Errorf("requests: primary %d, backup %d; want 1 and 4 (the last model retries)", len(h.llm.Requests()), len(backup.Requests()))
	}
}

func TestRefusalsDoNotSwitchModels(t *testing.T) {
	h := newHarness(t, fakellm.Script{Rules: []fakellm.Rule{{Reply: fakellm.Reply{Status: 401, Error: "invalid api key"}}}}, Spec{})
	backup := withFallback(t, h, fakellm.Script{Rules: []fakellm.Rule{{Reply: fakellm.Reply{Content: "done"}}}})
	_, _, f := h.run()
	wantFailure(t, f, ReasonModelRefused, "(401)")
	if len(backup.Requests()) != 0 {
		t.Error("a refusal switched to the fallback")
	}
}
