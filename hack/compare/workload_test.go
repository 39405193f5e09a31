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

package main

import "testing"

func TestParseWorkloads(t *testing.T) {
	ws, err := parseWorkloads("chain-3,chain-4-sleep1500ms,fan-out-2")
	if err != nil {
		t.Fatal(err)
	}
	if len(ws) != 3 || ws[0].steps[2].script() != "true" || ws[1].name != "chain-4-sleep1500ms" ||
		len(ws[1].steps) != 4 || ws[1].steps[3].script() != "sleep 1.5" || ws[1].steps[3].deps[0] != "s002" {
		t.Fatalf("parsed %+v", ws)
	}
	ws, err = parseWorkloads("chains-200x3")
	if err != nil {
		t.Fatal(err)
	}
	if w := ws[0]; w.name != "chains-200x3" || w.groups != 200 || len(w.steps) != 3 || w.steps[2].deps[0] != "s001" || w.size() != 600 {
		t.Fatalf("chains-200x3 parsed as %+v", w)
	}
	for _, bad := range []string{"chain-4-sleep0ms", "chain-4-sleep1.5s", "chain-0", "ring-3", "chains-0x3", "chains-2x0", "chains-2"} {
		if _, err := parseWorkloads(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}
