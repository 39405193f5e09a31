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

package console

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ergon-dev/ergon/internal/identity"
)

const (
	// tokenCookie keeps the viewer's bearer token. The __Host- prefix makes browsers refuse it
	// unless it is Secure, has Path=/ and no Domain, so no other host can set or read it.
	tokenCookie = "__Host-ergon-token"
	// csrfHeader carries the CSRF token on every write.
	csrfHeader = "X-Ergon-CSRF"
	// maxTokenBytes bounds a pasted token; service account and OIDC tokens are a few KiB.
	maxTokenBytes = 16 << 10
)

// viewer is the person behind one request, with clients that act as them: their bearer token
// goes to the API server unchanged, so RBAC and admission see them, never the console.
type viewer struct {
	token    string // empty in read-only mode
	readOnly bool
	cfg      *rest.Config
	c        client.WithWatch
	cs       kubernetes.Interface
}

var errNoSession = errors.New("not logged in: paste a token on the login page")

// tokenOf finds the viewer's token: the trusted proxy header when one is configured, else the
// cookie set at login. Tokens are never read from URLs or bodies other than the login form.
func (s *Server) tokenOf(r *http.Request) string {
	if s.cfg.ProxyHeader != "" {
		t := strings.TrimSpace(r.Header.Get(s.cfg.ProxyHeader))
		return strings.TrimSpace(strings.TrimPrefix(t, "Bearer "))
	}
	if c, err := r.Cookie(tokenCookie); err == nil {
		return c.Value
	}
	return ""
}

// viewerOf builds the clients of the request's viewer. Every call creates fresh wrappers but
// shares client-go's cached TLS transport, so a request costs no new connection pool.
func (s *Server) viewerOf(r *http.Request) (*viewer, error) {
	if s.cfg.ReadOnly != nil {
		return s.clientsFor(rest.CopyConfig(s.cfg.ReadOnly), "", true)
	}
	token := s.tokenOf(r)
	if token == "" {
		return nil, errNoSession
	}
	return s.clientsFor(s.configFor(token), token, false)
}

// configFor is the API server's address and CA with the viewer's token and nothing else of
// the console's own credentials.
func (s *Server) configFor(token string) *rest.Config {
	return identity.BearerConfig(s.cfg.APIServer, token, "ergon-console")
}

func (s *Server) clientsFor(cfg *rest.Config, token string, readOnly bool) (*viewer, error) {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: s.scheme, Mapper: s.mapper, HTTPClient: hc})
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, err
	}
	return &viewer{token: token, readOnly: readOnly, cfg: cfg, c: c, cs: cs}, nil
}

// csrfToken is the synchronizer token of a session: an HMAC of its bearer token under the
// server's key, so it needs no server-side state and is worthless for another session.
func (s *Server) csrfToken(token string) string {
	m := hmac.New(sha256.New, s.cfg.Key)
	m.Write([]byte("csrf\x00" + token))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// sessionID names a session in logs and stream limits without revealing its token.
func (s *Server) sessionID(token string) string {
	m := hmac.New(sha256.New, s.cfg.Key)
	m.Write([]byte("session\x00" + token))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))[:16]
}

// sameOrigin reports whether a request that changes something comes from a page of this
// console: the Origin header, which browsers send on every POST, names this host; a request
// without it is refused too (Sec-Fetch-Site says same-origin when an old browser leaves it out).
func sameOrigin(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return r.Header.Get("Sec-Fetch-Site") == "same-origin"
	}
	u, err := url.Parse(origin)
	if err != nil {
		return false
	}
	host := r.Host
	if fh := r.Header.Get("X-Forwarded-Host"); fh != "" {
		host = fh
	}
	return strings.EqualFold(u.Host, host)
}

