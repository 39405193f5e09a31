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
	"fmt"
	"maps"
	"slices"
	"text/template/parse"
)

// Kinds of data a template reads: the first key after the dot.
const (
	KindParams = "params"
	KindSteps  = "steps"
	KindRun    = "run"
	// KindItem is a fan-out instance's item; KindLoop a loop iteration's data.
	KindItem = "item"
	KindLoop = "loop"
)

// Fields of .steps.NAME.
const (
	FieldOutput   = "output"
	FieldOutputs  = "outputs"
	FieldDecision = "decision"
	FieldPhase    = "phase"
)

// LoopFields are the keys of .loop: the iteration (from 1), the previous iteration's output
// and, when it is JSON, its value.
var LoopFields = []string{"iteration", "previous", "previousOutputs"}

// stepFields are the keys of .steps.NAME; runFields those of .run.
var (
	stepFields = []string{FieldOutput, FieldOutputs, FieldDecision, FieldPhase}
	runFields  = []string{"name", "namespace", "uid", "phase", "failedSteps"}
)

// Ref is one piece of data a template reads, as far as it can be told without running it.
type Ref struct {
	// Kind is "params", "steps" or "run", or whatever other name the template reads at the
	// top level, which Check reports.
	Kind string
	// Name is the param or step name, or the field of .run. It is empty when the template
	// reads the whole map or picks its key at run time, as in {{ index .steps $name }}.
	Name string
	// Field is, for steps, the key of .steps.NAME read: output, outputs, decision or phase.
	Field string
	// Key is, for steps' outputs, the key of .steps.NAME.outputs read, when it is constant.
	Key string
}

// References returns the data the template reads, each once, in the order it first appears.
// It follows field chains from the root (.steps.x.output), from $ ($.params.p), through
// variables ($s := .steps), with and range, parenthesized pipelines, function arguments, and
// index with constant keys ({{ index .steps "x" "outputs" "title" }}). Data reached from the
// element of a range, or through a key computed at run time, cannot be told and is left out.
func (t *Template) References() []Ref {
	return slices.Clone(t.refs)
}

// Scope is what a templated field of one step may read.
type Scope struct {
	// Params are the names of the Scene's params.
	Params []string
	// Steps are the names of all steps of the Scene.
	Steps []string
	// Upstream reports whether a step is one the field's step depends on, directly or
	// through other steps: only those have ended when it renders. Nil allows every step.
	Upstream func(step string) bool
	// Item and Loop say whether the step fans out (so .item exists) and loops (.loop).
	Item, Loop bool
}

// Check reports the first reference of the template that cannot be satisfied in scope: an
// unknown param, step, step field or run field, or a step the template's step does not
// depend on. The error names the field and the reference.
func (t *Template) Check(scope Scope) error {
	for _, ref := range t.refs {
		if detail := scope.problem(ref); detail != "" {
			return &Error{Field: t.field, Detail: detail}
		}
	}
	return nil
}

func (s Scope) problem(ref Ref) string {
	switch ref.Kind {
	case KindParams:
		if ref.Name != "" && !slices.Contains(s.Params, ref.Name) {
			return fmt.Sprintf("template references unknown param %q; declare it in spec.params", ref.Name)
		}
	case KindRun:
		if ref.Name != "" && !slices.Contains(runFields, ref.Name) {
			return fmt.Sprintf("template references unknown field .run.%s; use .run.name, .run.namespace, .run.uid, .run.phase or .run.failedSteps",
				ref.Name)
		}
	case KindSteps:
		switch {
		case ref.Name == "":
		case !slices.Contains(s.Steps, ref.Name):
			return fmt.Sprintf("template references unknown step %q", ref.Name)
		case s.Upstream != nil && !s.Upstream(ref.Name):
			return fmt.Sprintf("template references step %q, which this step does not depend on; "+
				"add it to dependsOn, directly or through another step", ref.Name)
		case ref.Field != "" && !slices.Contains(stepFields, ref.Field):
			return fmt.Sprintf("template references unknown field %q of step %q; use output, outputs, decision or phase",
				ref.Field, ref.Name)
		}
	case KindItem:
		if !s.Item {
			return "template references .item, which only a step with forEach has; add forEach to the step or remove .item"
		}
	case KindLoop:
		if !s.Loop {
			return "template references .loop, which only a step with loop has; add loop to the step or remove .loop"
		}
		if ref.Name != "" && !slices.Contains(LoopFields, ref.Name) {
			return fmt.Sprintf("template references unknown field .loop.%s; use .loop.iteration, .loop.previous or .loop.previousOutputs",
				ref.Name)
		}
	default:
		return fmt.Sprintf("template references unknown data .%s; use .params, .steps or .run", ref.Kind)
	}
	return ""
}

// path is where a value sits in the data, as keys from its root, when that can be told.
type path struct {
	known bool
	keys  []string
}

var (
	rootPath    = path{known: true}
	unknownPath = path{}
)

func (p path) extend(keys ...string) path {
	if !p.known {
		return p
	}
	return path{known: true, keys: append(slices.Clip(p.keys), keys...)}
}

// walker goes through a parse tree recording what it reads and rejecting what Compile does
// not allow.
type walker struct {
	refs       []Ref
	seen       map[Ref]bool
	vars       map[string]path
	rangeDepth int
	err        error
}

func newWalker() *walker {
	return &walker{seen: map[Ref]bool{}, vars: map[string]path{}}
}

func (w *walker) fail(format string, args ...any) {
	if w.err == nil {
		w.err = fmt.Errorf(format, args...)
	}
}

