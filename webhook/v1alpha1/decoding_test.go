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

package v1alpha1

import (
	"strings"
	"testing"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

func TestWrongTypeNamesTheField(t *testing.T) {
	cases := []struct {
		name, raw string
		want      []string // empty: raw decodes
	}{
		{"a param's number", `{"spec":{"sceneRef":{"name":"s"},"params":{"a":"x","sprint":43}}}`,
			[]string{"spec.params[sprint]: Invalid value: 43", "must be a string, not a number", "quote"}},
		{"a param's object", `{"spec":{"params":{"cfg":{"a":1}}}}`,
			[]string{`spec.params[cfg]: Invalid value: {"a":1}`, "not an object"}},
		{"a struct field's type", `{"spec":{"cancel":"yes"}}`, []string{"spec.cancel: must be a bool, not a string"}},
		{"a good Run", `{"spec":{"sceneRef":{"name":"s"},"params":{"sprint":"43"}}}`, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := wrongType([]byte(tc.raw), &ergonv1alpha1.Run{})
			if len(tc.want) == 0 {
				if got != "" {
					t.Fatalf("want no problem, got %q", got)
				}
				return
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("%q does not say %q", got, w)
				}
			}
		})
	}
}
