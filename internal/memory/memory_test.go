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

package memory

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

func texts(s Store) []string {
	var out []string
	for _, e := range s.Entries {
		out = append(out, e.Key+"="+e.Text)
	}
	return out
}

func TestApply(t *testing.T) {
	old := Store{Version: Version, Entries: []Entry{
		{Text: "first", Source: "a", At: t0},
		{Key: "team", Text: "platform", Source: "a", At: t0},
		{Text: "third", Source: "b", At: t0},
	}}
	cases := []struct {
		name     string
		store    Store
		writes   []Write
		source   string
		maxBytes int
		want     []string
		res      Result
	}{
		{name: "appends in order", store: old, source: "c", maxBytes: 4096,
			writes: []Write{{Text: "fourth"}, {Text: " fifth \n"}},
			want:   []string{"=first", "team=platform", "=third", "=fourth", "=fifth"}, res: Result{Applied: true, Added: 2}},
		{name: "a key replaces the entry under it, which becomes the newest", store: old, source: "c", maxBytes: 4096,
			writes: []Write{{Key: "team", Text: "payments"}},
			want:   []string{"=first", "=third", "team=payments"}, res: Result{Applied: true, Added: 1, Replaced: 1}},
		{name: "a source applied before changes nothing", store: old, source: "b", maxBytes: 4096,
			writes: []Write{{Text: "again"}},
			want:   []string{"=first", "team=platform", "=third"}, res: Result{}},
		{name: "empty writes are dropped", store: Store{Version: Version}, source: "c", maxBytes: 4096,
			writes: []Write{{Text: "  "}, {Key: "k"}},
			want:   nil, res: Result{Applied: true}},
		{name: "over the cap the oldest go first", store: old, source: "c", maxBytes: Store{Version: Version, Entries: []Entry{
			{Text: "third", Source: "b", At: t0}, {Text: "fourth", Source: "c", At: t0}}}.Size(),
			writes: []Write{{Text: "fourth"}},
			want:   []string{"=third", "=fourth"}, res: Result{Applied: true, Added: 1, Evicted: 2}},
		{name: "a write alone over the cap is not kept", store: old, source: "c", maxBytes: 100,
			writes: []Write{{Text: strings.Repeat("x", 200)}},
			want:   nil, res: Result{Applied: true, Added: 1, Evicted: 4}},
		{name: "secrets are redacted", store: Store{Version: Version}, source: "c", maxBytes: 4096,
			writes: []Write{{Text: "use token=abc123def456 for the tracker"}, {Text: "plain"}},
			want:   []string{"=use token=[REDACTED] for the tracker", "=plain"}, res: Result{Applied: true, Added: 2, Redacted: 1}},
		{name: "long texts and keys are cut", store: Store{Version: Version}, source: "c", maxBytes: 8192,
			writes: []Write{{Key: strings.Repeat("k", 100), Text: strings.Repeat("é", 1500)}},
			want:   []string{strings.Repeat("k", MaxKeyBytes) + "=" + strings.Repeat("é", MaxTextBytes/2)}, res: Result{Applied: true, Added: 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := fmt.Sprint(texts(tc.store))
			got, res := Apply(tc.store, tc.writes, tc.source, t0.Add(time.Hour), tc.maxBytes)
			if fmt.Sprint(texts(got)) != fmt.Sprint(tc.want) {
				t.Errorf("entries = %q, want %q", texts(got), tc.want)
			}
			if res != tc.res {
				t.Errorf("result = %+v, want %+v", res, tc.res)
			}
			if got.Size() > tc.maxBytes {
				t.Errorf("the store has %d bytes, over its cap of %d", got.Size(), tc.maxBytes)
			}
			if fmt.Sprint(texts(tc.store)) != before {
				t.Errorf("Apply changed its input")
			}
			again, res2 := Apply(got, tc.writes, tc.source, t0.Add(2*time.Hour), tc.maxBytes)
			kept := false
			for _, e := range got.Entries {
				kept = kept || e.Source == tc.source
			}
			if kept && (res2.Applied || fmt.Sprint(texts(again)) != fmt.Sprint(texts(got))) {
				t.Errorf("applying the same source twice changed the store: %q", texts(again))
			}
		})
	}
}

func TestRedact(t *testing.T) {
	cases := []struct{ in, want string }{
		{"nothing secret here", "nothing secret here"},
		{"key sk-proj-abcdefghijklmnopqrstuv end", "key [REDACTED] end"},
		{"Authorization: Bearer abcdefgh.ijkl-mnop", "Authorization: [REDACTED]"},
		{"ghp_" + strings.Repeat("a", 36), "[REDACTED]"},
		{"id AKIAABCDEFGHIJKLMNOP.", "id [REDACTED]."},
		{"xoxb-1234567890-abcdef", "[REDACTED]"},
		{"jwt eyJhbGciOiJIUzI1.eyJzdWIiOiIxMjM0.SflKxwRJSMeKKF2Q", "jwt [REDACTED]"},
		{`password: "hunter2 x"`, `password: [REDACTED]`},
		{"API_KEY=abc", "API_KEY=[REDACTED]"},
		{"-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----\nafter", "[REDACTED]\nafter"},
		{"the token budget is 500", "the token budget is 500"},
	}
	for _, tc := range cases {
		if got := Redact(tc.in); got != tc.want {
			t.Errorf("Redact(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestReadAndRender(t *testing.T) {
	s, err := Read(nil)
	if err != nil || len(s.Entries) != 0 {
		t.Fatalf("empty: %+v, %v", s, err)
	}
	s, _ = Apply(s, []Write{{Key: "lead", Text: "Ada"}, {Text: "line one\nline two"}}, "x", t0, 4096)
	back, err := Read(s.Marshal())
	if err != nil || fmt.Sprint(texts(back)) != fmt.Sprint(texts(s)) {
		t.Fatalf("read back %+v, %v", back, err)
	}
	if got, want := Render(back.Entries), "- lead: Ada\n- line one\n  line two"; got != want {
		t.Errorf("Render = %q, want %q", got, want)
	}
	if _, err := Read([]byte(`{"version":2}`)); err == nil || !strings.Contains(err.Error(), "version 2") {
		t.Errorf("another version: %v", err)
	}
	if _, err := Read([]byte(`{`)); err == nil {
		t.Error("bad JSON is read")
	}
}
