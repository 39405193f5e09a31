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

// Package schemacheck compiles the JSON Schemas of agent steps (output contracts, container tools'
// parameters). It is apart from agentspec, which the entrypoint of every step pod imports
// through internal/outputs/wire: the JSON Schema library compiles its meta-schemas when a
// program starts (about 8 ms), which only the agent runtime and admission need.
package schemacheck

import (
	"bytes"
	"fmt"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Compile compiles a JSON Schema given as JSON.
func Compile(raw []byte) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("the schema is not JSON: %v", err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("output.json", doc); err != nil {
		return nil, err
	}
	s, err := c.Compile("output.json")
	if err != nil {
		return nil, fmt.Errorf("the schema does not compile: %v", err)
	}
	return s, nil
}
