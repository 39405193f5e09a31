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

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

func TestUnitNamesAreDistinctReadableAndValid(t *testing.T) {
	seen := map[string]string{}
	long := strings.Repeat("r", 63)
	for _, run := range []string{"r", long} {
		for _, index := range []int32{-1, 0, 1, 10, 999} {
			for _, iteration := range []int32{0, 1, 2, 12} {
				for _, attempt := range []int32{1, 2} {
					names := map[string]string{
						"pod":   UnitPodName(run, "lint", index, iteration, attempt),
						"child": UnitChildRunName(run, "lint", index, iteration),
						"cm":    UnitOutputConfigMapName(run, "lint", index, iteration),
					}
					for kind, name := range names {
						if errs := validation.IsDNS1123Label(name); kind != "cm" && len(errs) > 0 {
							t.Errorf("%s %q: %v", kind, name, errs)
						}
						if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
							t.Errorf("%s %q: %v", kind, name, errs)
						}
						key := kind + "/" + name
						if kind != "pod" && attempt == 2 {
							continue // the same object as attempt 1's
						}
						if prev, dup := seen[key]; dup {
							t.Errorf("%s %q twice: %s", kind, name, prev)
						}
						seen[key] = run
					}
				}
			}
		}
	}
	if got := UnitPodName("r", "lint", 3, 0, 1); !strings.HasPrefix(got, "r-lint-3-1-") {
		t.Errorf("pod of instance 3 = %q, want r-lint-3-1-<hash>", got)
	}
	if got := UnitName("lint", 3, 2); got != "lint-3-i2" {
		t.Errorf("UnitName = %q", got)
	}
	if got := UnitPodName("r", "draft", -1, 2, 1); !strings.HasPrefix(got, "r-draft-i2-1-") {
		t.Errorf("pod of iteration 2 = %q", got)
	}
}
