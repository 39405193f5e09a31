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
