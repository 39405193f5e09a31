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

// Package agent is Ergon's agent runtime: the loop an agent step runs in its pod. It calls an
// OpenAI-compatible chat API, lets the model use tools, holds the answer to the step's output
// contract (sending invalid answers back for repair), keeps within the step's budgets, and
// records a transcript. Secret values are redacted before anything is written.
package agent

import (
	"errors"
	"fmt"

	"github.com/ergon-dev/ergon/internal/agentspec"
	"github.com/ergon-dev/ergon/internal/cost"
)

// The spec types are agentspec's; these names keep the runtime's code short.
type (
	Spec        = agentspec.Spec
	ModelConfig = agentspec.ModelConfig
	HTTPConfig  = agentspec.HTTPConfig
	Contract    = agentspec.Contract
	NamedOutput = agentspec.NamedOutput
	Duration    = agentspec.Duration
)

// CheckSpec reports what is wrong with a spec, naming its fields.
func CheckSpec(s *Spec) error {
	var errs []error
	if s.Model.BaseURL == "" {
		errs = append(errs, errors.New("model.baseURL is empty"))
	}
	if s.Model.Model == "" {
		errs = append(errs, errors.New("model.model is empty"))
	}
	if s.Prompt == "" {
		errs = append(errs, errors.New("prompt is empty"))
	}
	if s.MaxTurns < 1 {
		errs = append(errs, fmt.Errorf("maxTurns is %d; it must be at least 1", s.MaxTurns))
	}
	for _, t := range s.Tools {
		tool, ok := registry[t]
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("tools: unknown tool %q", t))
		case tool.NeedsWorkspace && s.Workspace == "":
			errs = append(errs, fmt.Errorf("tools: %q needs a Workspace; bind the Scene to one", t))
		}
	}
	errs = append(errs, checkMCP(s)...)
	errs = append(errs, checkCallTools(s)...)
	for i, m := range append([]ModelConfig{s.Model}, s.Fallbacks...) {
		if m.Pricing == nil {
			continue
		}
		field := "model.pricing"
		if i > 0 {
			field = fmt.Sprintf("fallbacks[%d].pricing", i-1)
		}
		for name, v := range map[string]string{"inputPerMillion": m.Pricing.InputPerMillion, "outputPerMillion": m.Pricing.OutputPerMillion} {
			if err := cost.Check(v); err != nil {
				errs = append(errs, fmt.Errorf("%s.%s: %w", field, name, err))
			}
		}
	}
	if _, err := compileContract(s.Output); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
