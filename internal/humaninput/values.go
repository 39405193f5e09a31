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
	"math"
	"net/mail"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Validate checks an answer's values against the schema f; its errors name each field under
// path (say spec.decision.values.reviewers[1]). Values are JSON-decoded (DecodeValues);
// fields the schema does not declare are refused.
func (f *Field) Validate(values any, path *field.Path) field.ErrorList {
	return checkValue(f, values, path)
}

func checkValue(f *Field, v any, path *field.Path) field.ErrorList {
	if v == nil {
		return field.ErrorList{field.Invalid(path, nil, fmt.Sprintf("must be %s, not null", article(f.Type)))}
	}
	var errs field.ErrorList
	switch f.Type {
	case TypeObject:
		return checkObject(f, v, path)
	case TypeArray:
		return checkArray(f, v, path)
	case TypeString:
		s, ok := v.(string)
		if !ok {
			return field.ErrorList{typeError(f, v, path)}
		}
		errs = append(errs, checkString(f, s, path)...)
	case TypeBoolean:
		if _, ok := v.(bool); !ok {
			return field.ErrorList{typeError(f, v, path)}
		}
	case TypeNumber, TypeInteger:
		n, ok := number(v)
		if !ok || (f.Type == TypeInteger && n != math.Trunc(n)) {
			return field.ErrorList{typeError(f, v, path)}
		}
		if f.Minimum != nil && n < *f.Minimum {
			errs = append(errs, field.Invalid(path, v, fmt.Sprintf("must be at least %v", *f.Minimum)))
		}
		if f.Maximum != nil && n > *f.Maximum {
			errs = append(errs, field.Invalid(path, v, fmt.Sprintf("must be at most %v", *f.Maximum)))
		}
	}
	if len(f.Enum) > 0 && !slices.ContainsFunc(f.Enum, func(e any) bool { return same(e, v) }) {
		allowed := make([]string, len(f.Enum))
		for i, e := range f.Enum {
			allowed[i] = fmt.Sprint(e)
		}
		errs = append(errs, field.NotSupported(path, v, allowed))
	}
	return errs
}

func checkObject(f *Field, v any, path *field.Path) field.ErrorList {
	m, ok := v.(map[string]any)
	if !ok {
		return field.ErrorList{typeError(f, v, path)}
	}
	var errs field.ErrorList
	for _, n := range f.Required {
		if _, has := m[n]; !has {
			errs = append(errs, field.Required(path.Child(n), requiredMessage(f.Properties[n])))
		}
	}
	for _, n := range sortedKeys(m) {
		child, declared := f.Properties[n]
		if !declared {
			errs = append(errs, field.NotSupported(path.Child(n), n, f.Names()))
			continue
		}
		errs = append(errs, checkValue(child, m[n], path.Child(n))...)
	}
	return errs
}

func checkArray(f *Field, v any, path *field.Path) field.ErrorList {
	items, ok := v.([]any)
	if !ok {
		return field.ErrorList{typeError(f, v, path)}
	}
	var errs field.ErrorList
	if f.MinItems != nil && int64(len(items)) < *f.MinItems {
		errs = append(errs, field.Invalid(path, len(items), fmt.Sprintf("needs at least %d items", *f.MinItems)))
	}
	if f.MaxItems != nil && int64(len(items)) > *f.MaxItems {
		errs = append(errs, field.TooMany(path, len(items), int(*f.MaxItems)))
	}
	for i, item := range items {
		if f.Items != nil {
			errs = append(errs, checkValue(f.Items, item, path.Index(i))...)
		}
	}
	return errs
}

func checkString(f *Field, s string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	n := int64(utf8.RuneCountInString(s))
	if f.MinLength != nil && n < *f.MinLength {
		errs = append(errs, field.Invalid(path, s, fmt.Sprintf("needs at least %d characters", *f.MinLength)))
	}
	if f.MaxLength != nil && n > *f.MaxLength {
		errs = append(errs, field.TooLong(path, "", int(*f.MaxLength)))
	}
	if f.Pattern != nil && !f.Pattern.MatchString(s) {
		errs = append(errs, field.Invalid(path, s, "must match "+f.Pattern.String()))
	}
	if msg := formatError(f.Format, s); msg != "" {
		errs = append(errs, field.Invalid(path, s, msg))
	}
	return errs
}

