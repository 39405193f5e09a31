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

package artifacts

import (
	"strings"
	"testing"
	"time"
)

func TestKeyRoundTrip(t *testing.T) {
	for _, ref := range []Ref{
		{NamespaceUID: "ns-1", RunUID: "run-1", Step: "render", Instance: -1, Attempt: 1, PodUID: "pod-1", Name: "report.md"},
		{NamespaceUID: "ns-1", RunUID: "run-1", Step: "fan", Instance: 12, Attempt: 3, PodUID: "pod-2", Name: "a"},
	} {
		got, err := ParseKey(ref.Key())
		if err != nil || got != ref {
			t.Errorf("ParseKey(%q) = %+v, %v; want %+v", ref.Key(), got, err, ref)
		}
		if !strings.HasPrefix(ref.Key(), RunPrefix(ref.NamespaceUID, ref.RunUID)) {
			t.Errorf("%q does not begin with its Run's prefix", ref.Key())
		}
	}
	for _, bad := range []string{"", "v1/a/b/c/-/1.p", "v2/a/b/c/-/1.p/n", "v1/a/b/c/x/1.p/n", "v1/a/b/c/-/0.p/n",
		"v1/a/b/c/-/1/n", "v1/a/b/c/-/1.p/../x", "v1//b/c/-/1.p/n"} {
		if _, err := ParseKey(bad); err == nil {
			t.Errorf("ParseKey(%q) took it", bad)
		}
	}
}

func TestValidName(t *testing.T) {
	for name, ok := range map[string]bool{
		"report.md": true, "a": true, "diagram-1.svg": true, "data_set.tar.gz": true,
		"": false, "Report.md": false, ".hidden": false, "a/b": false, "a..b": false, "end.": false,
		strings.Repeat("a", 63): true, strings.Repeat("a", 64): false,
	} {
		if err := ValidName(name); (err == nil) != ok {
			t.Errorf("ValidName(%q) = %v, want ok=%v", name, err, ok)
		}
	}
}

func TestGrant(t *testing.T) {
	s, err := NewSigner()
	if err != nil {
		t.Fatal(err)
	}
	other, _ := NewSigner()
	now := time.Unix(1_800_000_000, 0)
	g := Grant{Op: OpPut, Key: "v1/n/r/s/-/1.p/a", Size: 3, SHA256: strings.Repeat("ab", 32), Expires: now.Add(time.Minute).Unix()}
	token, err := s.Sign(g)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s.Verify(token, now); err != nil || got != g {
		t.Fatalf("Verify = %+v, %v", got, err)
	}
	if _, err := s.Verify(token, now.Add(time.Minute)); err != ErrExpired {
		t.Errorf("an expired grant: %v", err)
	}
	if _, err := other.Verify(token, now); err == nil {
		t.Error("another manager's key took the grant")
	}
	// Another key, signed with the same body: the MAC no longer matches.
	body, sig, _ := strings.Cut(token, ".")
	g2 := g
	g2.Key = "v1/n/r/other/-/1.p/a"
	t2, _ := s.Sign(g2)
	body2, _, _ := strings.Cut(t2, ".")
	for _, bad := range []string{body2 + "." + sig, body + "." + sig[1:], body, "", "." + sig} {
		if _, err := s.Verify(bad, now); err == nil {
			t.Errorf("Verify(%q) took a forged grant", bad)
		}
	}
	for _, g := range []Grant{
		{Op: "delete", Key: g.Key, SHA256: g.SHA256, Expires: g.Expires},
		{Op: OpGet, Key: "not/a/key", SHA256: g.SHA256, Expires: g.Expires},
		{Op: OpGet, Key: g.Key, SHA256: "xyz", Expires: g.Expires},
		{Op: OpGet, Key: g.Key, Size: -1, SHA256: g.SHA256, Expires: g.Expires},
	} {
		token, _ := s.Sign(g)
		if _, err := s.Verify(token, now); err == nil {
			t.Errorf("Verify took the malformed grant %+v", g)
		}
	}
}
