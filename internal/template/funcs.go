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

package template

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	texttemplate "text/template"
)

// maxIndent bounds indent's width; wider has no use and only multiplies text.
const maxIndent = 1000

// maxPrintfWidth bounds the widths and precisions printf accepts: fmt allows a million per
// verb, which a long format string would turn into gigabytes.
const maxPrintfWidth = 1000

// funcs are the functions templates may call besides text/template's builtins. They follow
// sprig's names and argument order, so pipelines read the same (.x | replace "a" "b"), and
// take any value, so that numbers and other JSON values from outputs work where strings do.
// None reads the environment or files.
var funcs = texttemplate.FuncMap{
	"default":  defaultValue,
	"quote":    quote,
	"squote":   squote,
	"shquote":  squote,
	"trim":     func(v any) string { return strings.TrimSpace(toString(v)) },
	"upper":    func(v any) string { return strings.ToUpper(toString(v)) },
	"lower":    func(v any) string { return strings.ToLower(toString(v)) },
	"replace":  replace,
	"join":     join,
	"toJson":   toJSON,
	"fromJson": fromJSON,
	"indent":   indent,
	"b64enc":   func(v any) string { return base64.StdEncoding.EncodeToString([]byte(toString(v))) },
	"printf":   printf,
}

// toString is how functions read a value as text: strings and JSON numbers as they are, nil
// as empty, integral floats without an exponent, anything else as fmt prints it.
func toString(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	case json.Number:
		return string(v)
	case []byte:
		return string(v)
	case float64:
		return formatFloat(v)
	case fmt.Stringer:
		return v.String()
	default:
		return fmt.Sprint(v)
	}
}

// fitting fails a function whose result would pass MaxOutputBytes, so text cannot be
// multiplied past it by nesting calls before anything is written.
func fitting(size int) error {
	if size > MaxOutputBytes {
		return errStringTooLong
	}
	return nil
}

// errStringTooLong stops a function whose result would pass MaxOutputBytes.
var errStringTooLong = fmt.Errorf("would build a string of more than %d bytes", MaxOutputBytes)

// defaultValue returns given when it is set and not empty, else def: {{ .x | default "y" }}.
func defaultValue(def any, given ...any) any {
	if len(given) == 0 || isEmpty(given[0]) {
		return def
	}
	return given[0]
}

// isEmpty is sprig's notion of empty: nil, zero numbers, false, and empty strings and
// collections.
func isEmpty(v any) bool {
	rv := reflect.ValueOf(v)
	if !rv.IsValid() {
		return true
	}
	switch rv.Kind() {
	case reflect.String, reflect.Array, reflect.Slice, reflect.Map:
		return rv.Len() == 0
	case reflect.Pointer, reflect.Interface:
		return rv.IsNil()
	default:
		return rv.IsZero()
	}
}

// quote writes each argument as a double-quoted Go string literal, separated by spaces.
func quote(args ...any) (string, error) {
	out := make([]string, 0, len(args))
	for _, a := range args {
		if a != nil {
			out = append(out, strconv.Quote(toString(a)))
		}
	}
	s := strings.Join(out, " ")
	return s, fitting(len(s))
}

// squote writes each argument single-quoted for a POSIX shell, separated by spaces. Unlike
// sprig's squote it also escapes the single quotes inside a value the way a shell needs, so
// an output put in a `sh -c` command stays one word whatever it contains. shquote is the same
// function under the name that says what it is for.
func squote(args ...any) (string, error) {
	out := make([]string, 0, len(args))
	for _, a := range args {
		if a != nil {
			out = append(out, "'"+strings.ReplaceAll(toString(a), "'", `'\''`)+"'")
		}
	}
	s := strings.Join(out, " ")
	return s, fitting(len(s))
}

// replace replaces every old with new in s: {{ .x | replace "a" "b" }}.
func replace(old, replacement, s any) (string, error) {
	o, n, str := toString(old), toString(replacement), toString(s)
	count := strings.Count(str, o)
	if err := fitting(len(str) + count*(len(n)-len(o))); err != nil {
		return "", err
	}
	return strings.ReplaceAll(str, o, n), nil
}

// join joins the elements of a list with sep: {{ .steps.x.outputs.tags | join ", " }}. A
// value that is not a list is written as it is.
func join(sep, list any) (string, error) {
	separator := toString(sep)
	rv := reflect.ValueOf(list)
	if !rv.IsValid() {
		return "", nil
	}
	if rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array {
		return toString(list), nil
	}
	parts := make([]string, rv.Len())
	size := max(rv.Len()-1, 0) * len(separator)
	for i := range parts {
		parts[i] = toString(rv.Index(i).Interface())
		size += len(parts[i])
		if err := fitting(size); err != nil {
			return "", err
		}
	}
	return strings.Join(parts, separator), nil
}

// toJSON encodes v as compact JSON, without escaping <, > and &, which matter only in HTML.
func toJSON(v any) (string, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	s := strings.TrimSuffix(b.String(), "\n")
	return s, fitting(len(s))
}

// fromJSON decodes JSON text, numbers as json.Number like outputs: {{ (fromJson .x).title }}.
func fromJSON(v any) (any, error) {
	dec := json.NewDecoder(strings.NewReader(toString(v)))
	dec.UseNumber()
	var out any
	if err := dec.Decode(&out); err != nil {
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("invalid JSON: more than one value")
	}
	return out, nil
}

// indent puts width spaces before every line of s: {{ .x | indent 4 }}.
func indent(width int, s any) (string, error) {
	if width < 0 || width > maxIndent {
		return "", fmt.Errorf("indent width %d is outside 0 to %d", width, maxIndent)
	}
	str := toString(s)
	if err := fitting(len(str) + (strings.Count(str, "\n")+1)*width); err != nil {
		return "", err
	}
	pad := strings.Repeat(" ", width)
	return pad + strings.ReplaceAll(str, "\n", "\n"+pad), nil
}

// printf is text/template's printf with widths and precisions bounded, so a format string
// cannot ask fmt for gigabytes of padding.
func printf(format string, args ...any) (string, error) {
	if err := checkFormat(format); err != nil {
		return "", err
	}
	s := fmt.Sprintf(format, args...)
	return s, fitting(len(s))
}

// checkFormat rejects "*" widths and widths or precisions above maxPrintfWidth.
func checkFormat(format string) error {
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			continue
		}
		// Scan the verb's flags, width and precision up to its letter.
		for i++; i < len(format); i++ {
			c := format[i]
			if c == '*' {
				return fmt.Errorf("printf: * widths are not supported")
			}
			if c >= '0' && c <= '9' {
				j := i
				for j < len(format) && format[j] >= '0' && format[j] <= '9' {
					j++
				}
				if n, err := strconv.Atoi(format[i:j]); err != nil || n > maxPrintfWidth {
					return fmt.Errorf("printf: width or precision %s is more than %d", format[i:j], maxPrintfWidth)
				}
				i = j - 1
				continue
			}
			if !strings.ContainsRune("+-# .[]", rune(c)) {
				break
			}
		}
	}
	return nil
}
