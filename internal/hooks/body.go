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
	"errors"
	"hash"
	"io"
	"net/http"
	"sync"
	"time"
)

// Defaults for what the server reads at once, before any signature is checked.
const (
	// DefaultMaxBodies is how many request bodies are read at once over all Triggers: at
	// most this many MiB are held for bodies, whoever sends them.
	DefaultMaxBodies = 16
	// DefaultMaxBodiesPerTrigger is how many are read at once for one path, so a flood at
	// one Trigger leaves room for the others.
	DefaultMaxBodiesPerTrigger = 4
	// bodyTimeout bounds how long one body may take to arrive, so a slow sender cannot hold
	// a slot for the server's whole read timeout.
	bodyTimeout = 10 * time.Second
	// copyBufferBytes is the buffer a body not kept is hashed through.
	copyBufferBytes = 32 << 10
)

// bodySlots counts the bodies being read, in all and per path. A path is counted whether a
// Trigger is there or not, so the answer says nothing about which Triggers exist.
type bodySlots struct {
	mu     sync.Mutex
	total  int
	byPath map[string]int
}

// take reserves a slot for a body to path, or returns the status to refuse it with: 429 when
// the path has maxPerPath bodies in flight, 503 when the server has max.
func (b *bodySlots) take(path string, max, maxPerPath int) (release func(), status int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.byPath[path] >= maxPerPath {
		return nil, http.StatusTooManyRequests
	}
	if b.total >= max {
		return nil, http.StatusServiceUnavailable
	}
	if b.byPath == nil {
		b.byPath = map[string]int{}
	}
	b.total++
	b.byPath[path]++
	var once sync.Once
	return func() {
		once.Do(func() {
			b.mu.Lock()
			defer b.mu.Unlock()
			b.total--
			if b.byPath[path]--; b.byPath[path] <= 0 {
				delete(b.byPath, path)
			}
		})
	}, 0
}

var copyBuffers = sync.Pool{New: func() any { return new([copyBufferBytes]byte) }}

// readBody streams the request body through mac, at most MaxBodyBytes of it, and returns it
// only when keep is set: a body that no param mapping reads is never held, only hashed 32 KiB
// at a time. A kept body is held in one buffer the size the request declared.
func readBody(w http.ResponseWriter, req *http.Request, mac hash.Hash, keep bool) ([]byte, *Refusal) {
	// Not every ResponseWriter can set a deadline (a test recorder cannot); the server's read
	// timeout then still bounds the read.
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(bodyTimeout))
	body := http.MaxBytesReader(w, req.Body, MaxBodyBytes)
	var kept *bytes.Buffer
	var err error
	if keep {
		kept = &bytes.Buffer{}
		if req.ContentLength > 0 {
			// Room for the declared body and the read that finds its end, so it never grows.
			kept.Grow(int(req.ContentLength) + bytes.MinRead)
		}
		_, err = kept.ReadFrom(io.TeeReader(body, mac))
	} else {
		buf := copyBuffers.Get().(*[copyBufferBytes]byte)
		_, err = io.CopyBuffer(struct{ io.Writer }{mac}, body, buf[:])
		copyBuffers.Put(buf)
	}
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return nil, refuse(http.StatusRequestEntityTooLarge, "the body is more than the %d bytes allowed", MaxBodyBytes)
		}
		return nil, refuse(http.StatusBadRequest, "the body could not be read")
	}
	if kept == nil {
		return nil, nil
	}
	return kept.Bytes(), nil
}
