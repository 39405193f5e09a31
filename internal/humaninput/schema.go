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

// Package humaninput is the one place that says what a person may be asked for and whether
// their answer fits: the input schema of an input Gate (a gate step's spec.gate.input, or the
// schema an agent's ask_human call gives), the values of an answer, and the defaults a
// timeout takes.
//
// An input schema is the part of JSON Schema a form can render: an object whose properties
// are strings, numbers, integers, booleans, enums, arrays and nested objects, with titles,
// descriptions, defaults and simple bounds. Anything else is refused by name when the schema
// is admitted, so that every schema Ergon accepts is one the console can draw, the kubectl
// plugin can prompt for, and Validate can check completely. The Scene webhook parses a gate
// step's schema, the Gate webhook validates every answer against its Gate's, and the Gate
// controller fills the defaults a timeout takes; all three use this package.
package humaninput

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Bounds of a schema and of an answer.
const (
	// MaxSchemaBytes is the most a schema may take, as JSON.
	MaxSchemaBytes = 16 << 10
	// MaxValuesBytes is the most one answer's values may take, as JSON.
	MaxValuesBytes = 16 << 10
	// MaxFields is the most fields (properties and array items, at every depth) a schema
	// may declare.
	MaxFields = 64
	// MaxDepth is how deep objects and arrays may nest below the top object.
	MaxDepth = 4
)

// Types of a field.
const (
	TypeObject  = "object"
	TypeString  = "string"
	TypeNumber  = "number"
	TypeInteger = "integer"
	TypeBoolean = "boolean"
	TypeArray   = "array"
)

// keyRequired is the keyword that lists an object's required fields.
const keyRequired = "required"

// Formats a string field may declare; the console picks its input by them.
var Formats = []string{"date", "date-time", "email", "uri", "multiline"}

var types = []string{TypeObject, TypeString, TypeNumber, TypeInteger, TypeBoolean, TypeArray}

// keywords are the schema keywords a field may use; "$schema" and "additionalProperties"
// (false only) are accepted and mean nothing more: an answer never holds fields its schema
// does not declare.
var keywords = []string{"$schema", "type", "title", "description", "default", "enum", "properties", keyRequired,
	"additionalProperties", "items", "minLength", "maxLength", "pattern", "format", "minimum", "maximum",
	"minItems", "maxItems"}

// Field is one parsed field of an input schema; the schema itself is the top object field.
type Field struct {
	Type        string
	Title       string
	Description string
	// Enum lists the values allowed, when the schema restricts them.
	Enum []any
	// Default is the value a missing field takes; HasDefault says it has one (a default may
	// be false, 0 or "").
	Default    any
	HasDefault bool
	// Properties, in the order of their names, and which of them are required (object).
	Properties map[string]*Field
	Required   []string
	// Items is the field of each element (array).
	Items *Field
	// Bounds: of a string's length, a number's value, an array's length.
	MinLength, MaxLength *int64
	Pattern              *regexp.Regexp
	Format               string
	Minimum, Maximum     *float64
	MinItems, MaxItems   *int64
}

