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
	"hash"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

// Headers of a delivery.
const (
	// HeaderSignature is Ergon's signature: sha256=HEX, the HMAC-SHA256 of
	// TIMESTAMP "." DELIVERY "." BODY (DELIVERY empty when the delivery has no id).
	HeaderSignature = "X-Ergon-Signature"
	// HeaderTimestamp is the unix time in seconds the sender signed the delivery at. Outside
	// the window around the server's time it is refused.
	HeaderTimestamp = "X-Ergon-Timestamp"
	// HeaderDelivery identifies a delivery; a retry sends the same one, signed again.
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
)

// deliveryID is what a delivery id may be: no '.', so the signed TIMESTAMP.DELIVERY.BODY
// splits one way only.
var deliveryID = regexp.MustCompile(`^[A-Za-z0-9_:-]{1,256}$`)

// timestamp is a unix time in seconds, digits only (no sign, no spaces: the signed text is
// exactly the header's).
var timestamp = regexp.MustCompile(`^[0-9]{1,12}$`)

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
	// else the timestamp and the signature.
	Key string
	// MAC is the signature, which the server remembers to refuse a replay.
	MAC []byte
	// Until is when the server may forget the signature: a replay after it is refused anyway
	// (Ergon's timestamp is stale), or is beyond what the format can refuse (GitHub's).
	Until time.Time
}

// claim is what a request's headers say it is, read the way the Trigger's format reads them.
type claim struct {
	format    ergonv1alpha1.WebhookFormat
	timestamp string
	id        string
	mac       []byte
	// problem says why the headers do not make a signed delivery of the format; empty when
	// they do. The body is read and hashed all the same, so the answer takes as long.
	problem string
}

// readClaim reads the headers of format; any other format's headers are ignored, so an Ergon
// Trigger cannot be sent a delivery signed GitHub's way (which covers the body only).
func readClaim(format ergonv1alpha1.WebhookFormat, header http.Header) claim {
	if format == ergonv1alpha1.WebhookFormatGitHub {
		c := claim{format: format, id: header.Get(HeaderGitHubDelivery)}
		c.mac, c.problem = decodeSignature(HeaderGitHubSignature, header.Get(HeaderGitHubSignature))
		switch {
		case c.problem != "":
		case c.id == "":
			c.problem = HeaderGitHubDelivery + " is required with " + HeaderGitHubSignature
		case !deliveryID.MatchString(c.id):
			c.problem = HeaderGitHubDelivery + " must be 1 to 256 letters, digits, '-', '_' or ':'"
		}
		return c
	}
	c := claim{format: ergonv1alpha1.WebhookFormatErgon, timestamp: header.Get(HeaderTimestamp), id: header.Get(HeaderDelivery)}
	c.mac, c.problem = decodeSignature(HeaderSignature, header.Get(HeaderSignature))
	switch {
	case c.problem != "":
	case !timestamp.MatchString(c.timestamp):
		c.problem = HeaderTimestamp + " must be the unix time in seconds the delivery was signed at"
	case c.id != "" && !deliveryID.MatchString(c.id):
		c.problem = HeaderDelivery + " must be 1 to 256 letters, digits, '-', '_' or ':'"
	}
	return c
}

// newMAC starts the HMAC the claim's signature should be: the body is written to it next.
func (c claim) newMAC(key []byte) hash.Hash {
	mac := hmac.New(sha256.New, key)
	if c.format != ergonv1alpha1.WebhookFormatGitHub {
		mac.Write([]byte(c.timestamp + "." + c.id + "."))
	}
	return mac
}

// check compares the claim's signature with sum, the HMAC of what it should cover, in
// constant time, and its timestamp with now. It returns the delivery, or why it is refused.
func (c claim) check(sum []byte, now time.Time) (Delivery, string) {
	if c.problem != "" {
		return Delivery{}, c.problem
	}
	if !hmac.Equal(c.mac, sum) {
		if c.format == ergonv1alpha1.WebhookFormatGitHub {
			return Delivery{}, HeaderGitHubSignature + " does not match the body signed with the Trigger's key"
		}
		return Delivery{}, HeaderSignature + " does not match TIMESTAMP.DELIVERY.BODY signed with the Trigger's key"
	}
	if c.format == ergonv1alpha1.WebhookFormatGitHub {
		return Delivery{ID: c.id, Key: "id:" + c.id, MAC: c.mac, Until: now.Add(MaxSkew)}, ""
	}
	secs, _ := strconv.ParseInt(c.timestamp, 10, 64) // digits only, 12 at most: it parses
	signedAt := time.Unix(secs, 0)
	if skew := now.Sub(signedAt); skew > MaxSkew || skew < -MaxSkew {
		return Delivery{}, fmt.Sprintf("%s is %s away from the server's time, more than the %s allowed",
			HeaderTimestamp, skew.Round(time.Second).Abs(), MaxSkew)
	}
	d := Delivery{ID: c.id, Key: "id:" + c.id, MAC: c.mac, Until: signedAt.Add(MaxSkew)}
	if c.id == "" {
		d.Key = "signature:" + c.timestamp + ":" + hex.EncodeToString(c.mac)
	}
	return d, ""
}

// Sign returns the value of HeaderSignature for a delivery: sha256= and the hex HMAC-SHA256,
// with key, of timestamp (unix seconds), ".", the delivery id (empty for none), "." and the
// raw body. It is what a sender computes, and what tests and the bench send.
func Sign(key []byte, timestamp, delivery string, body []byte) string {
	mac := claim{format: ergonv1alpha1.WebhookFormatErgon, timestamp: timestamp, id: delivery}.newMAC(key)
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// decodeSignature reads sha256=HEX, or says what is wrong with it.
func decodeSignature(header, value string) ([]byte, string) {
	if value == "" {
		return nil, "the delivery is not signed: " + header + " is missing"
	}
	hexMAC, ok := strings.CutPrefix(value, "sha256=")
	if !ok {
		return nil, header + " must be sha256= and the hex HMAC-SHA256"
	}
	mac, err := hex.DecodeString(hexMAC)
	if err != nil || len(mac) != sha256.Size {
		return nil, header + " must be sha256= and 64 hex digits"
	}
	return mac, ""
}
