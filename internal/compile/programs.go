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
	"fmt"
	"path"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/closure"
	"github.com/ergon-dev/ergon/internal/template"
)

// shells run their -c argument as a POSIX shell script.
var shells = []string{"sh", "bash", "ash", "dash", "zsh", "ksh", "mksh", "yash"}

// interpreters run an argument as a program after one of these flags. No quoting function
// fits their languages, so a template may not write into that argument at all.
var interpreters = map[string][]string{
	"python": {"-c"}, "perl": {"-e", "-E"}, "ruby": {"-e"}, "node": {"-e", "-p", "--eval", "--print"},
	"nodejs": {"-e", "-p", "--eval", "--print"}, "php": {"-r"}, "lua": {"-e"},
}

// CheckPrograms refuses container steps whose program a param or an output could rewrite:
// a template in command[0], which picks the program; a template in a shell's options; a
// template action in the script of sh -c (bash -c, ...) that is not passed through shquote or
// stands inside the script's quotes, comments or here-documents; any template action in the
// code argument of python -c, perl -e, node -e and the like. The other arguments and env values
// are data a program receives, and agent prompts are data the model reads. The errors name the
// field and say how to pass the value safely: as an environment variable, or with shquote.
func CheckPrograms(spec *ergonv1alpha1.SceneSpec) field.ErrorList {
	var errs field.ErrorList
	for at, s := range closure.Steps(spec) {
		if s.Container != nil {
			errs = append(errs, checkArgv(at.Child("container"), s.Container.Command, s.Container.Args)...)
		}
	}
	return errs
}

// arg is one element of a container's argv with the field it comes from.
type arg struct {
	path *field.Path
	text string
}

func checkArgv(cp *field.Path, command, args []string) field.ErrorList {
	var argv []arg
	for j, c := range command {
		argv = append(argv, arg{cp.Child("command").Index(j), c})
	}
	for j, a := range args {
		argv = append(argv, arg{cp.Child("args").Index(j), a})
	}
	var errs field.ErrorList
	compiled := func(a arg) *template.Template {
		t, err := template.Compile(a.path.String(), a.text)
		if err != nil {
			return nil // Compile reports it
		}
		return t
	}
	if len(argv) == 0 {
		return nil
	}
	if t := compiled(argv[0]); t != nil && t.HasActions() {
		errs = append(errs, field.Invalid(argv[0].path, argv[0].text,
			"the program a step runs cannot come from a template; name it here and pass values as arguments or environment variables"))
		return errs
	}
	program, rest := programOf(argv)
	errs = append(errs, checkProgram(program, rest, compiled, true)...)
	// A program may start another one: timeout, nice, xargs, nohup, su -c and the like run a
	// shell or an interpreter named among their own arguments. Wherever one is named further
	// on, its script is checked as well; a shell there counts only with -c, so that a word
	// "sh" given to grep is not taken for one.
	for j := len(argv) - len(rest); j < len(argv); j++ {
		errs = append(errs, checkProgram(argv[j].text, argv[j+1:], compiled, false)...)
	}
	return dedupe(errs)
}

// checkProgram checks the arguments rest of program when it is a shell, an interpreter or
// awk. first says whether program is the one the container runs; otherwise a shell is
// checked only when it is given a script with -c.
func checkProgram(program string, rest []arg, compiled func(arg) *template.Template, first bool) field.ErrorList {
	base := strings.TrimRight(path.Base(program), "0123456789.")
	switch {
	case slices.Contains(shells, base):
		if !first && !hasScriptFlag(rest) {
			return nil
		}
		return checkShell(rest, compiled)
	case slices.Contains(awks, base):
		return checkAwk(program, rest, compiled)
	case interpreters[base] != nil:
		for j := 0; j+1 < len(rest); j++ {
			if slices.Contains(interpreters[base], rest[j].text) {
				if t := compiled(rest[j+1]); t != nil && t.HasActions() {
					return field.ErrorList{field.Invalid(rest[j+1].path, rest[j+1].text, fmt.Sprintf(
						"a template writes into the code %s %s runs, so a value could change the program: read the value "+
							"from the environment instead (ERGON_PARAM_NAME for a param, the file $ERGON_INPUTS/STEP for an output)",
						program, rest[j].text))}
				}
				return nil
			}
		}
	}
	return nil
}

