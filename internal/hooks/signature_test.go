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

package hooks

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

var (
	testKey = []byte("s3cret-key")
	now     = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	body    = []byte(`{"sprint":{"number":43}}`)
)

const (
	ergon  = ergonv1alpha1.WebhookFormatErgon
	github = ergonv1alpha1.WebhookFormatGitHub
)

func header(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return h
}

func unix(t time.Time) string { return strconv.FormatInt(t.Unix(), 10) }

func TestVerify(t *testing.T) {
	ts := unix(now)
	signed := Sign(testKey, ts, "d-1", body)
	noID := Sign(testKey, ts, "", body)
	later := unix(now.Add(time.Second))
	for _, tc := range []struct {
		name       string
		format     ergonv1alpha1.WebhookFormat
		header     http.Header
		body       []byte
		wantReason string // empty when accepted
		wantKey    string
		wantID     string
		wantUntil  time.Time
	}{
		{
			name:   "an Ergon signature over the timestamp, delivery id and body is accepted, keyed by the id",
			format: ergon, header: header(HeaderSignature, signed, HeaderTimestamp, ts, HeaderDelivery, "d-1"),
			body: body, wantKey: "id:d-1", wantID: "d-1", wantUntil: now.Add(MaxSkew),
		},
		{
			name:   "the format defaults to Ergon's",
			format: "", header: header(HeaderSignature, signed, HeaderTimestamp, ts, HeaderDelivery, "d-1"),
			body: body, wantKey: "id:d-1", wantID: "d-1", wantUntil: now.Add(MaxSkew),
		},
		{
			name:   "without a delivery id the timestamp and signature key the delivery",
			format: ergon, header: header(HeaderSignature, noID, HeaderTimestamp, ts),
			body: body, wantKey: "signature:" + ts + ":" + strings.TrimPrefix(noID, "sha256="), wantUntil: now.Add(MaxSkew),
		},
		{
			name:   "a signature is remembered until its timestamp is stale",
			format: ergon, header: header(HeaderSignature, Sign(testKey, unix(now.Add(-time.Minute)), "d", body),
				HeaderTimestamp, unix(now.Add(-time.Minute)), HeaderDelivery, "d"),
			body: body, wantKey: "id:d", wantID: "d", wantUntil: now.Add(MaxSkew - time.Minute),
		},
		{
			name:       "a captured signature with a new timestamp is refused",
			format:     ergon,
			header:     header(HeaderSignature, signed, HeaderTimestamp, later, HeaderDelivery, "d-1"),
			body:       body,
			wantReason: "does not match",
		},
		{
			name:       "a captured signature with a new delivery id is refused",
			format:     ergon,
			header:     header(HeaderSignature, signed, HeaderTimestamp, ts, HeaderDelivery, "d-2"),
			body:       body,
			wantReason: "does not match",
		},
		{
			name:       "a captured signature without its delivery id is refused",
			format:     ergon,
			header:     header(HeaderSignature, signed, HeaderTimestamp, ts),
			body:       body,
			wantReason: "does not match",
		},
		{
			name:   "a delivery id with a dot is refused, so no byte can move between the id and the body",
			format: ergon, header: header(HeaderSignature, Sign(testKey, ts, "d.1", body), HeaderTimestamp, ts, HeaderDelivery, "d.1"),
			body: body, wantReason: "letters, digits",
		},
		{
			name:       "an Ergon Trigger refuses GitHub's signature over the body alone",
			format:     ergon,
			header:     header(HeaderGitHubSignature, SignGitHub(testKey, body), HeaderGitHubDelivery, "gh-1", HeaderTimestamp, ts),
			body:       body,
			wantReason: HeaderSignature + " is missing",
		},
		{
			name:   "a GitHub Trigger accepts GitHub's signature with its delivery id",
			format: github, header: header(HeaderGitHubSignature, SignGitHub(testKey, body), HeaderGitHubDelivery, "gh-1"),
			body: body, wantKey: "id:gh-1", wantID: "gh-1", wantUntil: now.Add(MaxSkew),
		},
		{
			name:       "a GitHub Trigger refuses Ergon's headers",
			format:     github,
			header:     header(HeaderSignature, signed, HeaderTimestamp, ts, HeaderDelivery, "d-1"),
			body:       body,
			wantReason: HeaderGitHubSignature + " is missing",
		},
		{
			name:       "GitHub's signature without a delivery id is refused",
			format:     github,
			header:     header(HeaderGitHubSignature, SignGitHub(testKey, body)),
			body:       body,
			wantReason: HeaderGitHubDelivery + " is required",
		},
		{
			name:       "GitHub's signature over another body is refused",
			format:     github,
			header:     header(HeaderGitHubSignature, SignGitHub(testKey, body), HeaderGitHubDelivery, "gh-1"),
			body:       []byte(`{}`),
			wantReason: "does not match",
		},
		{
			name:       "an unsigned delivery is refused",
			format:     ergon,
			header:     header(HeaderTimestamp, ts),
			body:       body,
			wantReason: "not signed",
		},
		{
			name:       "a signature with another key is refused",
			format:     ergon,
			header:     header(HeaderSignature, Sign([]byte("other"), ts, "", body), HeaderTimestamp, ts),
			body:       body,
			wantReason: "does not match",
		},
		{
			name:       "a changed body is refused",
			format:     ergon,
			header:     header(HeaderSignature, noID, HeaderTimestamp, ts),
			body:       []byte(`{"sprint":{"number":44}}`),
			wantReason: "does not match",
		},
		{
			name:       "an Ergon signature without a timestamp is refused",
			format:     ergon,
			header:     header(HeaderSignature, Sign(testKey, "", "", body)),
			body:       body,
			wantReason: HeaderTimestamp,
		},
		{
			name:       "a timestamp with a sign is refused: the signed text is exactly the header",
			format:     ergon,
			header:     header(HeaderSignature, Sign(testKey, "+"+ts, "", body), HeaderTimestamp, "+"+ts),
			body:       body,
			wantReason: HeaderTimestamp,
		},
		{
			name:   "a timestamp more than five minutes old is refused",
			format: ergon, header: header(HeaderSignature, Sign(testKey, unix(now.Add(-MaxSkew-time.Second)), "", body),
				HeaderTimestamp, unix(now.Add(-MaxSkew-time.Second))),
			body: body, wantReason: "away from the server's time",
		},
		{
			name:   "a timestamp exactly five minutes old is accepted",
			format: ergon, header: header(HeaderSignature, Sign(testKey, unix(now.Add(-MaxSkew)), "d", body),
				HeaderTimestamp, unix(now.Add(-MaxSkew)), HeaderDelivery, "d"),
			body: body, wantKey: "id:d", wantID: "d", wantUntil: now,
		},
		{
			name:   "a timestamp more than five minutes ahead is refused",
			format: ergon, header: header(HeaderSignature, Sign(testKey, unix(now.Add(6*time.Minute)), "", body),
				HeaderTimestamp, unix(now.Add(6*time.Minute))),
			body: body, wantReason: "away from the server's time",
		},
		{
			name:       "a signature that is not sha256=HEX is refused",
			format:     ergon,
			header:     header(HeaderSignature, "sha1=abc", HeaderTimestamp, ts),
			body:       body,
			wantReason: "must be sha256=",
		},
		{
			name:       "a short hex signature is refused",
			format:     ergon,
			header:     header(HeaderSignature, "sha256=abcd", HeaderTimestamp, ts),
			body:       body,
			wantReason: "64 hex digits",
		},
		{
			name:   "a delivery id longer than 256 bytes is refused",
			format: ergon, header: header(HeaderSignature, Sign(testKey, ts, strings.Repeat("x", 257), body), HeaderTimestamp, ts,
				HeaderDelivery, strings.Repeat("x", 257)),
			body: body, wantReason: "1 to 256",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, refusal := Verify(tc.format, tc.header, tc.body, testKey, now)
			if tc.wantReason != "" {
				if refusal == nil {
					t.Fatalf("accepted, want a refusal saying %q", tc.wantReason)
				}
				if refusal.Status != http.StatusUnauthorized || !strings.Contains(refusal.Message, tc.wantReason) {
					t.Fatalf("refused with %d %q, want 401 saying %q", refusal.Status, refusal.Message, tc.wantReason)
				}
				if bytes.Contains([]byte(refusal.Message), testKey) {
					t.Fatalf("the refusal %q holds the key", refusal.Message)
				}
				return
			}
			if refusal != nil {
				t.Fatalf("refused: %v", refusal)
			}
			if d.Key != tc.wantKey || d.ID != tc.wantID || !d.Until.Equal(tc.wantUntil) || len(d.MAC) != sha256.Size {
				t.Fatalf("delivery %+v, want key %q, id %q, until %v", d, tc.wantKey, tc.wantID, tc.wantUntil)
			}
		})
	}
}

