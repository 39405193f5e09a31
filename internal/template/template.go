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

// Package template renders the templated fields of a step (command, args, env values,
// prompts, gate messages, sub-scene params) with Go's text/template, over the data docs/design.md
// names: .params.NAME, .steps.NAME.output, .steps.NAME.outputs.KEY, .steps.NAME.decision,
// .steps.NAME.phase and .run.name, .run.namespace, .run.uid.
//
// Templates compile at admission, where References and Check find what a template reads
// that will not be there, so a Run fails at its start rather than halfway. Rendering runs in
// the controller, so the language is cut down to what cannot reach outside the data or run
// away with the manager's memory or CPU: a small function set without environment or file
// access, output and intermediate strings bounded by MaxOutputBytes, and no {{define}},
// {{template}}, nested {{range}} or {{range}} over a number.
package template

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	texttemplate "text/template"
)

// MaxOutputBytes bounds what one template renders, and every string its functions build on
// the way. It leaves room for a prompt that quotes a few step outputs of 1 MiB each, while a
// template that loops or multiplies text stops with an error instead of taking the manager's
// memory.
const MaxOutputBytes = 4 << 20

// errTooLong stops a rendering whose output passes MaxOutputBytes.
var errTooLong = fmt.Errorf("renders more than %d bytes", MaxOutputBytes)

// Error is a problem with one templated field: it does not compile, reads data that will not
// be there, or fails to render.
type Error struct {
	// Field is the path of the templated field, for example spec.steps[2].container.command[2].
	Field string
	// Detail says what is wrong.
	Detail string
}

// Error returns "FIELD: DETAIL".
func (e *Error) Error() string {
	return e.Field + ": " + e.Detail
}

// Data is what a template reads.
type Data struct {
	// Params are the Run's params by name, secrets excluded.
	Params map[string]string
	// Steps are the finished steps the template may read, by name.
	Steps map[string]StepData
	// Run is the Run being executed.
	Run RunData
}

// StepData is what a template sees of one step.
type StepData struct {
	// Output is the step's whole output.
	Output string
	// Outputs are the fields of a JSON object output, or the items of a JSON array output
	// (a fan-out's), as encoding/json decodes them into any.
	Outputs any
	// Decision is the option a gate step's Gate decided.
	Decision string
	// Phase is the step's phase, for example Succeeded.
	Phase string
}

// RunData is what a template sees of the Run.
type RunData struct {
	Name, Namespace, UID string
	// Phase is the Run's phase: Running while the graph runs; for finally steps, the
	// outcome the Run ends with (Succeeded, Failed or Cancelled).
	Phase string
	// FailedSteps are the steps that have failed, in status order.
	FailedSteps []string
}

// Map returns the data as the template sees it: nested maps under the lower-case keys
// docs/design.md uses, so that a missing param or step is an error (missingkey=error) rather than
// the "<no value>" a struct field of a nil map would print. Numbers in outputs become
// json.Number, so that 1000000 renders as 1000000 and not as float64's 1e+06. Callers that
// render many fields against the same data can compute this once and use ExecuteMap.
func (d Data) Map() map[string]any {
	params := make(map[string]any, len(d.Params))
	for k, v := range d.Params {
		params[k] = v
	}
	steps := make(map[string]any, len(d.Steps))
	for name, s := range d.Steps {
		outputs := normalize(s.Outputs)
		if m, ok := outputs.(map[string]any); (ok && m == nil) || outputs == nil {
			outputs = map[string]any{}
		}
		steps[name] = map[string]any{
			FieldOutput:   s.Output,
			FieldOutputs:  outputs,
			FieldDecision: s.Decision,
			FieldPhase:    s.Phase,
		}
	}
	return map[string]any{
		KindParams: params,
		KindSteps:  steps,
		KindRun: map[string]any{
			"name":      d.Run.Name,
			"namespace": d.Run.Namespace,
			"uid":       d.Run.UID,
			"phase":     d.Run.Phase,
			"failedSteps": func() []any {
				failed := make([]any, len(d.Run.FailedSteps))
				for i, s := range d.Run.FailedSteps {
					failed[i] = s
				}
				return failed
			}(),
		},
	}
}

// normalize copies decoded JSON, turning float64 numbers into json.Number.
func normalize(v any) any {
	switch v := v.(type) {
	case map[string]any:
		if v == nil {
			return v
		}
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = normalize(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = normalize(e)
		}
		return out
	case float64:
		return json.Number(formatFloat(v))
	default:
		return v
	}
}

