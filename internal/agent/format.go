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

package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"sigs.k8s.io/yaml"
)

// Format is an output format of the contract. Adding one is a call to RegisterFormat.
type Format struct {
	Name string
	// Instruction tells the model how to write an answer in this format.
	Instruction string
	// Parse checks an answer and returns its value for schema validation (nil when the format
	// has no structure) and the text kept as the output.
	Parse func(answer string) (value any, output string, err error)
}

var formats = map[string]Format{}

// RegisterFormat adds an output format.
func RegisterFormat(f Format) { formats[f.Name] = f }

func init() {
	RegisterFormat(Format{Name: "text", Instruction: "Answer in plain text.", Parse: parseText})
	RegisterFormat(Format{Name: "markdown", Instruction: "Answer in Markdown.", Parse: parseText})
	RegisterFormat(Format{Name: "json",
		Instruction: "Answer with one JSON value only: no prose before or after it, no code fences.",
		Parse:       parseJSON})
	RegisterFormat(Format{Name: "yaml",
		Instruction: "Answer with one YAML document only: no prose before or after it, no code fences.",
		Parse:       parseYAML})
}

func parseText(answer string) (any, string, error) {
	s := strings.TrimSpace(answer)
	return s, s, nil
}

// stripFence removes one Markdown code fence around an answer, which models add often.
func stripFence(s string) string {
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "```") || !strings.HasSuffix(s, "```") || len(s) < 6 {
		return s
	}
	body := s[3 : len(s)-3]
	if nl := strings.IndexByte(body, '\n'); nl >= 0 && !strings.ContainsAny(body[:nl], " {[\"") {
		body = body[nl+1:] // the info string, e.g. json
	}
	return strings.TrimSpace(body)
}

func parseJSON(answer string) (any, string, error) {
	s := stripFence(answer)
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(s))
	if err != nil {
		return nil, "", fmt.Errorf("the answer is not valid JSON: %v", err)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(s)); err != nil {
		return nil, "", fmt.Errorf("the answer is not valid JSON: %v", err)
	}
	return v, buf.String(), nil
}

func parseYAML(answer string) (any, string, error) {
	s := stripFence(answer)
	j, err := yaml.YAMLToJSON([]byte(s))
	if err != nil {
		return nil, "", fmt.Errorf("the answer is not valid YAML: %v", err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
	if err != nil {
		return nil, "", fmt.Errorf("the answer is not valid YAML: %v", err)
	}
	return v, s, nil
}
