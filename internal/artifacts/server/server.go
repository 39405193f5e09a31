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

// Package server is the manager's artifact endpoint: a step pod trades its pod-bound token for
// grants to exactly its own artifacts (PathGrants), and, with the manager's own store, writes
// and reads them through the manager (PathBlobs), streaming, with their digest checked.
package server

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"

	"github.com/ergon-dev/ergon/internal/artifacts"
	"github.com/ergon-dev/ergon/internal/artifacts/store"
	"github.com/ergon-dev/ergon/internal/outputs/wire"
)

// DefaultTTL is how long a grant lasts: a step asks for new ones when it needs more.
const DefaultTTL = 10 * time.Minute

// Handler serves the endpoint.
type Handler struct {
	Store     *store.Store
	Signer    *artifacts.Signer
	Authority artifacts.Authority
	TTL       time.Duration
	Now       func() time.Time
	Log       logr.Logger
}

// ServeHTTP routes a request.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	switch {
	case r.URL.Path == artifacts.PathGrants && r.Method == http.MethodPost:
		h.grants(w, r)
	case strings.HasPrefix(r.URL.Path, artifacts.PathBlobs) && (r.Method == http.MethodPut || r.Method == http.MethodGet):
		h.blob(w, r, strings.TrimPrefix(r.URL.Path, artifacts.PathBlobs))
	default:
		problem(w, &artifacts.Refusal{Status: http.StatusNotFound, Reason: "NotFound", Message: "no such artifact endpoint"})
	}
}

func (h *Handler) now() time.Time {
	if h.Now != nil {
		return h.Now()
	}
	return time.Now()
}

func (h *Handler) ttl() time.Duration {
	if h.TTL > 0 {
		return h.TTL
	}
	return DefaultTTL
}

// maxGrantsRequest bounds the body of a grants request: 32 artifacts of short names.
const maxGrantsRequest = 64 << 10

