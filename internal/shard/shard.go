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

// Package shard splits the namespaces of a cluster among several Ergon managers. A namespace
// belongs to exactly one of N shards, chosen by a hash of its name alone, so every manager
// agrees on the owner without talking to the others or to the API server.
package shard

import (
	"fmt"
	"hash/fnv"
	"time"
)

// Leader election of each shard's replicas. A standby takes over at most LeaseDuration plus a
// RetryPeriod (with its jitter) after the leader's last renewal, under 15 s; a leader that stops
// cleanly releases its Lease and a standby takes over within a RetryPeriod. The leader writes
// its Lease once a RetryPeriod.
const (
	LeaseDuration = 10 * time.Second
	RenewDeadline = 7 * time.Second
	RetryPeriod   = time.Second
)

// Shard is one manager's part of the cluster: shard Index of Count.
type Shard struct {
	Index, Count int
}

// All is the single shard that owns every namespace: an unsharded manager.
var All = Shard{Index: 0, Count: 1}

// Of is the shard of count that owns namespace: FNV-1a of the name, modulo count.
// Cluster-scoped objects (namespace "") belong to shard 0.
func Of(namespace string, count int) int {
	if count <= 1 || namespace == "" {
		return 0
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(namespace))
	return int(h.Sum32() % uint32(count))
}

// Validate says what is wrong with s, naming the flags that set it.
func (s Shard) Validate() error {
	if s.Count < 1 {
		return fmt.Errorf("--shards must be at least 1, not %d", s.Count)
	}
	if s.Index < 0 || s.Index >= s.Count {
		return fmt.Errorf("--shard must be from 0 to --shards-1 (%d), not %d", s.Count-1, s.Index)
	}
	return nil
}

// Owns reports whether the objects of namespace are this shard's to reconcile.
func (s Shard) Owns(namespace string) bool {
	return s.Count <= 1 || Of(namespace, s.Count) == s.Index
}

// LeaseName is the leader election Lease of this shard: base itself when there is one shard
// (so an unsharded install keeps the Lease it always had), "shard-I.base" otherwise.
func (s Shard) LeaseName(base string) string {
	if s.Count <= 1 {
		return base
	}
	return fmt.Sprintf("shard-%d.%s", s.Index, base)
}

// String is "I/N".
func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.Index, s.Count) }
