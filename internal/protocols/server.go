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

// Package protocols serves Ergon's Scenes to agents outside the cluster: as tools over the
// Model Context Protocol (MCP) and as agents over Agent2Agent (A2A). Like the console, it
// holds no rights of its own: every request carries its caller's Kubernetes bearer token, and
// every Run, Gate decision and read is made with that token, so RBAC and Ergon's admission
// webhooks see the caller, never this server. It never impersonates.
package protocols

import (
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/identity"
)

// Defaults of Config.
const (
	DefaultCallWait       = 2 * time.Minute
	DefaultRate           = 5
	DefaultBurst          = 20
	DefaultMaxInFlight    = 8
	DefaultMaxResultBytes = 1 << 20
	DefaultMaxBodyBytes   = 1 << 20
	defaultPoll           = time.Second
	// identityTTL is how long a token's identity is trusted without asking the API server
	// again; a revoked token is refused by the API server on the next call anyway.
	identityTTL = time.Minute
	// maxCallers bounds the tokens whose identity, and the people whose limits, are remembered.
	maxCallers = 10000
	// reviewRate and reviewBurst bound the tokens checked with the API server a second.
	reviewRate, reviewBurst = 20, 50
)

// Config says how the endpoints reach the API server and what they allow.
type Config struct {
	// APIServer is the API server's address and CA. Its credentials are never used: each
	// request carries its caller's token.
	APIServer *rest.Config
	// Namespaces are where Scenes are looked for when a caller may not list namespaces.
	Namespaces []string
	// AllowedOrigins are the browser origins ("https://host[:port]") allowed to call. A
	// request with any other Origin header is refused (DNS rebinding); one without is from a
	// client that is no browser.
	AllowedOrigins []string
	// Resource is the MCP endpoint's public URL, as OAuth protected-resource metadata names
	// it; AuthorizationServers are the issuers whose tokens the API server accepts (the
	// cluster's OIDC issuer). Without them no metadata is served.
	Resource             string
	AuthorizationServers []string
	// CallWait is how long a call waits for its Run before it answers with a handle to poll.
	CallWait time.Duration
	// Rate and Burst bound each caller's requests per second; MaxInFlight the calls of one
	// caller that wait at once.
	Rate        float64
	Burst       int
	MaxInFlight int
	// MaxResultBytes bounds the outputs one answer carries; MaxBodyBytes a request's body.
	MaxResultBytes int
	MaxBodyBytes   int64
	// Key signs the state a call hands its caller to come back with; 32 bytes or more.
	Key []byte
	// Poll is how often a waiting call reads its Run.
	Poll time.Duration
}

// Server serves the MCP and A2A endpoints.
type Server struct {
	cfg    Config
	scheme *runtime.Scheme
	mapper meta.RESTMapper

	mu      sync.Mutex
	callers map[string]*list.Element // by token digest
	lru     *list.List
	limits  map[string]*limits // by user name
	// reviews bounds the tokens checked with the API server a second, so that strangers
	// sending tokens it does not know cannot make this server flood it.
	reviews *rate.Limiter
	// listings are the callers' recent listings of Scenes.
	listings listings
}

// callerState is what the server remembers of one token.
type callerState struct {
	digest  string
	user    authenticationv1.UserInfo
	checked time.Time
}

// limits are one person's, whichever of their tokens they call with.
type limits struct {
	limiter  *rate.Limiter
	inFlight int
}

// caller is the person behind one request, with a client that acts as them.
type caller struct {
	user   authenticationv1.UserInfo
	c      client.Client
	limits *limits
}