func (h *Handler) grants(w http.ResponseWriter, r *http.Request) {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || token == "" {
		problem(w, &artifacts.Refusal{Status: http.StatusUnauthorized, Reason: artifacts.ReasonUnauthorized, Message: "no Bearer token"})
		return
	}
	var req artifacts.GrantsRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, maxGrantsRequest)).Decode(&req); err != nil {
		problem(w, &artifacts.Refusal{Status: http.StatusBadRequest, Reason: "BadRequest", Message: "the request is not a grants request: " + err.Error()})
		return
	}
	scope, err := h.Authority.Scope(r.Context(), token)
	if err != nil {
		problem(w, err)
		return
	}
	resp, err := h.grant(r.Context(), scope, req)
	if err != nil {
		problem(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(resp)
}

// grant makes the grants a request asks for, all or none.
func (h *Handler) grant(ctx context.Context, scope *artifacts.Scope, req artifacts.GrantsRequest) (*artifacts.GrantsResponse, error) {
	resp := &artifacts.GrantsResponse{}
	expires := h.now().Add(h.ttl())
	total := scope.RunBytesKept
	for _, p := range req.Put {
		ref, ok := scope.Puts[p.Name]
		if !ok {
			return nil, &artifacts.Refusal{Status: http.StatusForbidden, Reason: artifacts.ReasonNotDeclared,
				Message: fmt.Sprintf("the step declares no artifact %q", p.Name)}
		}
		if b, err := hex.DecodeString(p.SHA256); err != nil || len(b) != 32 || p.Size < 0 {
			return nil, &artifacts.Refusal{Status: http.StatusBadRequest, Reason: "BadRequest",
				Message: fmt.Sprintf("artifact %q: size must be 0 or more and sha256 64 hex digits", p.Name)}
		}
		if p.Size > scope.MaxBytes {
			return nil, &artifacts.Refusal{Status: http.StatusRequestEntityTooLarge, Reason: artifacts.ReasonTooLarge,
				Message: fmt.Sprintf("artifact %q has %s bytes, more than the %s an artifact may have (--max-artifact-bytes)",
					p.Name, wire.Thousands(int(p.Size)), wire.Thousands(int(scope.MaxBytes)))}
		}
		if total += p.Size; total > scope.RunBytes {
			return nil, &artifacts.Refusal{Status: http.StatusRequestEntityTooLarge, Reason: artifacts.ReasonTooLarge,
				Message: fmt.Sprintf("artifact %q would bring the Run's artifacts to %s bytes, more than the %s a Run may keep "+
					"(--max-run-artifact-bytes)", p.Name, wire.Thousands(int(total)), wire.Thousands(int(scope.RunBytes)))}
		}
		t, err := h.transfer(ctx, true, ref.Key(), p.Size, p.SHA256, expires)
		if err != nil {
			return nil, err
		}
		t.Name = p.Name
		resp.Put = append(resp.Put, t)
	}
	for _, g := range req.Get {
		rec, ok := scope.Gets[g.Step+"/"+g.Name]
		if !ok {
			return nil, &artifacts.Refusal{Status: http.StatusForbidden, Reason: artifacts.ReasonInputMissing,
				Message: fmt.Sprintf("step %s has no artifact %q this step may read: the step does not declare it "+
					"in inputArtifacts, or step %s did not make it", g.Step, g.Name, g.Step)}
		}
		t, err := h.transfer(ctx, false, rec.Key, rec.Size, rec.SHA256, expires)
		if err != nil {
			return nil, err
		}
		t.Step, t.Name = g.Step, g.Name
		resp.Get = append(resp.Get, t)
	}
	return resp, nil
}

// transfer is the URL of one grant: presigned by a Direct store, or the manager's own.
func (h *Handler) transfer(ctx context.Context, put bool, key string, size int64, sha string,
	expires time.Time) (artifacts.Transfer, error) {
	t := artifacts.Transfer{Size: size, SHA256: sha}
	if h.Store.Direct() {
		u, headers, err := h.Store.Presign(ctx, put, key, size, sha, expires.Sub(h.now()))
		if err != nil {
			return t, fmt.Errorf("presigning a URL: %w", err)
		}
		t.URL, t.Headers = u, headers
		return t, nil
	}
	op := artifacts.OpGet
	if put {
		op = artifacts.OpPut
	}
	token, err := h.Signer.Sign(artifacts.Grant{Op: op, Key: key, Size: size, SHA256: sha, Expires: expires.Unix()})
	if err != nil {
		return t, err
	}
	t.URL = artifacts.PathBlobs + token
	return t, nil
}

// blob writes or reads one artifact with a grant.
func (h *Handler) blob(w http.ResponseWriter, r *http.Request, token string) {
	g, err := h.Signer.Verify(token, h.now())
	if err != nil {
		problem(w, &artifacts.Refusal{Status: http.StatusUnauthorized, Reason: artifacts.ReasonUnauthorized, Message: err.Error()})
		return
	}
	if (g.Op == artifacts.OpPut) != (r.Method == http.MethodPut) {
		problem(w, &artifacts.Refusal{Status: http.StatusForbidden, Reason: "Forbidden", Message: "the grant is for " + g.Op})
		return
	}
	if r.Method == http.MethodPut {
		if r.ContentLength >= 0 && r.ContentLength != g.Size {
			problem(w, &artifacts.Refusal{Status: http.StatusBadRequest, Reason: artifacts.ReasonDigestMismatch,
				Message: fmt.Sprintf("%d bytes sent where %d were announced", r.ContentLength, g.Size)})
			return
		}
		if err := h.Store.Put(r.Context(), g.Key, r.Body, g.Size, g.SHA256); err != nil {
			if errors.Is(err, store.ErrMismatch) {
				err = &artifacts.Refusal{Status: http.StatusBadRequest, Reason: artifacts.ReasonDigestMismatch, Message: err.Error()}
			}
			problem(w, err)
			return
		}
		w.WriteHeader(http.StatusCreated)
		return
	}
	rd, err := h.Store.Reader(r.Context(), g.Key)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			err = &artifacts.Refusal{Status: http.StatusNotFound, Reason: artifacts.ReasonInputMissing, Message: "the store does not have the artifact"}
		}
		problem(w, err)
		return
	}
	defer func() { _ = rd.Close() }()
	if size := readerSize(rd); size != g.Size {
		problem(w, &artifacts.Refusal{Status: http.StatusConflict, Reason: artifacts.ReasonDigestMismatch,
			Message: fmt.Sprintf("the store holds %d bytes, where the Run recorded %d", size, g.Size)})
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", "attachment")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Security-Policy", "sandbox")
	w.Header().Set("Content-Length", strconv.FormatInt(g.Size, 10))
	if _, err := io.Copy(w, io.LimitReader(rd, g.Size)); err != nil {
		h.Log.V(1).Info("reading an artifact ended early", "error", err.Error())
	}
}

// readerSize is the size of what a store's reader reads.
func readerSize(r io.ReadCloser) int64 {
	if s, ok := r.(interface{ Size() int64 }); ok {
		return s.Size()
	}
	return -1
}

// problem answers an error: a Refusal as it says, anything else as the store's failure.
func problem(w http.ResponseWriter, err error) {
	var ref *artifacts.Refusal
	if !errors.As(err, &ref) {
		ref = &artifacts.Refusal{Status: http.StatusBadGateway, Reason: artifacts.ReasonStoreFailed, Message: "the artifact store failed: " + err.Error()}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(ref.Status)
	_ = json.NewEncoder(w).Encode(artifacts.Problem{Reason: ref.Reason, Message: ref.Message})
}
