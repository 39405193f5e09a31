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

package v1alpha1

import "encoding/json"

// ParamsSchema is the JSON Schema of the params a caller sets on a Run of the Scene, as a Scene
// tool of an agent and an MCP tool take them: an object with a string property per param the
// Scene declares (params from a Secret are not the caller's to set), those without a default
// required, nothing else allowed.
func (s *SceneSpec) ParamsSchema() json.RawMessage {
	props := map[string]any{}
	required := []string{}
	for _, p := range s.SettableParams() {
		prop := map[string]any{"type": "string"}
		if p.Description != "" {
			prop["description"] = p.Description
		}
		props[p.Name] = prop
		if p.Default == nil {
			required = append(required, p.Name)
		}
	}
	b, _ := json.Marshal(map[string]any{"type": "object", "properties": props, "required": required,
		"additionalProperties": false}) // plain data
	return b
}

// SettableParams are the params a caller may set on a Run of the Scene: all but those whose
// value comes from a Secret.
func (s *SceneSpec) SettableParams() []ParamSpec {
	var settable []ParamSpec
	for _, p := range s.Params {
		if p.ValueFrom == nil {
			settable = append(settable, p)
		}
	}
	return settable
}
