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
	"os/exec"
	"strings"
	"testing"
)

func TestShellScriptProblem(t *testing.T) {
	cases := []struct {
		name, text string
		want       string // a part of the problem; empty when the script is safe
	}{
		{"plain text is safe", `echo hi > "$ERGON_OUTPUT"`, ""},
		{"a value read from the environment is safe", `curl "$TRACKER/sprint/$ERGON_PARAM_sprint"`, ""},
		{"shquote outside quotes is safe", `echo {{ .params.who | shquote }} > "$ERGON_OUTPUT"`, ""},
		{"shquote called as a function is safe", `echo {{ shquote .params.who }}`, ""},
		{"squote is the same function", `echo {{ .params.who | squote }}`, ""},
		{"shquote glued to text stays one word", `echo "hello, "{{ .params.who | shquote }}"!"`, ""},
		{"an assignment prints nothing", `{{ $w := .params.who }}echo {{ $w | shquote }}`, ""},
		{"a quoted action in a balanced branch is safe", `{{ if .params.x }}echo {{ .params.x | shquote }}{{ else }}echo "none"{{ end }}`, ""},
		{"a here-string is not a here-document", `cat <<< {{ .params.x | shquote }}`, ""},
		{"an unquoted action is refused", `echo {{ .params.who }}`, "unquoted"},
		{"quote is not shell quoting", `echo {{ .params.who | quote }}`, "unquoted"},
		{"shquote must come last", `echo {{ .params.who | shquote | upper }}`, "unquoted"},
		{"an action in an if body is checked", `{{ if true }}echo {{ .params.who }}{{ end }}`, "unquoted"},
		{"an action in a range body is checked", `{{ range .steps.x.outputs.list }}echo {{ . }};{{ end }}`, "unquoted"},
		{"shquote inside double quotes is refused: $() still runs there", `echo "hello, {{ .params.who | shquote }}"`, "inside double quotes"},
		{"shquote inside single quotes is refused", `echo 'a{{ .params.who | shquote }}'`, "inside single quotes"},
		{"shquote in a comment is refused: a newline ends it", "true # {{ .params.who | shquote }}", "inside a comment"},
		{"shquote in a here-document is refused", "cat <<EOF\n{{ .params.who | shquote }}\nEOF", "here-document"},
		{"shquote after a backslash is refused", `echo \{{ .params.who | shquote }}`, "after a backslash"},
		{"a branch that leaves a quote open is refused", `echo {{ if .params.x }}"{{ end }}x"`, "unbalanced"},
		{"a hash inside a word is not a comment", `echo a#{{ .params.who | shquote }}`, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tmpl, err := Compile(field, tc.text)
			if err != nil {
				t.Fatal(err)
			}
			got := tmpl.ShellScriptProblem()
			switch {
			case tc.want == "" && got != "":
				t.Fatalf("want no problem, got %q", got)
			case tc.want != "" && !strings.Contains(got, tc.want):
				t.Fatalf("want a problem containing %q, got %q", tc.want, got)
			}
		})
	}
}

// TestShquoteKeepsAValueOneWord runs what shquote writes through a real shell: whatever the
// value, the script sees it as one argument and runs nothing else.
func TestShquoteKeepsAValueOneWord(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh on this machine")
	}
	for _, value := range []string{
		`"; printenv; "`, `'; printenv; '`, "$(printenv)", "`printenv`", "a\nprintenv", `\'; printenv #`, "",
	} {
		tmpl, err := Compile(field, `printf '%s' {{ .params.v | shquote }}`)
		if err != nil {
			t.Fatal(err)
		}
		script, err := tmpl.Execute(Data{Params: map[string]string{"v": value}})
		if err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(sh, "-c", script).Output() //nolint:gosec // the script is the test's
		if err != nil {
			t.Fatalf("script %q: %v", script, err)
		}
		if string(out) != value {
			t.Errorf("value %q came out as %q", value, out)
		}
	}
}

func TestEscapeExpansion(t *testing.T) {
	cases := []struct {
		name, text, want string
	}{
		{"a value's $ is doubled", `curl x/{{ .params.v }}`, `curl x/$$(ERGON_PARAM_token)`},
		{"the template's own $(VAR) is kept", `$(HOME)/{{ .params.v }}`, `$(HOME)/$$(ERGON_PARAM_token)`},
		{"after shquote too", `echo {{ .params.v | shquote }}`, `echo '$$(ERGON_PARAM_token)'`},
		{"inside a branch", `{{ if true }}{{ .params.v }}{{ end }}`, `$$(ERGON_PARAM_token)`},
		{"an assignment prints nothing", `{{ $x := .params.v }}[{{ len $x }}]`, `[20]`},
		{"text without actions is as written", `$(HOME)`, `$(HOME)`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tmpl, err := Compile(field, tc.text)
			if err != nil {
				t.Fatal(err)
			}
			got, err := tmpl.EscapeExpansion().Execute(Data{Params: map[string]string{"v": "$(ERGON_PARAM_token)"}})
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}
