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

import "testing"

func TestContainerToolsAreChecked(t *testing.T) {
	const at = `spec.steps[0].agent.tools[0]`
	cases := []toolCase{
		{"a container tool", `[{name: lint, description: Lints., requireApproval: true, container: {image: "golangci/golangci-lint:v2",` +
			` command: [golangci-lint, run], args: ["{{ .args.path }}", "--timeout={{ .args.minutes }}m"],` +
			` parameters: {type: object, properties: {path: {type: string}, minutes: {type: integer}}, required: [path]}}}]`, nil},
		{"without parameters: any object", `[{name: lint, container: {image: busybox, command: [echo, "{{ .args.x }}"]}}]`, nil},
		{"a shell script that quotes the arguments", `[{name: lint, container: {image: busybox,` +
			` command: [sh, -c, "wc -l {{ .args.file | shquote }} > \"$ERGON_OUTPUT\""]}}]`, nil},
		{"no name", `[{container: {image: busybox, command: ["true"]}}]`,
			[]string{at + `.name: Required value`}},
		{"a built-in's name", `[{name: shell, container: {image: busybox, command: ["true"]}}]`,
			[]string{at + `.name: Invalid value: "shell"`, "a built-in tool has that name"}},
		{"a name that is no function name", `[{name: "lint it", container: {image: busybox, command: ["true"]}}]`,
			[]string{at + `.name: Invalid value: "lint it"`}},
		{"two tools of one name", `[{name: lint, container: {image: a, command: ["true"]}}, {name: lint, scene: s}]`,
			[]string{`spec.steps[0].agent.tools[1].name: Duplicate value: "lint"`}},
		{"no image", `[{name: lint, container: {command: ["true"]}}]`,
			[]string{at + `.container.image: Required value`}},
		{"no command", `[{name: lint, container: {image: busybox, args: [x]}}]`,
			[]string{at + `.container.command: Required value`}},
		{"parameters of no object", `[{name: lint, container: {image: busybox, command: ["true"], parameters: {type: string}}}]`,
			[]string{at + `.container.parameters: Invalid value`, `"type": "object"`}},
		{"parameters that do not compile", `[{name: lint, container: {image: busybox, command: ["true"],` +
			` parameters: {type: object, properties: {x: {type: 7}}}}}]`,
			[]string{at + `.container.parameters: Invalid value`, "does not compile"}},
		{"a template that does not parse", `[{name: lint, container: {image: busybox, command: [echo, "{{ .args.x "]}}]`,
			[]string{at + `.container.command[1]: Invalid value`, "invalid template"}},
		{"a template that reads params", `[{name: lint, container: {image: busybox, command: [echo], args: ["{{ .params.x }}"]}}]`,
			[]string{at + `.container.args[0]: Invalid value`, "read only the call's arguments, as .args.NAME, not .params"}},
		{"a template that reads an undeclared argument", `[{name: lint, container: {image: busybox, command: [echo],` +
			` args: ["{{ .args.y }}"], parameters: {type: object, properties: {x: {type: string}}, additionalProperties: false}}}]`,
			[]string{at + `.container.args[0]: Invalid value`, "reads .args.y, which the parameters do not declare"}},
		{"a template that picks the program", `[{name: lint, container: {image: busybox, command: ["{{ .args.prog }}"]}}]`,
			[]string{at + `.container.command[0]: Invalid value`, "cannot come from a template"}},
		{"an argument spliced into a shell script", `[{name: lint, container: {image: busybox,` +
			` command: [sh, -c, "lint {{ .args.path }}"]}}]`,
			[]string{at + `.container.command[2]: Invalid value`}},
		{"a container and a Scene in one entry", `[{name: lint, scene: s, container: {image: busybox, command: ["true"]}}]`,
			[]string{at, "set one of scene, container and mcp"}},
	}
	checkToolCases(t, cases)
}
