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
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

var (
	testKey = []byte("s3cret-key")
	now     = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	body    = []byte(`{"sprint":{"number":43}}`)
)

func header(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return h
}

func TestVerify(t *testing.T) {
	ts := strconv.FormatInt(now.Unix(), 10)
	signed := Sign(testKey, body)
	for _, tc := range []struct {
		name       string
		header     http.Header
		body       []byte
		wantStatus int // 0 when accepted
		wantKey    string
		wantID     string
	}{
		{
			name:   "an Ergon signature over the body is accepted, keyed by its delivery id",
			header: header(HeaderSignature, signed, HeaderTimestamp, ts, HeaderDelivery, "d-1"),
			body:   body, wantKey: "id:d-1", wantID: "d-1",
		},
		{
			name:   "without a delivery id the timestamp and signature key the delivery, so a replay repeats it",
			header: header(HeaderSignature, signed, HeaderTimestamp, ts),
			body:   body, wantKey: "signature:" + ts + ":" + strings.TrimPrefix(signed, "sha256="),
		},
		{
			name:   "the same body sent again later is another delivery",
			header: header(HeaderSignature, signed, HeaderTimestamp, strconv.FormatInt(now.Unix()+1, 10)),
			body:   body, wantKey: "signature:" + strconv.FormatInt(now.Unix()+1, 10) + ":" + strings.TrimPrefix(signed, "sha256="),
		},
		{
			name:   "GitHub's signature over the body with its delivery id is accepted",
			header: header(HeaderGitHubSignature, Sign(testKey, body), HeaderGitHubDelivery, "gh-1"),
			body:   body, wantKey: "id:gh-1", wantID: "gh-1",
		},
		{
			name:       "GitHub's signature without a delivery id is refused",
			header:     header(HeaderGitHubSignature, Sign(testKey, body)),
			body:       body,
			wantStatus: http.StatusUnauthorized,
		},
		{
			name:       "an unsigned delivery is refused",
			header:     header(HeaderTimestamp, ts),
			body:       body,
			wantStatus: http.StatusUnauthorized,
		},
		{
			name:       "a signature with another key is refused",
			header:     header(HeaderSignature, Sign([]byte("other"), body), HeaderTimestamp, ts),
			body:       body,
			wantStatus: http.StatusUnauthorized,
		},
		{
			name:       "a changed body is refused",
			header:     header(HeaderSignature, signed, HeaderTimestamp, ts),
			body:       []byte(`{"sprint":{"number":44}}`),
			wantStatus: http.StatusUnauthorized,
		},
		{
			name:       "an Ergon signature without a timestamp is refused",
			header:     header(HeaderSignature, signed),
			body:       body,
			wantStatus: http.StatusUnauthorized,
		},
		{
			name: "a timestamp more than five minutes old is refused",
			header: header(HeaderSignature, Sign(testKey, body),
				HeaderTimestamp, strconv.FormatInt(now.Add(-5*time.Minute-time.Second).Unix(), 10)),
			body:       body,
			wantStatus: http.StatusUnauthorized,
		},
		{
			name: "a timestamp exactly five minutes old is accepted",
			header: header(HeaderSignature, Sign(testKey, body),
				HeaderTimestamp, strconv.FormatInt(now.Add(-5*time.Minute).Unix(), 10), HeaderDelivery, "d"),
			body: body, wantKey: "id:d", wantID: "d",
		},
		{
			name: "a timestamp more than five minutes ahead is refused",
			header: header(HeaderSignature, Sign(testKey, body),
				HeaderTimestamp, strconv.FormatInt(now.Add(6*time.Minute).Unix(), 10)),
			body:       body,
			wantStatus: http.StatusUnauthorized,
		},
		{
			name:       "a signature that is not sha256=HEX is refused",
			header:     header(HeaderSignature, "sha1=abc", HeaderTimestamp, ts),
			body:       body,
			wantStatus: http.StatusUnauthorized,
		},
		{
			name:       "a short hex signature is refused",
			header:     header(HeaderSignature, "sha256=abcd", HeaderTimestamp, ts),
			body:       body,
			wantStatus: http.StatusUnauthorized,
		},
		{
			name:       "a delivery id longer than 256 bytes is refused",
			header:     header(HeaderSignature, signed, HeaderTimestamp, ts, HeaderDelivery, strings.Repeat("x", 257)),
			body:       body,
			wantStatus: http.StatusBadRequest,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, refusal := Verify(tc.header, tc.body, testKey, now)
			if tc.wantStatus != 0 {
				if refusal == nil {
					t.Fatalf("accepted, want status %d", tc.wantStatus)
				}
				if refusal.Status != tc.wantStatus {
					t.Fatalf("status %d (%s), want %d", refusal.Status, refusal.Message, tc.wantStatus)
				}
				if bytes.Contains([]byte(refusal.Message), testKey) {
					t.Fatalf("the refusal %q holds the key", refusal.Message)
				}
				return
			}
			if refusal != nil {
				t.Fatalf("refused: %v", refusal)
			}
			if d.Key != tc.wantKey || d.ID != tc.wantID {
				t.Fatalf("delivery %+v, want key %q and id %q", d, tc.wantKey, tc.wantID)
			}
		})
	}
}