// FuzzVerify feeds arbitrary headers and bodies to the signature check in either format: it
// must never panic, never accept what the key did not sign (the timestamp, the delivery id and
// the body, for Ergon's format), and always accept what it did.
func FuzzVerify(f *testing.F) {
	ts := unix(now)
	f.Add(false, Sign(testKey, ts, "d-1", body), ts, "", "", "d-1", body)
	f.Add(true, "", "", SignGitHub(testKey, body), "gh-1", "", body)
	f.Add(false, "", "", SignGitHub(testKey, body), "gh-1", "", body)
	f.Add(false, "sha256=", "x", "sha256=zz", "", "", []byte{})
	f.Add(false, "sha256="+strings.Repeat("0", 64), "-9223372036854775808", "", "", "", []byte("not json"))
	f.Add(false, Sign(testKey, ts, "", nil), ts, "", "", "", []byte(nil))
	f.Add(false, Sign(testKey, ts, "a", []byte("b.c")), ts, "", "", "a.b", []byte("c"))
	f.Fuzz(func(t *testing.T, githubFormat bool, sig, timestamp, ghSig, ghDelivery, delivery string, payload []byte) {
		format := ergon
		if githubFormat {
			format = github
		}
		h := header(HeaderSignature, sig, HeaderTimestamp, timestamp, HeaderGitHubSignature, ghSig,
			HeaderGitHubDelivery, ghDelivery, HeaderDelivery, delivery)
		d, refusal := Verify(format, h, payload, testKey, now)
		if refusal != nil {
			if refusal.Status != http.StatusUnauthorized || refusal.Message == "" {
				t.Fatalf("a refusal with status %d and reason %q", refusal.Status, refusal.Message)
			}
		} else {
			if d.Key == "" || d.Until.IsZero() {
				t.Fatalf("an accepted delivery without a key or an expiry: %+v", d)
			}
			// An accepted signature is the key's HMAC of exactly what the format covers.
			mac := hmac.New(sha256.New, testKey)
			got := ghSig
			if format == ergon {
				mac.Write([]byte(timestamp + "." + delivery + "."))
				got = sig
			}
			mac.Write(payload)
			if want := "sha256=" + hex.EncodeToString(mac.Sum(nil)); !strings.EqualFold(got, want) {
				t.Fatalf("accepted a signature the key did not make: %q", got)
			}
			if format == ergon && strings.Contains(delivery, ".") {
				t.Fatalf("accepted a delivery id with a dot: %q", delivery)
			}
		}
		// What the key signs, the way the format says, is always accepted.
		if deliveryID.MatchString(delivery) {
			good := header(HeaderSignature, Sign(testKey, ts, delivery, payload), HeaderTimestamp, ts, HeaderDelivery, delivery)
			if _, refusal := Verify(ergon, good, payload, testKey, now); refusal != nil {
				t.Fatalf("refused a good Ergon signature: %v", refusal)
			}
			good = header(HeaderGitHubSignature, SignGitHub(testKey, payload), HeaderGitHubDelivery, delivery)
			if _, refusal := Verify(github, good, payload, testKey, now); refusal != nil {
				t.Fatalf("refused a good GitHub signature: %v", refusal)
			}
		}
	})
}

