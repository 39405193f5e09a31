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
	"testing"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

func TestModelFallbacksMustNameOtherModels(t *testing.T) {
	models := func(fallback ...string) map[string]ergonv1alpha1.ModelSpec {
		return map[string]ergonv1alpha1.ModelSpec{
			"default": {BaseURL: "http://llm/v1", Model: "m", Fallback: fallback},
			"backup":  {BaseURL: "http://other/v1", Model: "n"},
		}
	}
	cases := []struct {
		name     string
		fallback []string
		want     []string
	}{
		{"another model of the Scene is fine", []string{"backup"}, nil},
		{"an unknown model", []string{"backup", "nope"},
			[]string{`spec.models[default].fallback[1]: Invalid value: "nope"`, `no model "nope" in spec.models`}},
		{"the model itself", []string{"default"},
			[]string{`spec.models[default].fallback[0]`, "cannot fall back to itself"}},
		{"the same model twice", []string{"backup", "backup"},
			[]string{`spec.models[default].fallback[1]: Duplicate value: "backup"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := ergonv1alpha1.SceneSpec{Models: models(tc.fallback...), Steps: []ergonv1alpha1.Step{agentStep("think")}}
			expectErrors(t, Scene(&spec), tc.want)
		})
	}
}