func (w *walker) record(p path) {
	if !p.known || len(p.keys) == 0 {
		return
	}
	ref := Ref{Kind: p.keys[0]}
	if len(p.keys) > 1 {
		ref.Name = p.keys[1]
	}
	if ref.Kind == KindSteps && len(p.keys) > 2 {
		ref.Field = p.keys[2]
		if ref.Field == FieldOutputs && len(p.keys) > 3 {
			ref.Key = p.keys[3]
		}
	}
	if !w.seen[ref] {
		w.seen[ref] = true
		w.refs = append(w.refs, ref)
	}
}

// scoped runs f with the variables as they are and restores them afterwards, since a
// variable declared inside a control structure ends with it.
func (w *walker) scoped(f func()) {
	saved := maps.Clone(w.vars)
	f()
	w.vars = saved
}

func (w *walker) list(l *parse.ListNode, dot path) {
	if l == nil {
		return
	}
	for _, n := range l.Nodes {
		w.node(n, dot)
	}
}

func (w *walker) node(n parse.Node, dot path) {
	switch n := n.(type) {
	case *parse.ActionNode:
		w.pipe(n.Pipe, dot)
	case *parse.IfNode:
		w.scoped(func() {
			w.pipe(n.Pipe, dot)
			w.list(n.List, dot)
			w.list(n.ElseList, dot)
		})
	case *parse.WithNode:
		w.scoped(func() {
			inner := w.pipe(n.Pipe, dot)
			w.list(n.List, inner)
			w.list(n.ElseList, dot)
		})
	case *parse.RangeNode:
		w.rangeNode(n, dot)
	case *parse.TemplateNode:
		w.fail("{{template %q}} is not supported; write the text in place", n.Name)
	case *parse.ListNode:
		w.list(n, dot)
	}
}

// rangeNode walks a range, whose body sees each element as dot, which cannot be told. It
// rejects the two ways a range could run for long over little data: inside another range,
// and over a number.
func (w *walker) rangeNode(n *parse.RangeNode, dot path) {
	if w.rangeDepth > 0 {
		w.fail("nested {{range}} is not supported; use join or toJson inside one {{range}}")
	}
	if overNumber(n.Pipe) {
		w.fail("{{range}} over a number or a variable is not supported; range over the data itself")
	}
	w.scoped(func() {
		w.pipe(n.Pipe, dot)
		for _, v := range n.Pipe.Decl {
			w.vars[v.Ident[0]] = unknownPath
		}
		w.rangeDepth++
		w.list(n.List, unknownPath)
		w.rangeDepth--
		w.list(n.ElseList, dot)
	})
}

// overNumber reports whether a range pipeline may yield an integer: a number, len, or a
// plain variable, which may hold either.
func overNumber(p *parse.PipeNode) bool {
	if len(p.Cmds) == 0 {
		return false
	}
	switch a := p.Cmds[len(p.Cmds)-1].Args[0].(type) {
	case *parse.NumberNode:
		return true
	case *parse.IdentifierNode:
		return a.Ident == "len"
	case *parse.VariableNode:
		return len(a.Ident) == 1 && a.Ident[0] != "$"
	case *parse.PipeNode:
		return overNumber(a)
	}
	return false
}

// pipe walks a pipeline and returns where its result sits, if it is plain data.
func (w *walker) pipe(p *parse.PipeNode, dot path) path {
	if p == nil {
		return unknownPath
	}
	result := unknownPath
	for i, cmd := range p.Cmds {
		result = w.command(cmd, dot, i > 0)
	}
	for _, v := range p.Decl {
		w.vars[v.Ident[0]] = result
	}
	return result
}

// command walks one command of a pipeline. piped tells that the previous command's result is
// passed as its last argument.
func (w *walker) command(cmd *parse.CommandNode, dot path, piped bool) path {
	if len(cmd.Args) == 0 {
		return unknownPath
	}
	fn, isCall := cmd.Args[0].(*parse.IdentifierNode)
	if !isCall {
		// A value; arguments after it would be a method call, which the data does not have.
		p := w.value(cmd.Args[0], dot, true)
		for _, a := range cmd.Args[1:] {
			w.value(a, dot, true)
		}
		if len(cmd.Args) > 1 || piped {
			return unknownPath
		}
		return p
	}
	args := cmd.Args[1:]
	if fn.Ident == "index" && len(args) > 0 && !piped {
		return w.index(args, dot)
	}
	for _, a := range args {
		w.value(a, dot, true)
	}
	return unknownPath
}

// index follows {{ index X "k1" "k2" }} as X.k1.k2 while the keys are constant strings.
func (w *walker) index(args []parse.Node, dot path) path {
	p := w.value(args[0], dot, false)
	for _, a := range args[1:] {
		key, constant := a.(*parse.StringNode)
		if !constant {
			w.record(p)
			for _, rest := range args[1:] {
				w.value(rest, dot, true)
			}
			return unknownPath
		}
		p = p.extend(key.Text)
	}
	w.record(p)
	return p
}

// value returns where a node's value sits and, when record is set, records it as read.
func (w *walker) value(n parse.Node, dot path, record bool) path {
	p := unknownPath
	switch n := n.(type) {
	case *parse.DotNode:
		p = dot
	case *parse.FieldNode:
		p = dot.extend(n.Ident...)
	case *parse.VariableNode:
		base, ok := w.vars[n.Ident[0]]
		if n.Ident[0] == "$" {
			base, ok = rootPath, true
		}
		if ok {
			p = base.extend(n.Ident[1:]...)
		}
	case *parse.ChainNode:
		p = w.value(n.Node, dot, false).extend(n.Field...)
	case *parse.PipeNode:
		p = w.pipe(n, dot)
	}
	if record {
		w.record(p)
	}
	return p
}