// formatError says why s is not of the format; empty when it is (or the format is free).
func formatError(format, s string) string {
	switch format {
	case "date":
		if _, err := time.Parse(time.DateOnly, s); err != nil {
			return "must be a date such as 2026-12-03"
		}
	case "date-time":
		if _, err := time.Parse(time.RFC3339, s); err != nil {
			return "must be a date and time such as 2026-12-03T10:00:00Z"
		}
	case "email":
		if a, err := mail.ParseAddress(s); err != nil || a.Address != s {
			return "must be an email address such as ada@example.com"
		}
	case "uri":
		if u, err := url.Parse(s); err != nil || !u.IsAbs() || u.Host == "" {
			return "must be an absolute URL such as https://example.com/a"
		}
	}
	return ""
}

// article names a type with its article: "an object", "a string".
func article(t string) string {
	if strings.ContainsRune("aeiou", rune(t[0])) {
		return "an " + t
	}
	return "a " + t
}

func requiredMessage(f *Field) string {
	if f != nil && f.Title != "" {
		return fmt.Sprintf("%s is required", f.Title)
	}
	return keyRequired
}

func typeError(f *Field, v any, path *field.Path) *field.Error {
	return field.TypeInvalid(path, v, "must be "+article(f.Type))
}

// number reads a JSON number, decoded exactly or as a float64.
func number(v any) (float64, bool) {
	switch n := v.(type) {
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	case float64:
		return n, true
	case int64:
		return float64(n), true
	case int:
		return float64(n), true
	}
	return 0, false
}

// same compares two JSON values, numbers by value.
func same(a, b any) bool {
	if x, ok := number(a); ok {
		y, ok := number(b)
		return ok && x == y
	}
	return reflect.DeepEqual(a, b)
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Complete fills the missing fields of values that have defaults, in place where it can, and
// returns the result: a missing top object is made. Objects present are completed at every
// depth, as an API server defaults a custom resource.
func (f *Field) Complete(values any) any {
	if values == nil && f.Type == TypeObject {
		values = map[string]any{}
	}
	return complete(f, values)
}

func complete(f *Field, v any) any {
	switch f.Type {
	case TypeObject:
		m, ok := v.(map[string]any)
		if !ok {
			return v
		}
		for _, n := range f.Names() {
			child := f.Properties[n]
			if cur, has := m[n]; has {
				m[n] = complete(child, cur)
			} else if child.HasDefault {
				m[n] = complete(child, deepCopy(child.Default))
			}
		}
	case TypeArray:
		items, ok := v.([]any)
		if !ok || f.Items == nil {
			return v
		}
		for i := range items {
			items[i] = complete(f.Items, items[i])
		}
	}
	return v
}

func deepCopy(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	c, err := decode(b)
	if err != nil {
		return v
	}
	return c
}

// Defaults is what an answer holds when nobody gave one: every default, completed. It returns
// errors, under path, naming the required fields without a default, which a timeout cannot
// fill.
func (f *Field) Defaults(path *field.Path) (any, field.ErrorList) {
	values := f.Complete(nil)
	var errs field.ErrorList
	for _, e := range f.Validate(values, path) {
		if e.Type == field.ErrorTypeRequired {
			e.Detail = "required, with no default for a timeout to take"
		}
		errs = append(errs, e)
	}
	return values, errs
}

// Canonical is the JSON of values with object keys sorted and numbers written the one
// shortest way (1, 1.0 and 1e0 are all 1), so that two answers with the same values compare
// equal as strings.
func Canonical(values any) (string, error) {
	b, err := json.Marshal(canonical(values)) // encoding/json sorts map keys
	return string(b), err
}

func canonical(v any) any {
	switch x := v.(type) {
	case json.Number:
		if f, err := x.Float64(); err == nil {
			return f
		}
	case map[string]any:
		c := make(map[string]any, len(x))
		for k, e := range x {
			c[k] = canonical(e)
		}
		return c
	case []any:
		c := make([]any, len(x))
		for i, e := range x {
			c[i] = canonical(e)
		}
		return c
	}
	return v
}