// hasScriptFlag reports whether a shell's options, before its first operand, include -c.
func hasScriptFlag(rest []arg) bool {
	for _, a := range rest {
		if a.text == "--" || (!strings.HasPrefix(a.text, "-") && !strings.HasPrefix(a.text, "+")) {
			return false
		}
		if !strings.HasPrefix(a.text, "--") && strings.Contains(strings.TrimLeft(a.text, "-+"), "c") {
			return true
		}
	}
	return false
}

// awks run their first operand as an awk program, whose system() and pipes reach a shell.
var awks = []string{"awk", "gawk", "mawk", "nawk"}

// checkAwk refuses a template in the program awk runs, or in the file it reads it from; -v
// assignments and the files it reads are data.
func checkAwk(program string, rest []arg, compiled func(arg) *template.Template) field.ErrorList {
	for j := 0; j < len(rest); j++ {
		a := rest[j]
		switch {
		case a.text == "-f" || a.text == "--file":
			if j+1 < len(rest) {
				a = rest[j+1]
			}
		case a.text == "-v" || a.text == "-F" || a.text == "--assign" || a.text == "--field-separator":
			j++
			continue
		case strings.HasPrefix(a.text, "-") && a.text != "--" && a.text != "-":
			continue
		case a.text == "--":
			if j+1 >= len(rest) {
				return nil
			}
			a = rest[j+1]
		}
		if t := compiled(a); t != nil && t.HasActions() {
			return field.ErrorList{field.Invalid(a.path, a.text, fmt.Sprintf(
				"a template writes into the program %s runs, so a value could change it: pass the value with -v NAME=... "+
					"or read it from ENVIRON instead", program))}
		}
		return nil
	}
	return nil
}

// dedupe drops repeats of one error: a script may be reached from two places of an argv.
func dedupe(errs field.ErrorList) field.ErrorList {
	var out field.ErrorList
	seen := map[string]bool{}
	for _, e := range errs {
		if k := e.Field + "\x00" + e.Detail; !seen[k] {
			seen[k] = true
			out = append(out, e)
		}
	}
	return out
}

// programOf finds the program an argv runs, looking through env (with its options and
// VAR=value assignments) and busybox to what they start.
func programOf(argv []arg) (string, []arg) {
	for len(argv) > 0 {
		switch path.Base(argv[0].text) {
		case "env":
			argv = argv[1:]
			for len(argv) > 0 && (strings.HasPrefix(argv[0].text, "-") || strings.Contains(argv[0].text, "=")) {
				argv = argv[1:]
			}
		case "busybox":
			argv = argv[1:]
		default:
			return argv[0].text, argv[1:]
		}
	}
	return "", nil
}

// checkShell checks a shell's options and, after -c (alone or among other flags, as in -ec),
// its script.
func checkShell(rest []arg, compiled func(arg) *template.Template) field.ErrorList {
	var errs field.ErrorList
	sawC := false
	for j := 0; j < len(rest); j++ {
		a := rest[j]
		t := compiled(a)
		isOption := strings.HasPrefix(a.text, "-") || strings.HasPrefix(a.text, "+")
		if !isOption || a.text == "--" {
			if a.text == "--" {
				j++
				if j >= len(rest) {
					return errs
				}
				a, t = rest[j], compiled(rest[j])
			}
			switch {
			case t == nil:
			case sawC:
				if problem := t.ShellScriptProblem(); problem != "" {
					errs = append(errs, field.Invalid(a.path, a.text, problem))
				}
			case t.HasActions():
				errs = append(errs, field.Invalid(a.path, a.text,
					"the script file a shell runs, and its options, cannot come from a template; "+
						"write them here and pass values as environment variables"))
			}
			return errs // the script, or a script file; what follows are its arguments
		}
		if t != nil && t.HasActions() {
			errs = append(errs, field.Invalid(a.path, a.text,
				"a shell's options cannot come from a template; write them here and pass values as environment variables"))
			return errs
		}
		flags := strings.TrimLeft(a.text, "-+")
		if !strings.HasPrefix(a.text, "--") {
			sawC = sawC || strings.Contains(flags, "c")
			if strings.Contains(flags, "o") {
				j++ // -o NAME takes the option's name
			}
		}
	}
	return errs
}
