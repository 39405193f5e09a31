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

package compile

import (
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

// CheckParams checks the params a Run gives against its Scene: each must be declared and not
// come from a Secret, and every required one must be given. Errors name spec.params.NAME.
func CheckParams(scene *ergonv1alpha1.SceneSpec, given map[string]string) field.ErrorList {
	path := field.NewPath("spec", "params")
	var errs field.ErrorList
	declared := map[string]bool{}
	for _, p := range scene.Params {
		declared[p.Name] = true
		_, set := given[p.Name]
		switch {
		case p.ValueFrom != nil && set:
			errs = append(errs, field.Forbidden(path.Key(p.Name),
				"this param comes from a Secret and cannot be set by a Run; remove it"))
		case p.ValueFrom == nil && p.Default == nil && !set:
			errs = append(errs, field.Required(path.Key(p.Name), "the Scene requires this param; set it"))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(given)) {
		if !declared[name] {
			errs = append(errs, field.NotSupported(path.Key(name), name, slices.Sorted(maps.Keys(declared))))
		}
	}
	return errs
}
