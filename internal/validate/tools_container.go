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

package validate

import (
	"encoding/json"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/compile"
	"github.com/ergon-dev/ergon/internal/schemacheck"
	"github.com/ergon-dev/ergon/internal/template"
)

// argsKind is what a container tool's templates read: the call's arguments.
const argsKind = "args"

// validateContainerTool checks a container tool's entry: a name that is no built-in tool's,
// an image, a command (Ergon's entrypoint runs it, so the image's own is not known), an object
// schema of the arguments that compiles, and templates in command and args that parse, read
// only .args (and only declared arguments when the schema allows no others), and cannot
// rewrite the program (compile.CheckToolArgv).
func validateContainerTool(p *field.Path, t ergonv1alpha1.AgentTool) field.ErrorList {
	var errs field.ErrorList
	c, cp := t.Container, p.Child("container")
	switch {
	case t.Name == "":
		errs = append(errs, field.Required(p.Child("name"), "a container tool needs the name the model calls it by"))
	case slices.Contains(ergonv1alpha1.BuiltinTools, t.Name):
		errs = append(errs, field.Invalid(p.Child("name"), t.Name, "a built-in tool has that name; name the container tool otherwise"))
	}
	if c.Image == "" {
		errs = append(errs, field.Required(cp.Child("image"), "the image that runs the tool"))
	}
	if len(c.Command) == 0 {
		errs = append(errs, field.Required(cp.Child("command"),
			"Ergon's entrypoint runs the tool's command, so the image's own entrypoint is not used; name the program"))
	}
	declared, closed, perrs := toolParameters(cp.Child("parameters"), c)
	errs = append(errs, perrs...)
	check := func(fp *field.Path, text string) {
		tmpl, err := template.Compile(fp.String(), text)
		if err != nil {
			errs = append(errs, field.Invalid(fp, text, err.Error()))
			return
		}
		for _, ref := range tmpl.References() {
			switch {
			case ref.Kind != argsKind:
				errs = append(errs, field.Invalid(fp, text, fmt.Sprintf(
					"a container tool's templates read only the call's arguments, as .args.NAME, not .%s", ref.Kind)))
				return
			case closed && ref.Name != "" && !slices.Contains(declared, ref.Name):
				errs = append(errs, field.Invalid(fp, text, fmt.Sprintf(
					"the template reads .args.%s, which the parameters do not declare", ref.Name)))
				return
			}
		}
	}
	for i, s := range c.Command {
		check(cp.Child("command").Index(i), s)
	}
	for i, s := range c.Args {
		check(cp.Child("args").Index(i), s)
	}
	return append(errs, compile.CheckToolArgv(cp, c.Command, c.Args)...)
}

// toolParameters checks a container tool's parameters: an object schema that compiles. It
// returns the properties the schema declares and whether it allows no others.
func toolParameters(fp *field.Path, c *ergonv1alpha1.ContainerTool) (declared []string, closed bool, errs field.ErrorList) {
	if c.Parameters == nil || len(c.Parameters.Raw) == 0 {
		return nil, false, nil
	}
	raw := string(c.Parameters.Raw)
	var schema struct {
		Type                 any                        `json:"type"`
		Properties           map[string]json.RawMessage `json:"properties"`
		AdditionalProperties *bool                      `json:"additionalProperties"`
	}
	if err := json.Unmarshal(c.Parameters.Raw, &schema); err != nil {
		return nil, false, field.ErrorList{field.Invalid(fp, raw, "the parameters must be a JSON Schema object")}
	}
	if schema.Type != "object" {
		return nil, false, field.ErrorList{field.Invalid(fp, raw, `the arguments are a JSON object: the schema needs "type": "object"`)}
	}
	if _, err := schemacheck.Compile(c.Parameters.Raw); err != nil {
		return nil, false, field.ErrorList{field.Invalid(fp, raw, err.Error())}
	}
	for name := range schema.Properties {
		declared = append(declared, name)
	}
	return declared, schema.AdditionalProperties != nil && !*schema.AdditionalProperties, nil
}
