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

package naming

import (
	"regexp"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

// dns1123Label is the pattern Kubernetes requires of pod host names and label-like names.
var dns1123Label = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

func TestJoin(t *testing.T) {
	cases := []struct {
		name   string
		maxLen int
		parts  []string
		want   string
	}{
		{"short names are joined unchanged", 63, []string{"run", "step", "1"}, "run-step-1"},
		{"a name exactly at the limit is unchanged", 11, []string{"abcd", "efgh", "i"}, "abcd-efgh-i"},
		{
			// The expected hash is `printf 'a%.0s' {1..30} | sha256sum`; names must not change
			// between versions, or a new manager would not find the children of an old one.
			"a long name keeps its start and ends in a hash of the whole name", 20,
			[]string{strings.Repeat("a", 30)}, "aaaaaaaaaaa-3a54fc0c",
		},
		{"hyphens the cut leaves at the end are dropped", 20,
			[]string{"aaaaaaaaa-", "-bbbbbbbbbbbbbbb"}, "aaaaaaaaa-" + hashOf("aaaaaaaaa---bbbbbbbbbbbbbbb")},
		{"dots the cut leaves at the end are dropped", 20,
			[]string{"aaaaaaaaaa.bbbbbbbbbbbb"}, "aaaaaaaaaa-" + hashOf("aaaaaaaaaa.bbbbbbbbbbbb")},
		{"a limit with no room for a prefix gives the hash alone", 8,
			[]string{strings.Repeat("a", 30)}, "3a54fc0c"},
		{"a limit shorter than the hash cuts the hash", 4, []string{strings.Repeat("a", 30)}, "3a54"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Join(tc.maxLen, tc.parts...)
			if got != tc.want {
				t.Errorf("Join(%d, %q) = %q, want %q", tc.maxLen, tc.parts, got, tc.want)
			}
			if len(got) > tc.maxLen {
				t.Errorf("Join(%d, ...) is %d long", tc.maxLen, len(got))
			}
		})
	}
	t.Run("two long names differing only at the end differ", func(t *testing.T) {
		base := strings.Repeat("x", 100)
		a, b := Join(63, base, "a"), Join(63, base, "b")
		if a == b {
			t.Errorf("both names are %q", a)
		}
		if a[:54] != b[:54] {
			t.Errorf("the readable starts differ: %q and %q", a, b)
		}
	})
}

// hashOf is the 8 hex digit suffix Join gives a shortened name, for cases whose point is not
// the hash itself.
func hashOf(joined string) string {
	return Join(9, joined)[:8]
}

func TestHash(t *testing.T) {
	t.Run("a hash is the first 10 hex digits of SHA-256", func(t *testing.T) {
		// echo -n a | sha256sum
		if got := Hash("a"); got != "ca978112ca" {
			t.Errorf("Hash(a) = %q, want ca978112ca", got)
		}
	})
	t.Run("where parts split matters", func(t *testing.T) {
		if Hash("ab", "c") == Hash("a", "bc") {
			t.Errorf("Hash(ab, c) == Hash(a, bc) == %q", Hash("a", "bc"))
		}
	})
}

