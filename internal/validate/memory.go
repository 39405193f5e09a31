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
	"k8s.io/apimachinery/pkg/util/validation/field"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/closure"
)

// validateMemory refuses the remember tool in a Scene without spec.memory: the tool would
// have nowhere to keep what the agent remembers. (The schema bounds spec.memory itself.)
func validateMemory(spec *ergonv1alpha1.SceneSpec) field.ErrorList {
	if spec.Memory != nil {
		return nil
	}
	var errs field.ErrorList
	for path, s := range closure.Steps(spec) {
		if s.Agent == nil {
			continue
		}
		for j, tool := range s.Agent.Tools {
			if tool.IsBuiltin() && tool.Name == ergonv1alpha1.ToolRemember {
				errs = append(errs, field.Forbidden(path.Child("agent", "tools").Index(j),
					"the tool remember keeps notes in the Scene's memory; set spec.memory or remove it"))
			}
		}
	}
	return errs
}
