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
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Headers of a delivery.
const (
	// HeaderSignature is Ergon's signature: sha256=HEX, the HMAC-SHA256 of the raw body.
	HeaderSignature = "X-Ergon-Signature"
	// HeaderTimestamp is the unix time in seconds the sender sent the delivery at. It is
	// required with HeaderSignature; outside the window around the server's time it is
	// refused.
	HeaderTimestamp = "X-Ergon-Timestamp"
	// HeaderDelivery identifies a delivery; a retry sends the same one.
	HeaderDelivery = "X-Ergon-Delivery"
	// HeaderGitHubSignature is GitHub's signature: sha256=HEX, the HMAC-SHA256 of the raw body.
	HeaderGitHubSignature = "X-Hub-Signature-256"
	// HeaderGitHubDelivery is GitHub's delivery id, required with its signature.
	HeaderGitHubDelivery = "X-GitHub-Delivery"
)

const (
	// MaxBodyBytes is the largest body accepted.
	MaxBodyBytes = 1 << 20
	// MaxSkew is how far a timestamp may be from the manager's clock, either way.
	MaxSkew = 5 * time.Minute
	// maxDeliveryID bounds a delivery id.
	maxDeliveryID = 256
)

// Refusal is a request refused with an HTTP status and a reason for the sender.
type Refusal struct {
	Status  int
	Message string
}

func (r *Refusal) Error() string {
	return fmt.Sprintf("%d: %s", r.Status, r.Message)
}

func refuse(status int, format string, args ...any) *Refusal {
	return &Refusal{Status: status, Message: fmt.Sprintf(format, args...)}
}

// Delivery is what a verified request identifies itself as.
type Delivery struct {
	// ID is the sender's delivery id, or empty.
	ID string
	// Key identifies the delivery for its Run's name: the delivery id when there is one,
	// else the timestamp and the signature, which a replay of the request repeats.
	Key string
}

// Sign returns the value of HeaderSignature, or of GitHub's HeaderGitHubSignature, for a
// body: sha256= and the hex HMAC-SHA256 of the raw body. It is what a sender computes, and
// what tests and the bench send.
func Sign(key, body []byte) string {
	return "sha256=" + hex.EncodeToString(macOf(key, body))
}

// Verify checks a delivery's signature against key, in constant time, and its timestamp
// against now. The signature covers the raw body, as the API contract (and GitHub's) has it.
// Ergon's requires a timestamp within MaxSkew; GitHub's sends none, so its delivery id is
// required. A retried or replayed request finds the Run the first one started: by its
// delivery id, or by its timestamp and signature. Neither header is signed, so whoever holds
// a captured request can resend it with new ones; that is what the contract's body-only
// signature cannot prevent (TLS in front, and the per-Trigger rate limit, bound it).
func Verify(header http.Header, body, key []byte, now time.Time) (Delivery, *Refusal) {
	id := header.Get(HeaderDelivery)
	if id == "" {
		id = header.Get(HeaderGitHubDelivery)
	}
	if len(id) > maxDeliveryID {
		return Delivery{}, refuse(http.StatusBadRequest, "the delivery id is longer than %d bytes", maxDeliveryID)
	}
	if sig := header.Get(HeaderSignature); sig != "" {
		ts := header.Get(HeaderTimestamp)
		if ts == "" {
			return Delivery{}, refuse(http.StatusUnauthorized,
				"%s is required with %s: the unix time in seconds the body was signed at", HeaderTimestamp, HeaderSignature)
		}
		signedAt, err := strconv.ParseInt(ts, 10, 64)
		if err != nil {
			return Delivery{}, refuse(http.StatusUnauthorized, "%s is not a unix time in seconds", HeaderTimestamp)
		}
		if skew := now.Sub(time.Unix(signedAt, 0)); skew > MaxSkew || skew < -MaxSkew {
			return Delivery{}, refuse(http.StatusUnauthorized,
				"%s is %s away from the server's time, more than the %s allowed; sign the delivery again",
				HeaderTimestamp, skew.Round(time.Second).Abs(), MaxSkew)
		}
		mac, refusal := decodeSignature(HeaderSignature, sig)
		if refusal != nil {
			return Delivery{}, refusal
		}
		if !hmac.Equal(mac, macOf(key, body)) {
			return Delivery{}, refuse(http.StatusUnauthorized,
				"%s does not match: sign the raw body with the Trigger's key", HeaderSignature)
		}
		if id == "" {
			return Delivery{Key: "signature:" + ts + ":" + hex.EncodeToString(mac)}, nil
		}
		return Delivery{ID: id, Key: "id:" + id}, nil
	}
	if sig := header.Get(HeaderGitHubSignature); sig != "" {
		mac, refusal := decodeSignature(HeaderGitHubSignature, sig)
		if refusal != nil {
			return Delivery{}, refusal
		}
		if !hmac.Equal(mac, macOf(key, body)) {
			return Delivery{}, refuse(http.StatusUnauthorized,
				"%s does not match: sign the raw body with the Trigger's key", HeaderGitHubSignature)
		}
		if id == "" {
			return Delivery{}, refuse(http.StatusUnauthorized,
				"%s is required with %s, so a replayed delivery starts nothing new", HeaderGitHubDelivery, HeaderGitHubSignature)
		}
		return Delivery{ID: id, Key: "id:" + id}, nil
	}
	return Delivery{}, refuse(http.StatusUnauthorized, "the delivery is not signed: send %s and %s (or GitHub's %s)",
		HeaderSignature, HeaderTimestamp, HeaderGitHubSignature)
}

// decodeSignature reads sha256=HEX.
func decodeSignature(header, value string) ([]byte, *Refusal) {
	hexMAC, ok := strings.CutPrefix(value, "sha256=")
	if !ok {
		return nil, refuse(http.StatusUnauthorized, "%s must be sha256= and the hex HMAC-SHA256", header)
	}
	mac, err := hex.DecodeString(hexMAC)
	if err != nil || len(mac) != sha256.Size {
		return nil, refuse(http.StatusUnauthorized, "%s must be sha256= and 64 hex digits", header)
	}
	return mac, nil
}

func macOf(key, body []byte) []byte {
	mac := hmac.New(sha256.New, key)
	mac.Write(body)
	return mac.Sum(nil)
}
