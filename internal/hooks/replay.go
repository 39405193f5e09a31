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
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// DefaultMaxRemembered bounds the signatures remembered to refuse replays: about 100 bytes
// each, and only deliveries signed with a Trigger's key add one.
const DefaultMaxRemembered = 1 << 17

// replayKey is a signature accepted for a Trigger.
type replayKey struct {
	trigger types.UID
	mac     [32]byte
}

// replays remembers the signatures of accepted deliveries until their timestamp is stale, so
// the same signed request is accepted once.
type replays struct {
	mu    sync.Mutex
	until map[replayKey]time.Time
}

func newReplayKey(trigger types.UID, mac []byte) replayKey {
	k := replayKey{trigger: trigger}
	copy(k.mac[:], mac)
	return k
}

// seen says whether the signature was accepted and is still remembered at now.
func (r *replays) seen(k replayKey, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	until, ok := r.until[k]
	return ok && !now.After(until)
}

// add remembers the signature until then. It says false when the signature is remembered
// already (a replay, or the same delivery twice at once) and full when max are remembered.
func (r *replays) add(k replayKey, then, now time.Time, max int) (added, full bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if until, ok := r.until[k]; ok && !now.After(until) {
		return false, false
	}
	if len(r.until) >= max {
		r.forgetLocked(now)
		if len(r.until) >= max {
			return false, true
		}
	}
	if r.until == nil {
		r.until = map[replayKey]time.Time{}
	}
	r.until[k] = then
	return true, false
}

// drop forgets a signature whose delivery was not accepted after all, so the sender may send
// the same request again.
func (r *replays) drop(k replayKey) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.until, k)
}

// forget drops the signatures whose time is past.
func (r *replays) forget(now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.forgetLocked(now)
}

func (r *replays) forgetLocked(now time.Time) {
	for k, until := range r.until {
		if now.After(until) {
			delete(r.until, k)
		}
	}
}
