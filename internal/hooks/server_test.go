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
	"crypto/sha256"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

func TestForgetDropsOnlyWhatIsIdle(t *testing.T) {
	now := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	s := &Server{Rate: 1, Burst: 2}
	busy := &ergonv1alpha1.Trigger{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "busy", UID: "busy"}}
	idle := &ergonv1alpha1.Trigger{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "idle", UID: "idle"}}
	s.reserve(idle, now.Add(-time.Minute)) // refilled long since
	s.reserve(busy, now)                   // one token of two left
	s.keys = map[string]cachedKey{
		"ns/fresh/key": {key: []byte("k"), readAt: now.Add(-keyTTL / 2)},
		"ns/stale/key": {key: []byte("k"), readAt: now.Add(-2 * keyTTL)},
	}

	s.forget(now, func(types.NamespacedName) bool { return true })

	if _, ok := s.limiters["busy"]; !ok {
		t.Error("forgot the rate limiter of a Trigger that used it a moment ago")
	}
	if _, ok := s.limiters["idle"]; ok {
		t.Error("kept a full rate limiter")
	}
	if _, ok := s.keys["ns/fresh/key"]; !ok {
		t.Error("forgot a key read within keyTTL")
	}
	if _, ok := s.keys["ns/stale/key"]; ok {
		t.Error("kept a key older than keyTTL")
	}
	// The busy Trigger still has just one token: forgetting did not reset its limit.
	if wait := s.reserve(busy, now); wait != 0 {
		t.Fatalf("the second delivery waited %v", wait)
	}
	if wait := s.reserve(busy, now); wait == 0 {
		t.Error("a third delivery at once was let through: the limiter was reset")
	}
}

func TestBodySlotsCapEachPathAndTheTotal(t *testing.T) {
	var slots bodySlots
	var releases []func()
	take := func(path string) int {
		release, status := slots.take(path, 3, 2)
		if release != nil {
			releases = append(releases, release)
		}
		return status
	}
	for i, tc := range []struct {
		path string
		want int
	}{
		{"ns/a", 0}, {"ns/a", 0},
		{"ns/a", http.StatusTooManyRequests},    // the path is full
		{"ns/b", 0},                             // another path still has room
		{"ns/c", http.StatusServiceUnavailable}, // the server is full
		{"ns/a", http.StatusTooManyRequests},    // a full path says so before the total
		{"ns/nobody", http.StatusServiceUnavailable},
	} {
		if got := take(tc.path); got != tc.want {
			t.Fatalf("take %d (%s) = %d, want %d", i, tc.path, got, tc.want)
		}
	}
	releases[0]()
	releases[0]() // releasing twice frees one slot
	if total, a := slots.inFlight("ns/a"); total != 2 || a != 1 {
		t.Fatalf("in flight %d, %d at ns/a after one release; want 2 and 1", total, a)
	}
	if got := take("ns/c"); got != 0 {
		t.Fatalf("a freed slot was not reused: %d", got)
	}
	for _, release := range releases {
		release()
	}
	if total, _ := slots.inFlight("ns/a"); total != 0 || len(slots.byPath) != 0 {
		t.Fatalf("%d bodies and %d paths left after every release", total, len(slots.byPath))
	}
}

func TestReplaysRememberASignatureUntilItsTimeAndNoMore(t *testing.T) {
	now := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	var r replays
	a := newReplayKey("trigger-1", []byte("mac-a"))
	if added, full := r.add(a, now.Add(time.Minute), now, 2); !added || full {
		t.Fatalf("the first delivery was not remembered: added %v, full %v", added, full)
	}
	if !r.seen(a, now.Add(time.Minute)) {
		t.Error("forgot a signature before its time")
	}
	if added, _ := r.add(a, now.Add(time.Minute), now.Add(30*time.Second), 2); added {
		t.Error("the same signature was accepted twice")
	}
	if r.seen(newReplayKey("trigger-2", []byte("mac-a")), now) {
		t.Error("a signature accepted for one Trigger was taken as seen by another")
	}
	b := newReplayKey("trigger-1", []byte("mac-b"))
	r.add(b, now.Add(2*time.Minute), now, 2)
	if added, full := r.add(newReplayKey("trigger-1", []byte("mac-c")), now.Add(time.Minute), now, 2); added || !full {
		t.Fatalf("a third signature beyond the bound: added %v, full %v; want refused as full", added, full)
	}
	// Once a's time is past, there is room again, made when needed.
	if added, full := r.add(newReplayKey("trigger-1", []byte("mac-c")), now.Add(3*time.Minute), now.Add(90*time.Second), 2); !added || full {
		t.Fatalf("no room made from a stale signature: added %v, full %v", added, full)
	}
	r.drop(b)
	if r.seen(b, now) {
		t.Error("a dropped signature is still seen")
	}
	r.forget(now.Add(time.Hour))
	if r.len() != 0 {
		t.Errorf("%d signatures kept past their time", r.len())
	}
}

func TestReadBodyHashesEverythingAndKeepsOnlyWhatIsAskedFor(t *testing.T) {
	payload := bytes.Repeat([]byte("0123456789abcdef"), 5000) // 80 000 bytes, several copy buffers
	want := sha256.Sum256(payload)
	for _, tc := range []struct {
		name          string
		keep          bool
		contentLength bool
	}{
		{"hashed and dropped", false, true},
		{"hashed and kept, its length declared", true, true},
		{"hashed and kept, its length unknown", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodPost, "/hooks/ns/t", io.MultiReader(bytes.NewReader(payload)))
			if tc.contentLength {
				req.ContentLength = int64(len(payload))
			}
			mac := sha256.New()
			kept, refusal := readBody(httptest.NewRecorder(), req, mac, tc.keep)
			if refusal != nil {
				t.Fatalf("refused: %v", refusal)
			}
			if !bytes.Equal(mac.Sum(nil), want[:]) {
				t.Fatal("the hash is not of the whole body")
			}
			if tc.keep != (kept != nil) || (tc.keep && !bytes.Equal(kept, payload)) {
				t.Fatalf("kept %d bytes, want the body: %v", len(kept), tc.keep)
			}
			// One buffer the declared size (the allocator rounds it up a little), never doubled.
			if tc.keep && tc.contentLength && cap(kept) > len(payload)*9/8 {
				t.Errorf("a declared body of %d bytes took a %d-byte buffer", len(payload), cap(kept))
			}
		})
	}
	big := httptest.NewRequest(http.MethodPost, "/hooks/ns/t", io.MultiReader(bytes.NewReader(make([]byte, MaxBodyBytes+1))))
	if _, refusal := readBody(httptest.NewRecorder(), big, sha256.New(), false); refusal == nil || refusal.Status != http.StatusRequestEntityTooLarge {
		t.Fatalf("a body over %d bytes: %v, want 413", MaxBodyBytes, refusal)
	}
}
