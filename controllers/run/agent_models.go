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

package run

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/agentspec"
	"github.com/ergon-dev/ergon/internal/cost"
	"github.com/ergon-dev/ergon/internal/stepcontract"
)

// modelConfig renders one of the Scene's models for the agent runtime, without its key.
func modelConfig(name string, m ergonv1alpha1.ModelSpec) agentspec.ModelConfig {
	c := agentspec.ModelConfig{Name: name, BaseURL: string(m.BaseURL), Model: m.Model, Seed: m.Seed,
		ContextBudget: m.ContextBudget.CharsBudget()}
	if p := m.Pricing; p != nil {
		c.Pricing = &cost.Pricing{InputPerMillion: p.InputPerMillion, OutputPerMillion: p.OutputPerMillion}
	}
	if m.Temperature != nil {
		if t, err := strconv.ParseFloat(*m.Temperature, 64); err == nil {
			c.Temperature = &t
		}
	}
	return c
}

// fallbackKeyEnv names the environment variable that holds the key of a step model's i-th
// fallback (from 0).
func fallbackKeyEnv(i int) string {
	return stepcontract.EnvAgentAPIKey + "_FALLBACK_" + strconv.Itoa(i+1)
}

// fallbackConfigs renders a model's fallbacks in order; admission checked that each exists.
func fallbackConfigs(models map[string]ergonv1alpha1.ModelSpec, fallback []string) []agentspec.ModelConfig {
	var out []agentspec.ModelConfig
	for i, name := range fallback {
		m, ok := models[name]
		if !ok {
			continue
		}
		c := modelConfig(name, m)
		if m.APIKeySecretRef != nil {
			c.APIKeyEnv = fallbackKeyEnv(i)
		}
		out = append(out, c)
	}
	return out
}

// fallbackKeysEnv mounts the key of each fallback model as its own environment variable, from
// its Secret by reference: the controller never reads it.
func fallbackKeysEnv(models map[string]ergonv1alpha1.ModelSpec, fallback []string) []corev1.EnvVar {
	var env []corev1.EnvVar
	for i, name := range fallback {
		if ref := models[name].APIKeySecretRef; ref != nil {
			env = append(env, corev1.EnvVar{Name: fallbackKeyEnv(i),
				ValueFrom: &corev1.EnvVarSource{SecretKeyRef: ref.DeepCopy()}})
		}
	}
	return env
}
