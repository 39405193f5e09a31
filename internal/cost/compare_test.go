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

package cost

import "testing"

func TestCompare(t *testing.T) {
	cases := []struct {
		a, b string
		want int
		err  bool
	}{
		{"1.5", "1.50", 0, false},
		{"0.000000000001", "0", 1, false},
		{"", "0", 0, false},
		{"", "0.01", -1, false},
		{"25", "24.999999999999", 1, false},
		{"3", "12", -1, false},
		{"-1", "0", 0, true},
		{"1", "x", 0, true},
	}
	for _, tc := range cases {
		got, err := Compare(tc.a, tc.b)
		if (err != nil) != tc.err || (!tc.err && got != tc.want) {
			t.Errorf("Compare(%q, %q) = %d, %v; want %d, error %v", tc.a, tc.b, got, err, tc.want, tc.err)
		}
	}
}