// New makes a protocols server.
func New(cfg Config) (*Server, error) {
	if cfg.APIServer == nil || cfg.APIServer.Host == "" {
		return nil, errors.New("the protocol endpoints need the API server's address")
	}
	if len(cfg.Key) < 32 {
		return nil, errors.New("the protocol endpoints need a key of at least 32 bytes")
	}
	for _, o := range cfg.AllowedOrigins {
		if u, err := url.Parse(o); err != nil || u.Scheme == "" || u.Host == "" || u.Path != "" {
			return nil, fmt.Errorf("allowed origin %q: want scheme://host[:port]", o)
		}
	}
	orDefault(&cfg.CallWait, DefaultCallWait)
	orDefault(&cfg.Rate, DefaultRate)
	orDefault(&cfg.Burst, DefaultBurst)
	orDefault(&cfg.MaxInFlight, DefaultMaxInFlight)
	orDefault(&cfg.MaxResultBytes, DefaultMaxResultBytes)
	orDefault(&cfg.MaxBodyBytes, DefaultMaxBodyBytes)
	orDefault(&cfg.Poll, defaultPoll)
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := ergonv1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	return &Server{cfg: cfg, scheme: scheme, mapper: staticMapper(), callers: map[string]*list.Element{}, lru: list.New(),
		limits: map[string]*limits{}, reviews: rate.NewLimiter(reviewRate, reviewBurst)}, nil
}

// orDefault sets a setting that is not positive to its default.
func orDefault[T int | int64 | float64 | time.Duration](v *T, d T) {
	if *v <= 0 {
		*v = d
	}
}

// staticMapper maps the kinds the endpoints use without discovery.
func staticMapper() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	for _, kind := range []string{"Scene", "Run", "Gate"} {
		m.Add(ergonv1alpha1.GroupVersion.WithKind(kind), meta.RESTScopeNamespace)
	}
	m.Add(corev1.SchemeGroupVersion.WithKind("ConfigMap"), meta.RESTScopeNamespace)
	m.Add(schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, meta.RESTScopeRoot)
	m.Add(authenticationv1.SchemeGroupVersion.WithKind("SelfSubjectReview"), meta.RESTScopeRoot)
	m.Add(authorizationv1.SchemeGroupVersion.WithKind("SelfSubjectAccessReview"), meta.RESTScopeRoot)
	return m
}

type callerKey struct{}

// callerOf is the caller the request was authenticated as (authenticate).
func callerOf(ctx context.Context) *caller {
	c, _ := ctx.Value(callerKey{}).(*caller)
	return c
}

// authenticate admits a request that comes from an allowed origin, carries a bearer token
// the API server knows, and is within its caller's rate; next sees the caller in the
// request's context. It answers 401 with the protected-resource metadata's address, 403 for
// an origin, 429 over the rate.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.originAllowed(r) {
			http.Error(w, "cross-origin request refused: the Origin header is not one this server allows", http.StatusForbidden)
			return
		}
		token, ok := bearerToken(r)
		if !ok {
			s.challenge(w, "a Kubernetes bearer token is required: Authorization: Bearer TOKEN")
			return
		}
		c, err := s.callerFor(r.Context(), token)
		if err != nil {
			if errors.Is(err, errBusy) {
				w.Header().Set("Retry-After", "1")
				http.Error(w, err.Error(), http.StatusTooManyRequests)
				return
			}
			if apierrors.IsUnauthorized(err) {
				s.challenge(w, "the API server does not accept this token")
				return
			}
			http.Error(w, "checking the token with the API server: "+err.Error(), http.StatusBadGateway)
			return
		}
		if !c.limits.limiter.Allow() {
			w.Header().Set("Retry-After", "1")
			http.Error(w, fmt.Sprintf("too many requests: at most %g a second (burst %d) per caller", s.cfg.Rate, s.cfg.Burst),
				http.StatusTooManyRequests)
			return
		}
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Cache-Control", "no-store")
		r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes)
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callerKey{}, c)))
	})
}