func TestObjectNames(t *testing.T) {
	long := strings.Repeat("weekly-report-", 18) // 252 characters, as long as a Run name gets
	cases := []struct {
		name   string
		got    string
		want   string // empty when only the shape is checked
		maxLen int
	}{
		{"a step pod is named run-step-attempt-hash", StepPodName("weekly-report-x7k2", "fetch", 1),
			"weekly-report-x7k2-fetch-1-" + Hash("pod", "weekly-report-x7k2", "fetch", "1"), 63},
		{"a gate is named run-step-hash", GateName("weekly-report-x7k2", "review"),
			"weekly-report-x7k2-review-" + Hash("gate", "weekly-report-x7k2", "review"), 63},
		{"a child run is named run-scene-hash", ChildRunName("weekly-report-x7k2", "publish", nil),
			"weekly-report-x7k2-publish-" + Hash("child", "weekly-report-x7k2", "publish", "{}"), 63},
		{"an output config map is named run-step-output-hash", OutputConfigMapName("weekly-report-x7k2", "draft"),
			"weekly-report-x7k2-draft-output-" + Hash("output", "weekly-report-x7k2", "draft"), 253},
		{"a snapshot config map is named run-snapshot-hash", SnapshotConfigMapName("weekly-report-x7k2"),
			"weekly-report-x7k2-snapshot-" + Hash("snapshot", "weekly-report-x7k2"), 253},
		{"dots of a run name become hyphens, so a pod name is a DNS label", StepPodName("v1.2", "fetch", 1),
			"v1-2-fetch-1-" + Hash("pod", "v1.2", "fetch", "1"), 63},
		{"a short label value is unchanged", LabelValue("weekly-report-x7k2"), "weekly-report-x7k2", 63},
		{"a step pod of a long run fits a label", StepPodName(long, "fetch", 12), "", 63},
		{"a gate of a long run fits a label", GateName(long, "review"), "", 63},
		{"a child run of a long run fits a label", ChildRunName(long, "publish", map[string]string{"a": "b"}), "", 63},
		{"an output config map of a long run fits a subdomain", OutputConfigMapName(long, "draft"), "", 253},
		{"a snapshot config map of a long run fits a subdomain", SnapshotConfigMapName(long), "", 253},
		{"a long label value fits a label", LabelValue(long), "", 63},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.want != "" && tc.got != tc.want {
				t.Errorf("got %q, want %q", tc.got, tc.want)
			}
			if len(tc.got) > tc.maxLen {
				t.Errorf("%q is %d long, more than %d", tc.got, len(tc.got), tc.maxLen)
			}
			if !dns1123Label.MatchString(tc.got) {
				t.Errorf("%q is not a DNS-1123 label", tc.got)
			}
		})
	}
	t.Run("a known hash, so that names stay the same between versions", func(t *testing.T) {
		// printf 'pod\0r\0s\0001' | sha256sum | cut -c1-10
		if got, want := StepPodName("r", "s", 1), "r-s-1-e9d9582534"; got != want {
			t.Errorf("StepPodName(r, s, 1) = %q, want %q", got, want)
		}
	})
	t.Run("attempts of a step of a long run get different pods", func(t *testing.T) {
		if StepPodName(long, "fetch", 1) == StepPodName(long, "fetch", 2) {
			t.Errorf("attempts 1 and 2 share the pod %q", StepPodName(long, "fetch", 1))
		}
	})
}

// TestNamesDoNotCollideAcrossRuns checks pairs of distinct objects whose readable parts join to
// the same text: each pair must get two names.
func TestNamesDoNotCollideAcrossRuns(t *testing.T) {
	long := strings.Repeat("x", 70)
	cases := []struct {
		name string
		a, b string
	}{
		{"run a-b step c and run a step b-c: pods", StepPodName("a-b", "c", 1), StepPodName("a", "b-c", 1)},
		{"run a-b step c and run a step b-c: gates", GateName("a-b", "c"), GateName("a", "b-c")},
		{"run a-b step c and run a step b-c: outputs", OutputConfigMapName("a-b", "c"), OutputConfigMapName("a", "b-c")},
		{"run a step 1-2 and run a-1 step 2, both attempt 3: pods", StepPodName("a", "1-2", 3), StepPodName("a-1", "2", 3)},
		{"run a-b calling scene c and run a calling scene b-c", ChildRunName("a-b", "c", nil), ChildRunName("a", "b-c", nil)},
		{"run v1.2 and run v1-2", StepPodName("v1.2", "s", 1), StepPodName("v1-2", "s", 1)},
		{"run x-snapshot's snapshot and run x step snapshot's output",
			SnapshotConfigMapName("x-snapshot"), OutputConfigMapName("x", "snapshot")},
		{"run x step snapshot's output and run x-snapshot step output's output",
			OutputConfigMapName("x", "snapshot-output"), OutputConfigMapName("x-snapshot", "output")},
		{"a step pod and a gate of one run and step", StepPodName("r", "s", 1), GateName("r-s", "1")},
		{"a step's checkpoint and its output", CheckpointConfigMapName("r", "s"), OutputConfigMapName("r", "s")},
		{"run a-b step c and run a step b-c: checkpoints", CheckpointConfigMapName("a-b", "c"), CheckpointConfigMapName("a", "b-c")},
		{"one memory of two people", MemoryConfigMapName("m", "User", "ada"), MemoryConfigMapName("m", "User", "bob")},
		{"a Scene and a person of the same name", MemoryConfigMapName("m", "Scene", "ada"), MemoryConfigMapName("m", "User", "ada")},
		{"two long runs that differ only past the cut", StepPodName(long+"a", "s", 1), StepPodName(long+"b", "s", 1)},
		{"child params that would join alike", ChildRunName("r", "s", map[string]string{"a": "b-c"}),
			ChildRunName("r", "s", map[string]string{"a-b": "c"})},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.a == tc.b {
				t.Errorf("both are named %q", tc.a)
			}
		})
	}
}

