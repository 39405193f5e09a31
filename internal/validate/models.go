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

package validate

import (
	"fmt"
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

// validateModels checks what the models of a Scene say about each other: a fallback names
// another model of the Scene, once.
func validateModels(spec *ergonv1alpha1.SceneSpec) field.ErrorList {
	var errs field.ErrorList
	models := field.NewPath("spec", "models")
	for _, name := range slices.Sorted(maps.Keys(spec.Models)) {
		seen := map[string]bool{}
		for i, fb := range spec.Models[name].Fallback {
			p := models.Key(name).Child("fallback").Index(i)
			_, known := spec.Models[fb]
			switch {
			case fb == name:
				errs = append(errs, field.Invalid(p, fb, "a model cannot fall back to itself"))
			case !known:
				errs = append(errs, field.Invalid(p, fb,
					fmt.Sprintf("no model %q in spec.models; define it there or name another", fb)))
			case seen[fb]:
				errs = append(errs, field.Duplicate(p, fb))
			}
			seen[fb] = true
		}
	}
	return errs
}
