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

package kubectlergon

import (
	"fmt"
	"maps"
	"regexp"
	"strings"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

var nonName = regexp.MustCompile(`[^a-z0-9]+`)

// corpusName names a corpus object without a name the way the webhook suite does: the case's
// name for the object, setup-N for setup objects.
func corpusName(caseName string, i, setups int) string {
	fallback := caseName
	if i < setups {
		fallback = fmt.Sprintf("setup-%d", i)
	}
	name := strings.Trim(nonName.ReplaceAllString(strings.ToLower(fallback), "-"), "-")
	return name[:min(len(name), 63)]
}

// withDefaults gives a corpus object its apiVersion and, when it has none, a name.
func withDefaults(raw map[string]any, name string) map[string]any {
	obj := maps.Clone(raw)
	obj["apiVersion"] = ergonv1alpha1.GroupVersion.String()
	meta, _ := obj["metadata"].(map[string]any)
	meta = maps.Clone(meta)
	if meta == nil {
		meta = map[string]any{}
	}
	if meta["name"] == nil {
		meta["name"] = name
	}
	obj["metadata"] = meta
	return obj
}