func TestNamesStayValidForEveryRunLength(t *testing.T) {
	// Run names of every length up to a subdomain's limit, with hyphens and dots at every
	// position the cut can fall on, must give valid names within their limits.
	for _, unit := range []string{"ab-", "a.b-", "x"} {
		for length := 1; length <= MaxSubdomainLength; length++ {
			run := strings.TrimRight(strings.Repeat(unit, length/len(unit)+1)[:length], "-.")
			if run == "" {
				continue
			}
			pod := StepPodName(run, "step-name", 3)
			cm := OutputConfigMapName(run, "step-name")
			label := LabelValue(run)
			if len(pod) > MaxLabelLength || len(label) > MaxLabelLength {
				t.Fatalf("run %q: pod %q or label %q is longer than 63", run, pod, label)
			}
			for _, problem := range append(append(validation.IsDNS1123Subdomain(pod),
				validation.IsDNS1123Subdomain(cm)...), validation.IsValidLabelValue(label)...) {
				t.Fatalf("run %q: %s (pod %q, config map %q, label %q)", run, problem, pod, cm, label)
			}
			if !dns1123Label.MatchString(pod) {
				t.Fatalf("run %q: pod %q is not a DNS-1123 label", run, pod)
			}
		}
	}
}

//nolint:goconst // the calls read best with their param names spelled out
func TestChildRunName(t *testing.T) {
	cases := []struct {
		name string
		a, b string
		same bool
	}{
		{"the same call gives the same name",
			ChildRunName("r", "publish", map[string]string{"body": "x", "title": "y"}),
			ChildRunName("r", "publish", map[string]string{"title": "y", "body": "x"}), true},
		{"another param value gives another name",
			ChildRunName("r", "publish", map[string]string{"body": "x"}),
			ChildRunName("r", "publish", map[string]string{"body": "y"}), false},
		{"another scene gives another name",
			ChildRunName("r", "publish", map[string]string{"body": "x"}),
			ChildRunName("r", "archive", map[string]string{"body": "x"}), false},
		{"another parent gives another name",
			ChildRunName("r1", "publish", nil), ChildRunName("r2", "publish", nil), false},
		{"values cannot pass for keys",
			ChildRunName("r", "s", map[string]string{"a": "b", "c": ""}),
			ChildRunName("r", "s", map[string]string{"a": `b","c":"`}), false},
		{"no params and empty params are the same call",
			ChildRunName("r", "s", nil), ChildRunName("r", "s", map[string]string{}), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if (tc.a == tc.b) != tc.same {
				t.Errorf("names %q and %q: same = %v, want %v", tc.a, tc.b, tc.a == tc.b, tc.same)
			}
		})
	}
}

func TestAlternate(t *testing.T) {
	pod := StepPodName("a-run-with-a-rather-long-name", "a-step-with-a-long-name-too", 3)
	seen := map[string]bool{pod: true}
	for k := 1; k <= MaxAlternates; k++ {
		alt := Alternate(MaxLabelLength, pod, "uid-1", k)
		if len(alt) > MaxLabelLength || seen[alt] {
			t.Errorf("alternate %d %q is too long or not distinct", k, alt)
		}
		seen[alt] = true
		if again := Alternate(MaxLabelLength, pod, "uid-1", k); again != alt {
			t.Errorf("alternate %d is not deterministic: %q then %q", k, alt, again)
		}
		if other := Alternate(MaxLabelLength, pod, "uid-2", k); other == alt {
			t.Errorf("alternate %d does not depend on the owner's UID: %q", k, alt)
		}
	}
}
