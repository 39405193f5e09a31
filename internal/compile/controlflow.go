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

package compile

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/expr"
)

// FanOut is a compiled forEach: where its items come from.
type FanOut struct {
	// Items are the items of a literal list or matrix, known at compile time.
	Items []any
	// Param names the param whose value is a JSON array of items.
	Param string
	// Expression yields the items at run time.
	Expression *expr.Program
	// Parallelism bounds the instances running at once; 0 means no bound of the step's own.
	Parallelism int
}

// controlFlow compiles a step's forEach and loop.
func (c *compiler) controlFlow(st *Step, path *field.Path, upstream func(string) bool) {
	spec := st.Spec
	if spec.ForEach == nil && spec.Loop == nil {
		return
	}
	if spec.Gate != nil {
		what, p := "forEach", path.Child("forEach")
		if spec.ForEach == nil {
			what, p = "loop", path.Child("loop")
		}
		c.errs = append(c.errs, field.Forbidden(p, fmt.Sprintf(
			"a gate step cannot have %s: only container, agent and scene steps fan out or loop; "+
				"put the gate in its own step, or make this a sub-scene that holds the gate", what)))
		return
	}
	scope := expr.Scope{Params: c.paramNames, Steps: c.stepNames, Upstream: upstream}
	if f := spec.ForEach; f != nil {
		st.FanOut = c.forEach(path.Child("forEach"), f, scope)
	}
	if l := spec.Loop; l != nil && l.MaxIterations < 1 {
		c.errs = append(c.errs, field.Required(path.Child("loop", "maxIterations"),
			"a loop needs maxIterations, the most iterations it may run (1 to 500), for example 5"))
	}
	if l := spec.Loop; l != nil && l.Until == "" {
		c.errs = append(c.errs, field.Required(path.Child("loop", "until"),
			"a loop needs until, a CEL condition over the iteration's output that ends it, for example outputs.verdict == 'pass'"))
	} else if l != nil {
		p := path.Child("loop", "until")
		prg, err := expr.CompileUntil(p.String(), l.Until)
		if err != nil {
			c.errs = append(c.errs, field.Invalid(p, l.Until, detail(err)+"; until is a CEL condition over output, outputs, iteration, previous, item, params, steps and run"))
			return
		}
		for _, name := range prg.ParamReferences() {
			c.checkSecret(p, l.Until, name)
		}
		if err := prg.Check(scope); err != nil {
			c.errs = append(c.errs, field.Invalid(p, l.Until, detail(err)))
		}
		st.Until = prg
	}
}

func (c *compiler) forEach(path *field.Path, f *ergonv1alpha1.ForEach, scope expr.Scope) *FanOut {
	out := &FanOut{}
	if n := countSet(f.Items != nil, f.Param != "", f.Expression != "", len(f.Matrix) > 0); n != 1 {
		c.errs = append(c.errs, field.Invalid(path, nil, fmt.Sprintf(
			"forEach takes its list from exactly one of items, param, expression or matrix, and %d are set; set one", n)))
		return nil
	}
	if f.Parallelism != nil {
		out.Parallelism = int(*f.Parallelism)
	}
	switch {
	case f.Items != nil:
		items, ok := c.jsonList(path.Child("items"), f.Items)
		if !ok {
			return nil
		}
		out.Items = items
	case f.Param != "":
		p := path.Child("param")
		i := slices.IndexFunc(c.spec.Params, func(ps ergonv1alpha1.ParamSpec) bool { return ps.Name == f.Param })
		switch {
		case i < 0:
			c.errs = append(c.errs, field.Invalid(p, f.Param, "forEach.param names no param of this Scene; declare it in spec.params"))
			return nil
		case c.spec.Params[i].ValueFrom != nil:
			c.errs = append(c.errs, field.Invalid(p, f.Param, "forEach.param names a param that comes from a Secret, "+
				"whose value never passes through the Run; fan out over a param with a plain value"))
			return nil
		case c.spec.Params[i].Default != nil:
			if _, err := ParseItems(*c.spec.Params[i].Default); err != nil {
				c.errs = append(c.errs, field.Invalid(field.NewPath("spec", "params").Index(i).Child("default"),
					*c.spec.Params[i].Default, fmt.Sprintf("the param is the list of forEach of step %s: %v", path.String(), err)))
				return nil
			}
		}
		out.Param = f.Param
	case f.Expression != "":
		p := path.Child("expression")
		prg, err := expr.CompileList(p.String(), f.Expression)
		if err != nil {
			c.errs = append(c.errs, field.Invalid(p, f.Expression, detail(err)))
			return nil
		}
		for _, name := range prg.ParamReferences() {
			c.checkSecret(p, f.Expression, name)
		}
		if err := prg.Check(scope); err != nil {
			c.errs = append(c.errs, field.Invalid(p, f.Expression, detail(err)))
			return nil
		}
		out.Expression = prg
	case len(f.Matrix) > 0:
		out.Items = c.matrix(path.Child("matrix"), f.Matrix)
		if out.Items == nil {
			return nil
		}
	}
	return out
}