// formatFloat writes integers without an exponent and other numbers as encoding/json does.
func formatFloat(f float64) string {
	if f == float64(int64(f)) {
		return strconv.FormatInt(int64(f), 10)
	}
	b, err := json.Marshal(f)
	if err != nil {
		// NaN and infinities, which JSON cannot hold.
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	return string(b)
}

// Template is a compiled templated field. It is safe for concurrent use.
type Template struct {
	field string
	text  string
	tmpl  *texttemplate.Template // nil when text has no actions and renders as itself
	refs  []Ref
}

// Compile parses the template in text, the value of the field at the given path. A missing
// map key is an error when rendering. Text without "{{" is kept as it is and renders without
// the template machinery, as most fields do.
func Compile(field, text string) (*Template, error) {
	t := &Template{field: field, text: text}
	if !strings.Contains(text, "{{") {
		return t, nil
	}
	tmpl, err := texttemplate.New(field).Option("missingkey=error").Funcs(funcs).Parse(text)
	if err != nil {
		detail := "invalid template: " + cleanError(field, err)
		if m := hyphenated.FindStringSubmatch(text); m != nil && strings.Contains(err.Error(), "U+002D '-'") {
			// Step names are DNS labels, so this is the usual cause: Go templates read a
			// field name as an identifier, and '-' ends one.
			detail += fmt.Sprintf(`; a name with '-' is read with index: {{ index .%s %q%s }}`,
				m[1], m[2], indexRest(m[3]))
		}
		return nil, &Error{Field: field, Detail: detail}
	}
	for _, defined := range tmpl.Templates() {
		if defined.Name() != field {
			return nil, &Error{Field: field, Detail: fmt.Sprintf(
				"invalid template: {{define %q}} and {{block}} are not supported; write the text in place",
				defined.Name())}
		}
	}
	w := newWalker()
	w.list(tmpl.Root, rootPath)
	if w.err != nil {
		return nil, &Error{Field: field, Detail: "invalid template: " + w.err.Error()}
	}
	t.tmpl, t.refs = tmpl, w.refs
	return t, nil
}

// Field returns the path of the field the template came from.
func (t *Template) Field() string {
	return t.field
}

// Execute renders the template over d.
func (t *Template) Execute(d Data) (string, error) {
	if t.tmpl == nil {
		return t.text, nil
	}
	return t.ExecuteMap(d.Map())
}

// ExecuteMap renders the template over data as Data.Map returns it, for callers that render
// many fields against the same data and convert it once.
func (t *Template) ExecuteMap(data map[string]any) (string, error) {
	if t.tmpl == nil {
		return t.text, nil
	}
	var out limitedBuffer
	if err := t.tmpl.Execute(&out, data); err != nil {
		if errors.Is(err, errTooLong) {
			return "", &Error{Field: t.field, Detail: "template " + errTooLong.Error()}
		}
		return "", &Error{Field: t.field, Detail: "cannot render template: " + cleanError(t.field, err)}
	}
	return out.String(), nil
}

// limitedBuffer fails a write that would take it past MaxOutputBytes, which stops the
// template at once.
type limitedBuffer struct {
	bytes.Buffer
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if b.Len()+len(p) > MaxOutputBytes {
		return 0, errTooLong
	}
	return b.Buffer.Write(p)
}

// errorPrefix matches the start text/template gives its errors, "template: NAME:LINE:COL: "
// and, when executing, `executing "NAME" `, which repeat the field path the Error already
// carries.
var errorPrefix = regexp.MustCompile(`^template: (.*?):(\d+)(?::(\d+))?: (?:executing ".*?" )?`)

// cleanError rewrites a text/template error for a person who knows the field it is about.
func cleanError(field string, err error) string {
	msg := err.Error()
	m := errorPrefix.FindStringSubmatch(msg)
	if m == nil || m[1] != field {
		return msg
	}
	position := "line " + m[2]
	if m[3] != "" {
		position += ", column " + m[3]
	}
	return position + ": " + msg[len(m[0]):]
}

// Value turns a decoded JSON value into what templates see, numbers as json.Number, as Map
// does for outputs: for data added to a map from Data.Map, such as a fan-out's item.
func Value(v any) any {
	return normalize(v)
}

// hyphenated finds a field path through a name with '-' in it, as in .steps.fetch-data.output:
// the map (steps, params, ...), the name, and the fields after it.
var hyphenated = regexp.MustCompile(`\.(steps|params|outputs|item)\.([A-Za-z0-9_]*-[A-Za-z0-9_-]*)((?:\.[A-Za-z0-9_]+)*)`)

// indexRest writes the fields after a name as more index arguments: .outputs.title becomes
// "outputs" "title".
func indexRest(rest string) string {
	var b strings.Builder
	for part := range strings.SplitSeq(strings.TrimPrefix(rest, "."), ".") {
		if part != "" {
			fmt.Fprintf(&b, " %q", part)
		}
	}
	return b.String()
}
