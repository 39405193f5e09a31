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

package shard

import (
	"fmt"
	"testing"
)

func TestOf(t *testing.T) {
	for _, tc := range []struct {
		namespace string
		count     int
		want      int
	}{
		{"default", 1, 0},
		{"default", 0, 0},
		{"", 7, 0},
		// FNV-1a 32 of "default" is 0x933b5bde (2470140894): fixed, as every manager must agree.
		{"default", 2, 2470140894 % 2},
		{"default", 3, 2470140894 % 3},
		{"default", 16, 2470140894 % 16},
	} {
		if got := Of(tc.namespace, tc.count); got != tc.want {
			t.Errorf("Of(%q, %d) = %d, want %d", tc.namespace, tc.count, got, tc.want)
		}
	}
}

// TestOfSpreads checks that namespaces spread over the shards roughly evenly and that exactly
// one shard owns each.
func TestOfSpreads(t *testing.T) {
	const namespaces, count = 3000, 3
	seen := make([]int, count)
	for i := range namespaces {
		ns := fmt.Sprintf("team-%d", i)
		owners := 0
		for s := range count {
			if (Shard{Index: s, Count: count}).Owns(ns) {
				owners++
				seen[s]++
			}
		}
		if owners != 1 {
			t.Fatalf("namespace %s has %d owners, want 1", ns, owners)
		}
	}
	for s, n := range seen {
		if n < namespaces/count*8/10 || n > namespaces/count*12/10 {
			t.Errorf("shard %d owns %d of %d namespaces, want about %d", s, n, namespaces, namespaces/count)
		}
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		s    Shard
		want string
	}{
		{Shard{0, 1}, ""},
		{Shard{1, 2}, ""},
		{Shard{0, 0}, "--shards must be at least 1, not 0"},
		{Shard{2, 2}, "--shard must be from 0 to --shards-1 (1), not 2"},
		{Shard{-1, 2}, "--shard must be from 0 to --shards-1 (1), not -1"},
	} {
		err := tc.s.Validate()
		if got := fmt.Sprint(err); (err == nil && tc.want != "") || (err != nil && got != tc.want) {
			t.Errorf("%v.Validate() = %v, want %q", tc.s, err, tc.want)
		}
	}
}

func TestLeaseName(t *testing.T) {
	if got := All.LeaseName("manager.ergon.dev"); got != "manager.ergon.dev" {
		t.Errorf("one shard: %q", got)
	}
	if got := (Shard{Index: 1, Count: 2}).LeaseName("manager.ergon.dev"); got != "shard-1.manager.ergon.dev" {
		t.Errorf("shard 1/2: %q", got)
	}
}