// jsonList parses a literal list, refusing anything else and more than MaxForEachItems items.
func (c *compiler) jsonList(p *field.Path, raw *apiextensionsv1.JSON) ([]any, bool) {
	var items []any
	if err := json.Unmarshal(raw.Raw, &items); err != nil || items == nil {
		c.errs = append(c.errs, field.Invalid(p, string(raw.Raw), "must be a list, for example [a, b, c] or [{name: a}, {name: b}]"))
		return nil, false
	}
	if len(items) > ergonv1alpha1.MaxForEachItems {
		c.errs = append(c.errs, field.TooMany(p, len(items), ergonv1alpha1.MaxForEachItems))
		c.errs[len(c.errs)-1].Detail += "; a step fans out over at most 1000 items: split the list over several steps or a sub-scene per chunk"
		return nil, false
	}
	return items, true
}

// matrix expands the axes into the items of their product, the first axis varying slowest.
func (c *compiler) matrix(p *field.Path, axes []ergonv1alpha1.MatrixAxis) []any {
	product := []any{map[string]any{}}
	for i, axis := range axes {
		ap := p.Index(i).Child("items")
		values, ok := c.jsonList(ap, axis.Items)
		if !ok {
			return nil
		}
		if len(values) == 0 {
			c.errs = append(c.errs, field.Invalid(ap, "[]", "a matrix axis needs at least one item; remove the axis or give it items"))
			return nil
		}
		if len(product)*len(values) > ergonv1alpha1.MaxForEachItems {
			c.errs = append(c.errs, field.Invalid(p, len(product)*len(values), fmt.Sprintf(
				"the matrix has %d combinations up to this axis; a step fans out over at most %d: use fewer or shorter axes",
				len(product)*len(values), ergonv1alpha1.MaxForEachItems)))
			return nil
		}
		next := make([]any, 0, len(product)*len(values))
		for _, row := range product {
			for _, v := range values {
				combined := make(map[string]any, len(axes))
				maps.Copy(combined, row.(map[string]any))
				combined[axis.Name] = v
				next = append(next, combined)
			}
		}
		product = next
	}
	return product
}

// ParseItems parses a param's value as the JSON array of a forEach, at most MaxForEachItems
// long.
func ParseItems(value string) ([]any, error) {
	var items []any
	if err := json.Unmarshal([]byte(value), &items); err != nil || items == nil {
		return nil, fmt.Errorf(`must be a JSON array, for example ["a","b"]`)
	}
	if len(items) > ergonv1alpha1.MaxForEachItems {
		return nil, fmt.Errorf("has %d items; a step fans out over at most %d: split the list", len(items), ergonv1alpha1.MaxForEachItems)
	}
	return items, nil
}

func countSet(set ...bool) int {
	n := 0
	for _, b := range set {
		if b {
			n++
		}
	}
	return n
}
