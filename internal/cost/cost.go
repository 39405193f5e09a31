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

// Package cost is the arithmetic of model prices and costs: decimal strings (such as "3.00"
// per million tokens), summed exactly.
package cost

import (
	"fmt"
	"math/big"
	"strings"
)

// Digits is how many decimal places a cost keeps: a token of a model priced 0.000001 per
// million costs 10^-12.
const Digits = 12

// Pricing is the price of a million prompt and of a million completion tokens.
type Pricing struct {
	InputPerMillion  string `json:"inputPerMillion"`
	OutputPerMillion string `json:"outputPerMillion"`
}

// Of is what a model call of so many prompt and completion tokens costs under p, as a
// decimal string.
func Of(p Pricing, promptTokens, completionTokens int64) (string, error) {
	in, err := parse(p.InputPerMillion)
	if err != nil {
		return "", fmt.Errorf("inputPerMillion: %w", err)
	}
	out, err := parse(p.OutputPerMillion)
	if err != nil {
		return "", fmt.Errorf("outputPerMillion: %w", err)
	}
	c := new(big.Rat).Mul(in, big.NewRat(promptTokens, 1))
	c.Add(c, new(big.Rat).Mul(out, big.NewRat(completionTokens, 1)))
	c.Quo(c, big.NewRat(1_000_000, 1))
	return format(c), nil
}

// Sum adds decimal costs; empty ones count as nothing, and the sum of none is "". A value that
// is not a decimal is an error.
func Sum(costs ...string) (string, error) {
	total, seen := new(big.Rat), false
	for _, s := range costs {
		if s == "" {
			continue
		}
		v, err := parse(s)
		if err != nil {
			return "", err
		}
		total.Add(total, v)
		seen = true
	}
	if !seen {
		return "", nil
	}
	return format(total), nil
}

// Check says whether s is a price: a non-negative decimal.
func Check(s string) error {
	_, err := parse(s)
	return err
}

func parse(s string) (*big.Rat, error) {
	bad := s == "" || strings.Trim(s, "0123456789.") != "" || strings.Count(s, ".") > 1 ||
		strings.HasPrefix(s, ".") || strings.HasSuffix(s, ".")
	if bad {
		return nil, fmt.Errorf("%q is not a decimal such as 3.00", s)
	}
	v, ok := new(big.Rat).SetString(s)
	if !ok {
		return nil, fmt.Errorf("%q is not a decimal such as 3.00", s)
	}
	return v, nil
}

// format writes c with at most Digits decimal places, without trailing zeros.
func format(c *big.Rat) string {
	s := c.FloatString(Digits)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}
