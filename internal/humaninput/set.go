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

package humaninput

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Set assigns one value given as text, "path=value", into values (a JSON object, decoded by
// DecodeValues or made empty), reading the value as the schema types the field at path: a
// dotted path reaches into nested objects (review.score=4); a number, integer or boolean is
// parsed as one; an array takes JSON ([1, 2]) or a comma-separated list of its items' type
// (a,b,c); an object takes JSON. It is how a person answers from a command line (kubectl
// ergon answer --set); what it builds is validated as any answer is.
func (f *Field) Set(values map[string]any, assignment string) error {
	path, text, ok := strings.Cut(assignment, "=")
	if !ok || path == "" {
		return fmt.Errorf("%q: give a field and its value as name=value", assignment)
	}
	names := strings.Split(path, ".")
	field, into := f, values
	for i, name := range names {
		if field.Type != TypeObject {
			return fmt.Errorf("%s: %s is %s, not an object of fields", path, strings.Join(names[:i], "."), article(field.Type))
		}
		child, ok := field.Properties[name]
		if !ok {
			return fmt.Errorf("%s: no field %q; the fields here: %s", path, name, strings.Join(field.Names(), ", "))
		}
		if i == len(names)-1 {
			v, err := child.parse(text)
			if err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			into[name] = v
			return nil
		}
		next, ok := into[name].(map[string]any)
		if !ok {
			next = map[string]any{}
			into[name] = next
		}
		field, into = child, next
	}
	return nil
}

// parse reads text as a value of f's type.
func (f *Field) parse(text string) (any, error) {
	switch f.Type {
	case TypeString:
		return text, nil
	case TypeInteger:
		if _, err := strconv.ParseInt(text, 10, 64); err != nil {
			return nil, fmt.Errorf("%q is not an integer", text)
		}
		return json.Number(text), nil
	case TypeNumber:
		if _, err := strconv.ParseFloat(text, 64); err != nil || !json.Valid([]byte(text)) {
			return nil, fmt.Errorf("%q is not a number", text)
		}
		return json.Number(text), nil
	case TypeBoolean:
		b, err := strconv.ParseBool(text)
		if err != nil {
			return nil, fmt.Errorf("%q is not true or false", text)
		}
		return b, nil
	case TypeArray:
		if strings.HasPrefix(strings.TrimSpace(text), "[") {
			return decodeAs(text, "an array")
		}
		if text == "" {
			return []any{}, nil
		}
		var items []any
		for part := range strings.SplitSeq(text, ",") {
			if f.Items == nil {
				items = append(items, part)
				continue
			}
			v, err := f.Items.parse(strings.TrimSpace(part))
			if err != nil {
				return nil, err
			}
			items = append(items, v)
		}
		return items, nil
	default:
		return decodeAs(text, "a JSON object")
	}
}

func decodeAs(text, what string) (any, error) {
	v, err := decode([]byte(text))
	if err != nil {
		return nil, fmt.Errorf("%q is not %s: %v", text, what, err)
	}
	return v, nil
}
