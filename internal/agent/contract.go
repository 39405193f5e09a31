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
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/ergon-dev/ergon/internal/schemacheck"
)

// contract is a compiled output contract.
type contract struct {
	parts []part
	// sections is true when the answer has several named outputs in labelled sections.
	sections bool
}

type part struct {
	name   string
	format Format
	schema *jsonschema.Schema
	raw    json.RawMessage
}

func compileContract(c Contract) (*contract, error) {
	if len(c.Outputs) == 0 {
		p, err := compilePart("", c.Format, c.Schema)
		if err != nil {
			return nil, err
		}
		return &contract{parts: []part{p}}, nil
	}
	out := &contract{sections: true}
	seen := map[string]bool{}
	for i, o := range c.Outputs {
		if !sectionName.MatchString(o.Name) {
			return nil, fmt.Errorf("output.outputs[%d].name %q must be letters, digits, '_' or '-'", i, o.Name)
		}
		if seen[o.Name] {
			return nil, fmt.Errorf("output.outputs[%d].name %q is declared twice", i, o.Name)
		}
		seen[o.Name] = true
		p, err := compilePart(o.Name, o.Format, o.Schema)
		if err != nil {
			return nil, fmt.Errorf("output.outputs[%d]: %w", i, err)
		}
		out.parts = append(out.parts, p)
	}
	return out, nil
}

func compilePart(name, format string, schema json.RawMessage) (part, error) {
	if format == "" {
		format = "text"
	}
	f, ok := formats[format]
	if !ok {
		return part{}, fmt.Errorf("output.format %q is not a registered format", format)
	}
	p := part{name: name, format: f, raw: schema}
	if len(schema) > 0 && string(schema) != "null" {
		var err error
		if p.schema, err = schemacheck.Compile(schema); err != nil {
			return part{}, fmt.Errorf("output.schema: %v", err)
		}
	}
	return p, nil
}

// instruction tells the model what the answer must look like.
func (c *contract) instruction() string {
	var b strings.Builder
	if !c.sections {
		p := c.parts[0]
		b.WriteString(p.format.Instruction)
		if p.schema != nil {
			fmt.Fprintf(&b, " It must satisfy this JSON Schema: %s", compact(p.raw))
		}
		return b.String()
	}
	b.WriteString("Answer with these sections, in this order, each starting with its label on a line of its own and nothing outside them:")
	for _, p := range c.parts {
		fmt.Fprintf(&b, "\n## [%s]\n(%s: %s", p.name, p.format.Name, p.format.Instruction)
		if p.schema != nil {
			fmt.Fprintf(&b, " It must satisfy this JSON Schema: %s", compact(p.raw))
		}
		b.WriteString(")")
	}
	return b.String()
}

func compact(raw json.RawMessage) string {
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return string(raw)
	}
	return buf.String()
}

// check holds an answer to the contract and returns the step's output, or every reason the
// answer is invalid.
func (c *contract) check(answer string) (string, error) {
	if !c.sections {
		_, out, err := c.parts[0].check(answer)
		return out, err
	}
	sections, err := ParseSections(answer)
	if err != nil {
		return "", err
	}
	result := map[string]any{}
	var errs []error
	for _, p := range c.parts {
		text, ok := sections[p.name]
		if !ok {
			errs = append(errs, fmt.Errorf("section ## [%s] is missing", p.name))
			continue
		}
		v, out, err := p.check(text)
		if err != nil {
			errs = append(errs, fmt.Errorf("section ## [%s]: %w", p.name, err))
			continue
		}
		if p.format.Name == "json" || p.format.Name == "yaml" {
			result[p.name] = v
		} else {
			result[p.name] = out
		}
	}
	for name := range sections {
		if !c.has(name) {
			errs = append(errs, fmt.Errorf("section ## [%s] is not one of the declared outputs", name))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return "", err
	}
	b, err := json.Marshal(result)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

func (c *contract) has(name string) bool {
	for _, p := range c.parts {
		if p.name == name {
			return true
		}
	}
	return false
}

func (p part) check(answer string) (any, string, error) {
	v, out, err := p.format.Parse(answer)
	if err != nil {
		return nil, "", err
	}
	if p.schema != nil {
		if err := p.schema.Validate(v); err != nil {
			return nil, "", fmt.Errorf("the answer does not satisfy the schema: %v", err)
		}
	}
	return v, out, nil
}

var (
	sectionName   = regexp.MustCompile(`^[A-Za-z0-9_-]{1,63}$`)
	sectionHeader = regexp.MustCompile(`^##[ \t]*\[([^\]\n]*)\][ \t]*$`)
)

// ParseSections splits an answer into its labelled sections: a line "## [name]" starts the
// section name, which runs to the next label or the end. Text before the first label is
// ignored; a label twice, or a label that is not a valid name, is an error.
func ParseSections(answer string) (map[string]string, error) {
	sections := map[string]string{}
	var name string
	var body strings.Builder
	found := false
	flush := func() {
		if found {
			sections[name] = strings.TrimSpace(body.String())
		}
		body.Reset()
	}
	for line := range strings.Lines(answer) {
		m := sectionHeader.FindStringSubmatch(strings.TrimRight(line, "\r\n"))
		if m == nil {
			if found {
				body.WriteString(line)
			}
			continue
		}
		label := strings.TrimSpace(m[1])
		if !sectionName.MatchString(label) {
			return nil, fmt.Errorf("section label ## [%s] is not a valid name", label)
		}
		flush()
		if _, dup := sections[label]; dup {
			return nil, fmt.Errorf("section ## [%s] appears twice", label)
		}
		name, found = label, true
	}
	flush()
	if !found {
		return nil, errors.New("the answer has no labelled sections; start each with a line ## [name]")
	}
	return sections, nil
}