// Names lists an object field's property names in order.
func (f *Field) Names() []string {
	names := make([]string, 0, len(f.Properties))
	for n := range f.Properties {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Parse reads an input schema given as JSON. Its errors name the schema's fields under path
// (say spec.steps[2].gate.input.properties.count.minimum).
func Parse(raw []byte, path *field.Path) (*Field, field.ErrorList) {
	if len(raw) > MaxSchemaBytes {
		return nil, field.ErrorList{field.TooLong(path, "", MaxSchemaBytes)}
	}
	doc, err := decode(raw)
	if err != nil {
		return nil, field.ErrorList{field.Invalid(path, string(raw), "the input schema is not JSON: "+err.Error())}
	}
	p := &parser{}
	f := p.field(doc, path, 0)
	if f != nil && f.Type != TypeObject {
		p.errs = append(p.errs, field.Invalid(path.Child("type"), f.Type,
			`an input schema is an object of fields: its top needs "type": "object"`))
	}
	if len(p.errs) > 0 {
		return nil, p.errs
	}
	return f, nil
}

// decode reads JSON with its numbers kept exact.
func decode(raw []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if d.More() {
		return nil, fmt.Errorf("more than one JSON value")
	}
	return v, nil
}

// DecodeValues reads an answer's values given as JSON, numbers kept exact.
func DecodeValues(raw []byte) (any, error) { return decode(raw) }

type parser struct {
	errs   field.ErrorList
	fields int
}

func (p *parser) field(doc any, path *field.Path, depth int) *Field {
	m, ok := doc.(map[string]any)
	if !ok {
		p.errs = append(p.errs, field.Invalid(path, doc, "a field of an input schema is a JSON object"))
		return nil
	}
	for k := range m {
		if !slices.Contains(keywords, k) {
			p.errs = append(p.errs, field.NotSupported(path.Child(k), k, keywords))
		}
	}
	f := &Field{}
	t, _ := m["type"].(string)
	switch {
	case m["type"] == nil:
		p.errs = append(p.errs, field.Required(path.Child("type"), "every field of an input schema says its type"))
		return nil
	case !slices.Contains(types, t):
		p.errs = append(p.errs, field.NotSupported(path.Child("type"), m["type"], types))
		return nil
	}
	f.Type = t
	f.Title = p.text(m, "title", path)
	f.Description = p.text(m, "description", path)
	if ap, has := m["additionalProperties"]; has && ap != false {
		p.errs = append(p.errs, field.Invalid(path.Child("additionalProperties"), ap,
			"an answer holds only the fields its schema declares; additionalProperties may only be false"))
	}
	switch t {
	case TypeObject:
		p.object(f, m, path, depth)
	case TypeArray:
		p.array(f, m, path, depth)
	case TypeString:
		f.MinLength, f.MaxLength = p.count(m, "minLength", path), p.count(m, "maxLength", path)
		if s, has := m["pattern"]; has {
			pattern, _ := s.(string)
			re, err := regexp.Compile(pattern)
			if err != nil {
				p.errs = append(p.errs, field.Invalid(path.Child("pattern"), s, "not a regular expression: "+err.Error()))
			}
			f.Pattern = re
		}
		if s, has := m["format"]; has {
			format, _ := s.(string)
			if !slices.Contains(Formats, format) {
				p.errs = append(p.errs, field.NotSupported(path.Child("format"), s, Formats))
			}
			f.Format = format
		}
	case TypeNumber, TypeInteger:
		f.Minimum, f.Maximum = p.number(m, "minimum", path), p.number(m, "maximum", path)
	}
	p.onlyFor(m, path, t)
	if e, has := m["enum"]; has {
		items, ok := e.([]any)
		if !ok || len(items) == 0 || len(items) > 100 {
			p.errs = append(p.errs, field.Invalid(path.Child("enum"), e, "enum lists from 1 to 100 allowed values"))
		} else if t == TypeObject || t == TypeArray {
			p.errs = append(p.errs, field.Invalid(path.Child("enum"), e, "enum restricts strings, numbers, integers and booleans"))
		} else {
			for i, v := range items {
				p.errs = append(p.errs, checkValue(&Field{Type: t}, v, path.Child("enum").Index(i))...)
			}
			f.Enum = items
		}
	}
	if d, has := m["default"]; has {
		if errs := checkValue(f, d, path.Child("default")); len(errs) > 0 {
			p.errs = append(p.errs, errs...)
		}
		f.Default, f.HasDefault = d, true
	}
	return f
}

// onlyFor refuses the bounds that do not apply to a field's type.
func (p *parser) onlyFor(m map[string]any, path *field.Path, t string) {
	of := map[string][]string{
		"properties": {TypeObject}, "required": {TypeObject}, "items": {TypeArray},
		"minItems": {TypeArray}, "maxItems": {TypeArray}, "minLength": {TypeString}, "maxLength": {TypeString},
		"pattern": {TypeString}, "format": {TypeString}, "minimum": {TypeNumber, TypeInteger},
		"maximum": {TypeNumber, TypeInteger},
	}
	for k, allowed := range of {
		if _, has := m[k]; has && !slices.Contains(allowed, t) {
			p.errs = append(p.errs, field.Invalid(path.Child(k), m[k], fmt.Sprintf("%s applies to a field of type %v, not %s", k, allowed, t)))
		}
	}
}

func (p *parser) object(f *Field, m map[string]any, path *field.Path, depth int) {
	props, ok := m["properties"].(map[string]any)
	if !ok || len(props) == 0 {
		p.errs = append(p.errs, field.Required(path.Child("properties"), "an object field lists its fields under properties"))
		return
	}
	if depth > MaxDepth {
		p.errs = append(p.errs, field.Invalid(path, "", fmt.Sprintf("objects and arrays nest at most %d deep in an input schema", MaxDepth)))
		return
	}
	f.Properties = map[string]*Field{}
	names := make([]string, 0, len(props))
	for n := range props {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		pp := path.Child("properties").Key(n)
		if !validName.MatchString(n) {
			p.errs = append(p.errs, field.Invalid(pp, n, "a field's name is a letter, then letters, digits and _ (at most 63), "+
				"so that templates can read it as .steps.STEP.outputs."+"NAME"))
			continue
		}
		p.fields++
		if p.fields > MaxFields {
			p.errs = append(p.errs, field.TooMany(path.Child("properties"), p.fields, MaxFields))
			return
		}
		if child := p.field(props[n], pp, depth+1); child != nil {
			f.Properties[n] = child
		}
	}
	if r, has := m["required"]; has {
		list, ok := r.([]any)
		if !ok {
			p.errs = append(p.errs, field.Invalid(path.Child("required"), r, "required lists names of properties"))
			return
		}
		for i, v := range list {
			n, _ := v.(string)
			switch {
			case props[n] == nil:
				p.errs = append(p.errs, field.NotFound(path.Child("required").Index(i), v))
			case slices.Contains(f.Required, n):
				p.errs = append(p.errs, field.Duplicate(path.Child("required").Index(i), v))
			default:
				f.Required = append(f.Required, n)
			}
		}
	}
}

var validName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]{0,62}$`)

func (p *parser) array(f *Field, m map[string]any, path *field.Path, depth int) {
	f.MinItems, f.MaxItems = p.count(m, "minItems", path), p.count(m, "maxItems", path)
	items, has := m["items"]
	if !has {
		p.errs = append(p.errs, field.Required(path.Child("items"), "an array field says what its items are"))
		return
	}
	if depth > MaxDepth {
		p.errs = append(p.errs, field.Invalid(path, "", fmt.Sprintf("objects and arrays nest at most %d deep in an input schema", MaxDepth)))
		return
	}
	p.fields++
	if p.fields > MaxFields {
		p.errs = append(p.errs, field.TooMany(path.Child("items"), p.fields, MaxFields))
		return
	}
	f.Items = p.field(items, path.Child("items"), depth+1)
}

func (p *parser) text(m map[string]any, k string, path *field.Path) string {
	v, has := m[k]
	if !has {
		return ""
	}
	s, ok := v.(string)
	switch {
	case !ok:
		p.errs = append(p.errs, field.Invalid(path.Child(k), v, k+" is a string"))
	case len(s) > 1024:
		p.errs = append(p.errs, field.TooLong(path.Child(k), "", 1024))
	}
	return s
}

func (p *parser) count(m map[string]any, k string, path *field.Path) *int64 {
	v, has := m[k]
	if !has {
		return nil
	}
	n, ok := v.(json.Number)
	i, err := n.Int64()
	if !ok || err != nil || i < 0 {
		p.errs = append(p.errs, field.Invalid(path.Child(k), v, k+" is a whole number, 0 or more"))
		return nil
	}
	return &i
}

func (p *parser) number(m map[string]any, k string, path *field.Path) *float64 {
	v, has := m[k]
	if !has {
		return nil
	}
	n, ok := v.(json.Number)
	f, err := n.Float64()
	if !ok || err != nil {
		p.errs = append(p.errs, field.Invalid(path.Child(k), v, k+" is a number"))
		return nil
	}
	return &f
}
