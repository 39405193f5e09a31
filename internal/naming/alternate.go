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

import "strconv"

// MaxAlternates is how many alternate names Ergon tries for one predictable name that someone
// else's object holds, before it gives up and fails the work that needed it, naming them all.
const MaxAlternates = 3

// Alternate is the k-th (from 1) name Ergon uses in place of a predictable name (such as a
// StepPodName) that an object it does not own holds: a readable start of name and a hash of
// name, the owner's UID and k. The UID is not known before the owner exists, so nobody can
// take the alternates of a Run before it is created; and the name is a pure function of its
// inputs, so a restarted manager tries the same alternates in the same order and finds the
// object it created. maxLen is the limit of the object's kind (MaxLabelLength for pods and
// Runs, MaxSubdomainLength for ConfigMaps).
func Alternate(maxLen int, name, ownerUID string, k int) string {
	return unique(maxLen, []string{name}, "alternate", name, ownerUID, strconv.Itoa(k))
}
