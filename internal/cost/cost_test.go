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

import (
	"strings"
	"testing"
)

func TestOf(t *testing.T) {
	cases := []struct {
		name        string
		p           Pricing
		in, out     int64
		want, error string
	}{
		{"input and output priced apart", Pricing{"3.00", "15.00"}, 1000, 200, "0.006", ""},
		{"a million of each", Pricing{"0.15", "0.6"}, 1_000_000, 1_000_000, "0.75", ""},
		{"no tokens cost nothing", Pricing{"3", "15"}, 0, 0, "0", ""},
		{"tiny prices keep their digits", Pricing{"0.000001", "0"}, 1, 0, "0.000000000001", ""},
		{"free", Pricing{"0", "0"}, 500, 500, "0", ""},
		{"a price that is not a decimal", Pricing{"3,00", "1"}, 1, 1, "", `inputPerMillion: "3,00" is not a decimal`},
		{"a negative price", Pricing{"1", "-1"}, 1, 1, "", `outputPerMillion: "-1" is not a decimal`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Of(tc.p, tc.in, tc.out)
			if tc.error != "" {
				if err == nil || !contains(err.Error(), tc.error) {
					t.Fatalf("err = %v, want %q", err, tc.error)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("Of = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestSum(t *testing.T) {
	cases := []struct {
		name  string
		costs []string
		want  string
		err   bool
	}{
		{"none", nil, "", false},
		{"only unset ones", []string{"", ""}, "", false},
		{"decimals add exactly", []string{"0.1", "0.2"}, "0.3", false},
		{"unset ones are skipped", []string{"0.006", "", "1.5"}, "1.506", false},
		{"zero is a cost", []string{"0"}, "0", false},
		{"tiny and large", []string{"123456.000000000001", "0.000000000001"}, "123456.000000000002", false},
		{"garbage", []string{"1", "abc"}, "", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Sum(tc.costs...)
			if (err != nil) != tc.err || got != tc.want {
				t.Fatalf("Sum = %q, %v; want %q (error %v)", got, err, tc.want, tc.err)
			}
		})
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
