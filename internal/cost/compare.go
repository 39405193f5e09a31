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

import "math/big"

// Compare compares two decimal costs as Sum reads them: -1 when a < b, 0 when equal, 1 when
// a > b. An empty cost is zero.
func Compare(a, b string) (int, error) {
	x, err := orZero(a)
	if err != nil {
		return 0, err
	}
	y, err := orZero(b)
	if err != nil {
		return 0, err
	}
	return x.Cmp(y), nil
}

func orZero(s string) (*big.Rat, error) {
	if s == "" {
		return new(big.Rat), nil
	}
	return parse(s)
}