// FuzzVerify feeds arbitrary headers and bodies to the signature check: it must never panic,
// never accept what the key did not sign, and always accept what it did.
func FuzzVerify(f *testing.F) {
	ts := now.Unix()
	f.Add(Sign(testKey, body), strconv.FormatInt(ts, 10), "", "", "d-1", body)
	f.Add("", "", Sign(testKey, body), "gh-1", "", body)
	f.Add("sha256=", "x", "sha256=zz", "", "", []byte{})
	f.Add("sha256="+strings.Repeat("0", 64), "-9223372036854775808", "", "", "", []byte("not json"))
	f.Add(Sign(testKey, nil), strconv.FormatInt(ts, 10), "", "", "", []byte(nil))
	f.Fuzz(func(t *testing.T, sig, timestamp, ghSig, ghDelivery, delivery string, payload []byte) {
		h := header(HeaderSignature, sig, HeaderTimestamp, timestamp, HeaderGitHubSignature, ghSig,
			HeaderGitHubDelivery, ghDelivery, HeaderDelivery, delivery)
		d, refusal := Verify(h, payload, testKey, now)
		if refusal != nil {
			if refusal.Status != http.StatusUnauthorized && refusal.Status != http.StatusBadRequest {
				t.Fatalf("unexpected status %d", refusal.Status)
			}
			if refusal.Message == "" {
				t.Fatal("a refusal without a reason")
			}
			return
		}
		if d.Key == "" {
			t.Fatal("an accepted delivery without a key")
		}
		// An accepted signature is the key's HMAC of exactly the bytes it claims to cover.
		want := "sha256=" + hex.EncodeToString(macOf(testKey, payload))
		got := h.Get(HeaderGitHubSignature)
		if h.Get(HeaderSignature) != "" {
			got = h.Get(HeaderSignature)
		}
		if !strings.EqualFold(got, want) {
			t.Fatalf("accepted a signature the key did not make: %q", got)
		}
		// What the key signs is always accepted (a timestamp within the window, a short id).
		if len(delivery) <= maxDeliveryID {
			good := header(HeaderSignature, Sign(testKey, payload), HeaderTimestamp, strconv.FormatInt(ts, 10),
				HeaderDelivery, delivery)
			if _, refusal := Verify(good, payload, testKey, now); refusal != nil {
				t.Fatalf("refused a good signature: %v", refusal)
			}
		}
	})
}

// TestSignMatchesTheOpenSSLRecipe pins the signature to what docs/triggers.md tells senders to
// compute: printf '%s' "$body" | openssl dgst -sha256 -hmac "$key" -hex.
func TestSignMatchesTheOpenSSLRecipe(t *testing.T) {
	const fromOpenSSL = "sha256=b28103d1d2b4f4818013d640213294ba34aba9d8f98b91079aecd6ff4d57bb67"
	if got := Sign([]byte("s3cret"), []byte(`{"sprint":{"number":43}}`)); got != fromOpenSSL {
		t.Fatalf("Sign = %s, openssl computed %s", got, fromOpenSSL)
	}
}