// challenge answers 401 with the WWW-Authenticate header RFC 9728 asks for.
func (s *Server) challenge(w http.ResponseWriter, msg string) {
	v := `Bearer realm="ergon"`
	if u := s.metadataURL(); u != "" {
		v += fmt.Sprintf(`, resource_metadata=%q`, u)
	}
	w.Header().Set("WWW-Authenticate", v)
	http.Error(w, msg, http.StatusUnauthorized)
}

// bearerToken is the token of the request's Authorization header; tokens are read from
// nowhere else (no query, no cookie), so a link can never carry one.
func bearerToken(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != "" && len(token) <= 16<<10 && !strings.ContainsAny(token, " \t\r\n")
}

// originAllowed says whether a request's Origin, when it has one, is allowed: this host
// itself, or one of AllowedOrigins.
func (s *Server) originAllowed(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	if slices.Contains(s.cfg.AllowedOrigins, origin) {
		return true
	}
	u, err := url.Parse(origin)
	return err == nil && u.Host != "" && strings.EqualFold(u.Host, r.Host)
}

// callerFor is the caller a token stands for: asked of the API server (a SelfSubjectReview,
// which every authenticated user may create) at most once a minute per token.
func (s *Server) callerFor(ctx context.Context, token string) (*caller, error) {
	sum := sha256.Sum256([]byte(token))
	digest := hex.EncodeToString(sum[:])
	c, err := client.New(identity.BearerConfig(s.cfg.APIServer, token, "ergon-protocols"),
		client.Options{Scheme: s.scheme, Mapper: s.mapper})
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	st := s.remembered(digest)
	fresh := st != nil && time.Since(st.checked) < identityTTL
	var l *limits
	if fresh {
		l = s.limitsOf(st.user.Username)
	}
	s.mu.Unlock()
	if fresh {
		return &caller{user: st.user, c: c, limits: l}, nil
	}
	if !s.reviews.Allow() {
		return nil, errBusy
	}
	review := &authenticationv1.SelfSubjectReview{}
	if err := c.Create(ctx, review); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st = s.remembered(digest)
	if st == nil {
		st = &callerState{digest: digest}
		s.callers[digest] = s.lru.PushFront(st)
		for s.lru.Len() > maxCallers {
			old := s.lru.Back()
			s.lru.Remove(old)
			delete(s.callers, old.Value.(*callerState).digest)
		}
	}
	st.user, st.checked = review.Status.UserInfo, time.Now()
	return &caller{user: st.user, c: c, limits: s.limitsOf(st.user.Username)}, nil
}

// errBusy refuses a token that would be checked with the API server beyond reviewRate.
var errBusy = errors.New("too many new tokens to check at once: try again in a second")

// limitsOf are a person's limits; s.mu is held. Past maxCallers people, all are forgotten and
// start afresh, which only ever lets a caller more than its rate for a moment.
func (s *Server) limitsOf(user string) *limits {
	l, ok := s.limits[user]
	if !ok {
		if len(s.limits) >= maxCallers {
			s.limits = map[string]*limits{}
		}
		l = &limits{limiter: rate.NewLimiter(rate.Limit(s.cfg.Rate), s.cfg.Burst)}
		s.limits[user] = l
	}
	return l
}

// remembered is a token's state, moved to the front of the LRU; s.mu is held.
func (s *Server) remembered(digest string) *callerState {
	e, ok := s.callers[digest]
	if !ok {
		return nil
	}
	s.lru.MoveToFront(e)
	return e.Value.(*callerState)
}

// enter counts a call that waits for a Run against its caller's MaxInFlight; the function it
// returns ends it.
func (s *Server) enter(c *caller) (func(), error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.limits.inFlight >= s.cfg.MaxInFlight {
		return nil, fmt.Errorf("%s has %d calls waiting for Runs already, the most one caller may; "+
			"poll those Runs with run_status instead of starting more", c.user.Username, c.limits.inFlight)
	}
	c.limits.inFlight++
	return func() {
		s.mu.Lock()
		c.limits.inFlight--
		s.mu.Unlock()
	}, nil
}
