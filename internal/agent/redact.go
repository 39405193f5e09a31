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

package agent

import (
	"cmp"
	"encoding/json"
	"slices"
	"strings"
)

// Redacted replaces a secret value wherever the runtime would write it.
const Redacted = "[REDACTED]"

// Redactor removes secret values from text. The zero value removes nothing.
type Redactor struct {
	r *strings.Replacer
}

// NewRedactor redacts the given values, and each as it appears inside a JSON string (tool
// call arguments are JSON text: a secret with a quote or a backslash is escaped there); empty
// values are ignored. Longer values are replaced first, so a secret that contains another is
// removed whole.
func NewRedactor(values ...string) *Redactor {
	vs := slices.DeleteFunc(slices.Clone(values), func(v string) bool { return v == "" })
	for _, v := range vs {
		if quoted, err := json.Marshal(v); err == nil {
			if escaped := string(quoted[1 : len(quoted)-1]); escaped != v {
				vs = append(vs, escaped)
			}
		}
	}
	if len(vs) == 0 {
		return &Redactor{}
	}
	slices.SortFunc(vs, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	vs = slices.Compact(vs)
	pairs := make([]string, 0, 2*len(vs))
	for _, v := range vs {
		pairs = append(pairs, v, Redacted)
	}
	return &Redactor{r: strings.NewReplacer(pairs...)}
}

// String returns s without secret values.
func (r *Redactor) String(s string) string {
	if r == nil || r.r == nil {
		return s
	}
	return r.r.Replace(s)
}
