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

// Package naming derives the names of the objects Ergon creates. Names are a pure function of
// their owner and purpose, so a reconciler that runs twice finds the object it created the
// first time instead of creating another (docs/design.md, principle 2).
//
// The name of every object a Run creates is a readable start and a hash of what the object
// is: its kind and the parts that identify it (Run, step, attempt, ...), separated by NUL bytes,
// which cannot occur in names. Run `a-b` step `c` and Run `a` step `b-c` read alike but hash
// differently, so no two Runs can be given one name by how their names split at hyphens.
// A name is a claim, not a proof: the Run controller still uses an object only when the Run
// is its controlling owner (see the controllers package).
//
// Every name fits its kind's length limit: the readable start is cut to leave room for the
// hash, which is always there.
package naming

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"strings"
)

// Length limits of Kubernetes names.
const (
	// MaxLabelLength is the limit of a DNS-1123 label: pod names that become host names,
	// label values, and names that must serve as either.
	MaxLabelLength = 63
	// MaxSubdomainLength is the limit of a DNS-1123 subdomain, such as a ConfigMap name.
	MaxSubdomainLength = 253
)

// joinHashLength is how many hex digits of SHA-256 end a shortened name: 32 bits, enough that
// two distinct long names of the same owner do not meet by chance.
const joinHashLength = 8

// Join joins parts with "-". When the result is longer than maxLen, it keeps as much of its
// start as fits before "-" and the first 8 hex digits of the SHA-256 of the whole joined
// name, so the result is at most maxLen long and distinct inputs give distinct names. Hyphens
// and dots the cut leaves at the end are dropped, which keeps a valid DNS-1123 name valid.
// A maxLen under 10 leaves room only for the hash, cut to fit.
func Join(maxLen int, parts ...string) string {
	joined := strings.Join(parts, "-")
	if len(joined) <= maxLen {
		return joined
	}
	sum := sha256.Sum256([]byte(joined))
	hash := hex.EncodeToString(sum[:])[:joinHashLength]
	keep := maxLen - len(hash) - 1
	if keep <= 0 {
		return hash[:min(max(maxLen, 0), len(hash))]
	}
	prefix := strings.TrimRight(joined[:keep], "-.")
	if prefix == "" {
		return hash
	}
	return prefix + "-" + hash
}

// Hash returns the first 10 hex digits of the SHA-256 of the parts joined by NUL bytes. The
// separator cannot occur in names, so ("ab", "c") and ("a", "bc") hash differently.
func Hash(parts ...string) string {
	sum := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(sum[:])[:10]
}

// uniqueHashLength is the length of the hash that ends every name from unique: Hash's 10 hex
// digits.
const uniqueHashLength = 10

// unique names an object: readable joined with "-" (dots made hyphens, so a name stays a
// DNS-1123 label), cut so that "-" and the hash of kind and identity fit in maxLen. The hash
// alone tells objects apart; the readable start is for people.
func unique(maxLen int, readable []string, kind string, identity ...string) string {
	hash := Hash(append([]string{kind}, identity...)...)
	prefix := strings.ReplaceAll(strings.Join(readable, "-"), ".", "-")
	if keep := maxLen - uniqueHashLength - 1; len(prefix) > keep {
		prefix = prefix[:max(keep, 0)]
	}
	prefix = strings.TrimRight(prefix, "-")
	if prefix == "" {
		return hash
	}
	return prefix + "-" + hash
}

// StepPodName names the pod of one attempt of a step: <run>-<step>-<attempt>-<hash>. Pod names
// become host names, so it is kept to a DNS label's 63 characters.
func StepPodName(run, step string, attempt int32) string {
	a := strconv.FormatInt(int64(attempt), 10)
	return unique(MaxLabelLength, []string{run, step, a}, "pod", run, step, a)
}

// GateName names the Gate of a gate step: <run>-<step>-<hash>. A Gate name may be a subdomain
// of 253 characters, but it is kept to 63 so it can also be a label value that selects the Gate.
func GateName(run, step string) string {
	return unique(MaxLabelLength, []string{run, step}, "gate", run, step)
}

// ChildRunName names the Run a scene step starts: <run>-<scene>-<hash>, where the hash covers
// the Run, the called Scene and its rendered params, so one parent Run runs each call once,
// whichever step asks for it. The params are hashed in their JSON form, whose keys are
// sorted, so the name does not depend on map order, and no choice of keys and values can make
// two different calls look alike. It is kept to 63 characters so it can be a label value.
func ChildRunName(run, scene string, params map[string]string) string {
	if params == nil {
		// No params and empty params are the same call; JSON would tell them apart.
		params = map[string]string{}
	}
	// Marshalling a map of strings cannot fail.
	encoded, _ := json.Marshal(params)
	return unique(MaxLabelLength, []string{run, scene}, "child", run, scene, string(encoded))
}

// OutputConfigMapName names the ConfigMap that holds a step's whole output:
// <run>-<step>-output-<hash>, within a ConfigMap name's 253 characters.
func OutputConfigMapName(run, step string) string {
	return unique(MaxSubdomainLength, []string{run, step, "output"}, "output", run, step)
}

// SnapshotConfigMapName names the ConfigMap that holds the snapshot of a Run's Scene when it is
// too large for the Run's status: <run>-snapshot-<hash>.
func SnapshotConfigMapName(run string) string {
	return unique(MaxSubdomainLength, []string{run, "snapshot"}, "snapshot", run)
}

// LabelValue fits a name, such as a Run's, into a label value's 63 characters, shortened with
// a hash as Join does, so objects can be selected by the name of their owner.
func LabelValue(name string) string {
	return Join(MaxLabelLength, name)
}
