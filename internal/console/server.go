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

// Package console is Ergon's web console: a small server that shows Scenes, Runs, Gates,
// Triggers and Workspaces, and decides Gates, as the viewer. Every API call carries the
// viewer's own bearer token, so RBAC and Ergon's admission webhooks apply unchanged; the
// console holds no rights of its own beyond those of its optional read-only mode.
package console

import (
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"strings"
	"sync"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

//go:embed assets
var assets embed.FS

// contentSecurityPolicy allows the console's own scripts, styles and API, nothing inline,
// nothing from elsewhere, and no framing.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// Config says how the console reaches the API server and whose identity it uses.
type Config struct {
	// APIServer is the API server's address and CA. Its credentials are never used for a
	// viewer: each request carries the viewer's token.
	APIServer *rest.Config
	// ReadOnly, when set, is the console's own identity (a ServiceAccount with view): nobody
	// logs in, everyone sees what it may see, and every write is refused.
	ReadOnly *rest.Config
	// ProxyHeader names the header an authenticating proxy in front of the console sets to
	// the viewer's bearer token (for example X-Forwarded-Access-Token from oauth2-proxy).
	// Set it only when every request passes that proxy.
	ProxyHeader string
	// Key signs CSRF tokens; 32 random bytes, new at every start unless shared by replicas.
	Key []byte
	// DefaultNamespace is shown first.
	DefaultNamespace string
	// MaxStreams bounds the live streams (server-sent events) open at once, each one watch
	// per kind with the viewer's token; MaxStreamsPerSession bounds those of one session.
	MaxStreams, MaxStreamsPerSession int
	// TraceURL, when set, links each Run to its trace: an http(s) URL in which {traceId}
	// stands for the Run's trace id (internal/tracing), e.g. a Jaeger UI's
	// https://jaeger.example/trace/{traceId}.
	TraceURL string
}

// Server serves the console.
type Server struct {
	cfg    Config
	scheme *runtime.Scheme
	mapper meta.RESTMapper

	mu       sync.Mutex
	streams  int
	sessions map[string]int
}

// New makes a console server.
func New(cfg Config) (*Server, error) {
	if cfg.APIServer == nil || cfg.APIServer.Host == "" {
		return nil, errors.New("the console needs the API server's address")
	}
	if len(cfg.Key) < 32 {
		return nil, errors.New("the console needs a key of at least 32 bytes for its CSRF tokens")
	}
	if u := cfg.TraceURL; u != "" && (!strings.Contains(u, traceIDPlaceholder) ||
		!strings.HasPrefix(u, "https://") && !strings.HasPrefix(u, "http://")) {
		return nil, fmt.Errorf("the trace URL %q: want an http(s) URL with %s where the trace id goes", u, traceIDPlaceholder)
	}
	if cfg.MaxStreams <= 0 {
		cfg.MaxStreams = 500
	}
	if cfg.MaxStreamsPerSession <= 0 {
		cfg.MaxStreamsPerSession = 8
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := ergonv1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	return &Server{cfg: cfg, scheme: scheme, mapper: staticMapper(), sessions: map[string]int{}}, nil
}

// staticMapper maps the kinds the console reads without discovery, which would cost every
// viewer's first request a round of API calls.
func staticMapper() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	for _, kind := range []string{"Scene", "Run", "Gate", "Trigger", "Workspace"} {
		m.Add(ergonv1alpha1.GroupVersion.WithKind(kind), meta.RESTScopeNamespace)
	}
	for _, kind := range []string{"ConfigMap", "Pod"} {
		m.Add(corev1.SchemeGroupVersion.WithKind(kind), meta.RESTScopeNamespace)
	}
	m.Add(schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, meta.RESTScopeRoot)
	// Who the viewer is and what they may do, for the inbox (kubectlergon.PendingFor).
	m.Add(authenticationv1.SchemeGroupVersion.WithKind("SelfSubjectReview"), meta.RESTScopeRoot)
	m.Add(authorizationv1.SchemeGroupVersion.WithKind("SelfSubjectAccessReview"), meta.RESTScopeRoot)
	return m
}

// Handler is the console's HTTP handler: the page, its assets and its JSON API.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	static, _ := fs.Sub(assets, "assets")
	files := http.FileServer(http.FS(static))
	mux.Handle("GET /assets/", http.StripPrefix("/assets/", files))
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		http.ServeFileFS(w, r, static, "index.html")
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	mux.HandleFunc("POST /api/login", s.login)
	mux.HandleFunc("POST /api/logout", s.logout)

	reads := map[string]func(http.ResponseWriter, *http.Request, *viewer){
		"GET /api/me":                                                  s.me,
		"GET /api/namespaces":                                          s.namespaces,
		"GET /api/inbox":                                               s.inbox,
		"GET /api/namespaces/{ns}/scenes":                              s.scenes,
		"GET /api/namespaces/{ns}/scenes/{name}":                       s.scene,
		"GET /api/namespaces/{ns}/runs":                                s.runs,
		"GET /api/namespaces/{ns}/runs/{name}":                         s.run,
		"GET /api/namespaces/{ns}/runs/{name}/events":                  s.runEvents,
		"GET /api/namespaces/{ns}/runs/{name}/steps/{step}/output":     s.stepOutput,
		"GET /api/namespaces/{ns}/runs/{name}/steps/{step}/transcript": s.stepTranscript,
		"GET /api/namespaces/{ns}/runs/{name}/steps/{step}/log":        s.stepLog,
		"GET /api/namespaces/{ns}/runs/{name}/steps/{step}/calls":      s.stepCalls,
		"GET /api/namespaces/{ns}/gates":                               s.gates,
		"GET /api/namespaces/{ns}/triggers":                            s.triggers,
		"GET /api/namespaces/{ns}/workspaces":                          s.workspaces,
		"GET /api/namespaces/{ns}/events":                              s.events,
		"GET /api/history":                                             s.history,
		"GET /api/compare":                                             s.compare,
	}
	writes := map[string]func(http.ResponseWriter, *http.Request, *viewer){
		"POST /api/namespaces/{ns}/gates/{name}/decide":     s.decide,
		"POST /api/namespaces/{ns}/triggers/{name}/suspend": s.suspend,
		"POST /api/namespaces/{ns}/triggers/{name}/run":     s.runTrigger,
		"POST /api/namespaces/{ns}/scenes/{name}/run":       s.startScene,
		"POST /api/namespaces/{ns}/runs/{name}/cancel":      s.cancelRun,
		"POST /api/namespaces/{ns}/runs/{name}/rerun":       s.rerun,
	}
	for pattern, h := range reads {
		mux.HandleFunc(pattern, s.asViewer(h, false))
	}
	for pattern, h := range writes {
		mux.HandleFunc(pattern, s.asViewer(h, true))
	}
	return secureHeaders(mux)
}

// asViewer runs a handler with the request's viewer, refusing anonymous requests and, for
// writes, requests that fail the CSRF checks.
func (s *Server) asViewer(h func(http.ResponseWriter, *http.Request, *viewer), write bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v, err := s.viewerOf(r)
		if err != nil {
			writeError(w, http.StatusUnauthorized, err)
			return
		}
		if write {
			if err := s.checkWrite(r, v); err != nil {
				writeError(w, http.StatusForbidden, err)
				return
			}
		}
		h(w, r, v)
	}
}

// secureHeaders sets the headers every answer carries: the CSP, no sniffing, no framing, no
// referrer, and no caching of API answers.
func secureHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		h.Set("Permissions-Policy", "camera=(), microphone=(), geolocation=()")
		h.Set("Cache-Control", "no-store")
		next.ServeHTTP(w, r)
	})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, code int, err error) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
}

// writeAPIError passes on the API server's answer: its code and its message verbatim, which
// for a refused write is RBAC's or the admission webhook's own sentence.
func writeAPIError(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Code != 0 {
		code = int(status.Status().Code)
	}
	writeError(w, code, err)
}
