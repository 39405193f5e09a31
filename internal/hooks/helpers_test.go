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
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"time"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

// SignGitHub returns the value of HeaderGitHubSignature for a body, as GitHub computes it:
// sha256= and the hex HMAC-SHA256 of the raw body.
func SignGitHub(key, body []byte) string {
	mac := hmac.New(sha256.New, key)
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// Verify checks a whole delivery, signed the way format says, against key and now. The
// server does the same while it streams the body; Verify is for callers that hold the body.
// The refusal's message says why, for the server's log: the sender is only told 401.
func Verify(format ergonv1alpha1.WebhookFormat, header http.Header, body, key []byte, now time.Time) (Delivery, *Refusal) {
	c := readClaim(format, header)
	mac := c.newMAC(key)
	mac.Write(body)
	d, problem := c.check(mac.Sum(nil), now)
	if problem != "" {
		return Delivery{}, refuse(http.StatusUnauthorized, "%s", problem)
	}
	return d, nil
}

// inFlight returns the bodies being read, in all and for path.
func (b *bodySlots) inFlight(path string) (int, int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.total, b.byPath[path]
}

// len returns how many signatures are remembered.
func (r *replays) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.until)
}
