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
	"strings"
	texttemplate "text/template"
	"text/template/parse"
)

// escapeFunc is the function EscapeExpansion appends to every printing action. Its name cannot
// be used in a template: it is not in the function set templates are parsed with.
const escapeFunc = "ergonEscapeExpansion"

// EscapeExpansion makes the template write every value it prints with each $ doubled, and
// returns it. The kubelet expands $(VAR) in a container's command, args and env values and
// turns $$ into $: so a value such as "$(ERGON_PARAM_token)" reaches the container as that
// text, and cannot name a variable for the kubelet to fill in, while the template's own text
// keeps $(VAR) working. Call it once, right after Compile.
func (t *Template) EscapeExpansion() *Template {
	if t.tmpl == nil {
		return t
	}
	t.tmpl.Funcs(texttemplate.FuncMap{escapeFunc: EscapeDollars})
	var walk func(l *parse.ListNode)
	walk = func(l *parse.ListNode) {
		if l == nil {
			return
		}
		for _, n := range l.Nodes {
			switch n := n.(type) {
			case *parse.ActionNode:
				if len(n.Pipe.Decl) == 0 {
					id := parse.NewIdentifier(escapeFunc).SetTree(t.tmpl.Tree).SetPos(n.Pos)
					n.Pipe.Cmds = append(n.Pipe.Cmds, &parse.CommandNode{NodeType: parse.NodeCommand, Pos: n.Pos, Args: []parse.Node{id}})
				}
			case *parse.IfNode:
				walk(n.List)
				walk(n.ElseList)
			case *parse.WithNode:
				walk(n.List)
				walk(n.ElseList)
			case *parse.RangeNode:
				walk(n.List)
				walk(n.ElseList)
			case *parse.ListNode:
				walk(n)
			}
		}
	}
	walk(t.tmpl.Root)
	return t
}

// EscapeDollars writes a value as text with each $ doubled, which the kubelet's expansion of
// $(VAR) turns back into one. A missing value prints as text/template prints it.
func EscapeDollars(v any) (string, error) {
	if v == nil {
		return "<no value>", nil
	}
	s := toString(v)
	n := strings.Count(s, "$")
	if err := fitting(len(s) + n); err != nil {
		return "", err
	}
	return strings.ReplaceAll(s, "$", "$$"), nil
}