// checkWrite refuses a write that is not from this console's own page: no same origin, no
// JSON body, or a CSRF token that is not the session's.
func (s *Server) checkWrite(r *http.Request, v *viewer) error {
	if r.Method != http.MethodPost {
		return errors.New("writes are POST requests")
	}
	if !sameOrigin(r) {
		return errors.New("cross-origin request refused: the Origin header does not name this console")
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		return errors.New("a write sends application/json")
	}
	if v.readOnly {
		return errors.New("this console is read-only: it shows Ergon with its own view rights and changes nothing")
	}
	got := r.Header.Get(csrfHeader)
	if got == "" || !hmac.Equal([]byte(got), []byte(s.csrfToken(v.token))) {
		return errors.New("missing or wrong CSRF token: reload the page")
	}
	return nil
}

// whoAmI asks the API server who a viewer is; it is also how a pasted token is checked.
func whoAmI(r *http.Request, v *viewer) (authenticationv1.UserInfo, error) {
	rev, err := v.cs.AuthenticationV1().SelfSubjectReviews().Create(r.Context(), &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return authenticationv1.UserInfo{}, err
	}
	return rev.Status.UserInfo, nil
}

// login checks a pasted token with the API server and keeps it in the session cookie.
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	if s.cfg.ReadOnly != nil || s.cfg.ProxyHeader != "" {
		writeError(w, http.StatusBadRequest, errors.New("this console logs no one in: its identity comes from "+s.mode()))
		return
	}
	if r.Method != http.MethodPost || !sameOrigin(r) {
		writeError(w, http.StatusForbidden, errors.New("log in from the console's own login page"))
		return
	}
	var body struct {
		Token string `json:"token"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxTokenBytes)).Decode(&body); err != nil {
		writeError(w, http.StatusBadRequest, errors.New("the login form sends {\"token\": ...}"))
		return
	}
	token := strings.TrimSpace(body.Token)
	if token == "" || strings.ContainsAny(token, " \t\r\n;,\"") {
		writeError(w, http.StatusBadRequest, errors.New("paste one bearer token, for example the output of kubectl create token NAME"))
		return
	}
	v, err := s.clientsFor(s.configFor(token), token, false)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err)
		return
	}
	who, err := whoAmI(r, v)
	if err != nil {
		writeError(w, http.StatusUnauthorized, errors.New("the API server did not accept this token: "+err.Error()))
		return
	}
	http.SetCookie(w, &http.Cookie{Name: tokenCookie, Value: token, Path: "/", HttpOnly: true, Secure: true, SameSite: http.SameSiteStrictMode})
	writeJSON(w, map[string]any{"user": who.Username, "groups": who.Groups, "csrf": s.csrfToken(token)})
}

// logout forgets the session cookie; the token itself stays valid until it expires.
func (s *Server) logout(w http.ResponseWriter, r *http.Request) {
	v, err := s.viewerOf(r)
	if err != nil {
		writeError(w, http.StatusUnauthorized, err)
		return
	}
	if err := s.checkWrite(r, v); err != nil && !v.readOnly {
		writeError(w, http.StatusForbidden, err)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: tokenCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, Secure: true, SameSite: http.SameSiteStrictMode})
	writeJSON(w, map[string]any{})
}

// me tells the page who is viewing, the CSRF token for its writes, and the console's mode.
func (s *Server) me(w http.ResponseWriter, r *http.Request, v *viewer) {
	who, err := whoAmI(r, v)
	if err != nil {
		writeAPIError(w, err)
		return
	}
	out := map[string]any{"user": who.Username, "groups": who.Groups, "readOnly": v.readOnly,
		"mode": s.mode(), "defaultNamespace": s.cfg.DefaultNamespace}
	if !v.readOnly {
		out["csrf"] = s.csrfToken(v.token)
	}
	writeJSON(w, out)
}

func (s *Server) mode() string {
	switch {
	case s.cfg.ReadOnly != nil:
		return "read-only"
	case s.cfg.ProxyHeader != "":
		return "proxy header " + s.cfg.ProxyHeader
	}
	return "token"
}
