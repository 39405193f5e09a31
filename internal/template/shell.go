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
	"slices"
	"strings"
	"text/template/parse"
)

// ShellQuoteFuncs are the functions whose result is one word of a POSIX shell script
// whatever the value: shquote, and squote, which does the same.
var ShellQuoteFuncs = []string{"shquote", "squote"}

// HasActions reports whether the template has actions, and so renders anything but its text.
func (t *Template) HasActions() bool {
	return t.tmpl != nil
}

// ShellScriptProblem reports the first action of a template used as a shell script (the
// argument of sh -c) through which a value could change the script, or "" when there is none.
// An action is safe when its pipeline ends in a shell-quoting function (shquote) and it stands
// outside any quotes, comment or here-document of the script's own text, so that what it prints
// stays one word. Actions that only assign variables print nothing and are safe.
func (t *Template) ShellScriptProblem() string {
	if t.tmpl == nil {
		return ""
	}
	s := &shellScan{}
	s.list(t.tmpl.Root)
	return s.problem
}

// shellState is where a shell lexer stands in a script's text.
type shellState int

const (
	shellBlank   shellState = iota // outside quotes, where a word may start (a comment too)
	shellWord                      // outside quotes, after a word character
	shellSingle                    // inside '...'
	shellDouble                    // inside "..."
	shellComment                   // after # until the end of the line
	shellHeredoc                   // after <<: a here-document's body, which expands $(...)
)

var shellStateNames = map[shellState]string{
	shellSingle:  "inside single quotes",
	shellDouble:  "inside double quotes",
	shellComment: "inside a comment",
	shellHeredoc: "after a here-document (<<)",
}

// shellScan follows the script's literal text in document order, checking each action where
// it stands. The branches of if, with and range each start from the state before them and must
// end in the same state, so quotes balance within a branch.
type shellScan struct {
	state   shellState
	escaped bool // the previous character was a backslash outside single quotes
	problem string
}

func (s *shellScan) fail(format string, args ...any) {
	if s.problem == "" {
		s.problem = fmt.Sprintf(format, args...)
	}
}

func (s *shellScan) list(l *parse.ListNode) {
	if l == nil {
		return
	}
	for _, n := range l.Nodes {
		s.node(n)
	}
}

func (s *shellScan) node(n parse.Node) {
	switch n := n.(type) {
	case *parse.TextNode:
		s.text(string(n.Text))
	case *parse.ActionNode:
		s.action(n)
	case *parse.IfNode:
		s.branches("{{if}}", n.List, n.ElseList)
	case *parse.WithNode:
		s.branches("{{with}}", n.List, n.ElseList)
	case *parse.RangeNode:
		s.branches("{{range}}", n.List, n.ElseList)
	case *parse.ListNode:
		s.list(n)
	}
}

// branches checks each branch from the current state; they must all end where they began, or
// the script's quoting would depend on the data.
func (s *shellScan) branches(source string, lists ...*parse.ListNode) {
	start, escaped := s.state, s.escaped
	for _, l := range lists {
		s.state, s.escaped = start, escaped
		s.list(l)
		if s.problem == "" && s.state != start && (!isBlankOrWord(start) || !isBlankOrWord(s.state)) {
			s.fail("%s leaves the script's quotes unbalanced; open and close quotes within each branch", source)
		}
	}
	s.state, s.escaped = start, escaped
}

func isBlankOrWord(st shellState) bool {
	return st == shellBlank || st == shellWord
}

func (s *shellScan) action(n *parse.ActionNode) {
	if len(n.Pipe.Decl) > 0 {
		return // {{ $x := ... }} prints nothing
	}
	last := n.Pipe.Cmds[len(n.Pipe.Cmds)-1]
	fn, ok := last.Args[0].(*parse.IdentifierNode)
	if !ok || !slices.Contains(ShellQuoteFuncs, fn.Ident) {
		s.fail("%s is pasted into a shell script unquoted, so a value could change the script: "+
			"read the value from the environment instead (\"$ERGON_PARAM_NAME\" for a param, the file "+
			"$ERGON_INPUTS/STEP for an output), or end the action with | shquote", n)
		return
	}
	if where, bad := shellStateNames[s.state]; bad || s.escaped {
		if s.escaped {
			where = "after a backslash"
		}
		s.fail("%s stands %s, where quoting cannot keep a value one word: put it outside quotes "+
			"(\"text \"{{ ... | shquote }}), or read the value from the environment", n, where)
		return
	}
	s.state = shellWord
}

// text moves the lexer over literal script text.
func (s *shellScan) text(text string) {
	for i := 0; i < len(text); i++ {
		c := text[i]
		if s.escaped {
			s.escaped = false
			if s.state == shellBlank {
				s.state = shellWord
			}
			continue
		}
		switch s.state {
		case shellHeredoc:
			return // a here-document's body runs to a delimiter this scan does not follow
		case shellComment:
			if c == '\n' {
				s.state = shellBlank
			}
		case shellSingle:
			if c == '\'' {
				s.state = shellWord
			}
		case shellDouble:
			switch c {
			case '\\':
				s.escaped = true
			case '"':
				s.state = shellWord
			}
		default:
			switch {
			case c == '\\':
				s.escaped = true
			case c == '\'':
				s.state = shellSingle
			case c == '"':
				s.state = shellDouble
			case c == '#' && s.state == shellBlank:
				s.state = shellComment
			case c == '<' && strings.HasPrefix(text[i:], "<<") && !strings.HasPrefix(text[i:], "<<<"):
				s.state = shellHeredoc
				return
			case c == '<' && strings.HasPrefix(text[i:], "<<<"):
				i += 2
				s.state = shellBlank
			case strings.IndexByte(" \t\n;&|()<>`", c) >= 0:
				s.state = shellBlank
			default:
				s.state = shellWord
			}
		}
	}
}
