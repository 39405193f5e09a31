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
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Operations a Grant allows.
const (
	OpGet = "get"
	OpPut = "put"
)

// Grant allows one operation on one key until it expires. The manager signs it, and a step
// pod presents it in the path of its request to the manager's artifact endpoint: that is the
// filesystem store's presigned URL.
type Grant struct {
	Op  string `json:"op"`
	Key string `json:"key"`
	// Size and SHA256 (hex) are what a put must write exactly, and what a get reads.
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
	// Expires is a Unix time in seconds.
	Expires int64 `json:"exp"`
}

// Signer signs and checks Grants with a key only the manager holds. A new manager has a new
// key: the grants of the old one stop working, and a step asks for new ones.
type Signer struct{ key []byte }

// NewSigner makes a Signer with a random key.
func NewSigner() (*Signer, error) {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	return &Signer{key: key}, nil
}

// Sign returns the Grant as a token: its JSON and its MAC, both base64url, joined by a dot.
func (s *Signer) Sign(g Grant) (string, error) {
	b, err := json.Marshal(g)
	if err != nil {
		return "", err
	}
	body := base64.RawURLEncoding.EncodeToString(b)
	return body + "." + base64.RawURLEncoding.EncodeToString(s.mac(body)), nil
}

func (s *Signer) mac(body string) []byte {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte("ergon-artifact-grant/v1\n" + body))
	return m.Sum(nil)
}

// ErrExpired is the error of a token past its time.
var ErrExpired = errors.New("the grant has expired: ask for a new one")

// Verify checks a token's MAC, then its time and content, and returns its Grant.
func (s *Signer) Verify(token string, now time.Time) (Grant, error) {
	body, sig, ok := strings.Cut(token, ".")
	if !ok {
		return Grant{}, errors.New("not a grant")
	}
	mac, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || !hmac.Equal(mac, s.mac(body)) {
		return Grant{}, errors.New("not a grant of this manager")
	}
	b, err := base64.RawURLEncoding.DecodeString(body)
	if err != nil {
		return Grant{}, errors.New("not a grant")
	}
	var g Grant
	if err := json.Unmarshal(b, &g); err != nil {
		return Grant{}, errors.New("not a grant")
	}
	if now.Unix() >= g.Expires {
		return Grant{}, ErrExpired
	}
	if err := g.check(); err != nil {
		return Grant{}, err
	}
	return g, nil
}

func (g Grant) check() error {
	if g.Op != OpGet && g.Op != OpPut {
		return fmt.Errorf("the grant's operation %q is neither get nor put", g.Op)
	}
	if _, err := ParseKey(g.Key); err != nil {
		return err
	}
	if g.Size < 0 {
		return errors.New("the grant's size is negative")
	}
	if b, err := hex.DecodeString(g.SHA256); err != nil || len(b) != sha256.Size {
		return errors.New("the grant's sha256 is not 64 hex digits")
	}
	return nil
}