// TestSignMatchesTheOpenSSLRecipe pins the signatures to what docs/triggers.md tells senders
// to compute: printf '%s.%s.%s' "$ts" "$id" "$body" | openssl dgst -sha256 -hmac "$key" -hex,
// and GitHub's printf '%s' "$body" | openssl dgst -sha256 -hmac "$key" -hex.
func TestSignMatchesTheOpenSSLRecipe(t *testing.T) {
	key, body := []byte("s3cret"), []byte(`{"sprint":{"number":43}}`)
	for _, tc := range []struct{ name, got, fromOpenSSL string }{
		{"Ergon's with a delivery id", Sign(key, "1780315200", "d-1", body),
			"sha256=904c69879da511b8179e8bb5413772206d894ffeb61c7819cad3e7e4875df582"},
		{"Ergon's without a delivery id", Sign(key, "1780315200", "", body),
			"sha256=fa7c404d53b94e1cd9ed6ea14981f6b65762a5379a18e659bcaf598d6fb051d0"},
		{"GitHub's", SignGitHub(key, body),
			"sha256=b28103d1d2b4f4818013d640213294ba34aba9d8f98b91079aecd6ff4d57bb67"},
	} {
		if tc.got != tc.fromOpenSSL {
			t.Errorf("%s: Sign = %s, openssl computed %s", tc.name, tc.got, tc.fromOpenSSL)
		}
	}
}
