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

// Package artifacts keeps the files steps produce and consume in a blob store, and hands step
// pods, which carry no credentials, short-lived grants to exactly their own keys.
//
// A key names one artifact of one attempt of one step instance of one Run:
//
//	v1/<namespace UID>/<Run UID>/<step>/<instance>/<attempt>.<pod UID>/<name>
//
// The namespace UID comes first so that nothing crosses namespaces, even a namespace deleted
// and made again under the same name; the Run UID keeps a Run of the same name apart; the pod
// UID is that of the attempt's pod, whose token alone may write there: a pod made by anyone
// else under a step pod's name writes only beside it, where no Run looks.
package artifacts

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/types"
)

// Defaults of the manager's limits (--max-artifact-bytes, --max-run-artifact-bytes).
const (
	// DefaultMaxArtifactBytes bounds one artifact: 1 GiB.
	DefaultMaxArtifactBytes int64 = 1 << 30
	// DefaultMaxRunArtifactBytes bounds the artifacts one Run keeps, over all its steps and
	// attempts: 10 GiB.
	DefaultMaxRunArtifactBytes int64 = 10 << 30
	// MaxPerStep is the most artifacts a step declares, and the most it consumes.
	MaxPerStep = 16
)

// ValidName says why name cannot name an artifact, or nil: an artifact's name is a file name,
// without a path, ^[a-z0-9]([-a-z0-9_.]{0,61}[a-z0-9])?$ without "..". (No regexp: the
// entrypoint of every step pod imports this package, and a regexp costs it time to start.)
func ValidName(name string) error {
	alnum := func(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }
	ok := len(name) >= 1 && len(name) <= 63 && alnum(name[0]) && alnum(name[len(name)-1]) && !strings.Contains(name, "..")
	for i := 0; ok && i < len(name); i++ {
		ok = alnum(name[i]) || name[i] == '-' || name[i] == '_' || name[i] == '.'
	}
	if !ok {
		return fmt.Errorf("%q is not an artifact name: 1 to 63 lowercase letters, digits, '-', '_' or '.', "+
			"beginning and ending with a letter or digit, without '..'", name)
	}
	return nil
}

// Ref names one artifact of a Run: the place its key is built from.
type Ref struct {
	NamespaceUID types.UID
	RunUID       types.UID
	Step         string
	// Instance is the forEach instance (0, 1, ...), or -1 for a step without forEach.
	Instance int
	Attempt  int32
	PodUID   types.UID
	Name     string
}

// Key is where the artifact lives in the store.
func (r Ref) Key() string {
	inst := "-"
	if r.Instance >= 0 {
		inst = strconv.Itoa(r.Instance)
	}
	return strings.Join([]string{"v1", string(r.NamespaceUID), string(r.RunUID), r.Step, inst,
		strconv.Itoa(int(r.Attempt)) + "." + string(r.PodUID), r.Name}, "/")
}

// RunPrefix is the prefix of every key of a Run's artifacts.
func RunPrefix(namespaceUID, runUID types.UID) string {
	return "v1/" + string(namespaceUID) + "/" + string(runUID) + "/"
}

// ParseKey reads a key back; an error says what of it is wrong.
func ParseKey(key string) (Ref, error) {
	parts := strings.Split(key, "/")
	if len(parts) != 7 || parts[0] != "v1" {
		return Ref{}, fmt.Errorf("%q is not an artifact key", key)
	}
	r := Ref{NamespaceUID: types.UID(parts[1]), RunUID: types.UID(parts[2]), Step: parts[3], Instance: -1, Name: parts[6]}
	if parts[4] != "-" {
		n, err := strconv.Atoi(parts[4])
		if err != nil || n < 0 {
			return Ref{}, fmt.Errorf("%q is not an artifact key: instance %q", key, parts[4])
		}
		r.Instance = n
	}
	attempt, pod, _ := strings.Cut(parts[5], ".")
	a, err := strconv.ParseInt(attempt, 10, 32)
	if err != nil || a < 1 {
		return Ref{}, fmt.Errorf("%q is not an artifact key: attempt %q", key, attempt)
	}
	r.Attempt, r.PodUID = int32(a), types.UID(pod)
	if r.NamespaceUID == "" || r.RunUID == "" || r.Step == "" || r.PodUID == "" {
		return Ref{}, fmt.Errorf("%q is not an artifact key", key)
	}
	if err := ValidName(r.Name); err != nil {
		return Ref{}, err
	}
	return r, nil
}
