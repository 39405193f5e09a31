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
	"strings"
	"testing"
)

// TestMCPToolsAreCheckedAtAdmission reads mcp entries as a user writes them and checks that
// admission names the field it refuses.
func TestMCPToolsAreCheckedAtAdmission(t *testing.T) {
	const tools = "spec.steps[0].agent.tools"
	cases := []toolCase{
		{"a server with its tools",
			`[http_fetch, {mcp: {url: "http://issues.tools.svc:8080/mcp", allow: [search, get_issue]}, description: Issues}]`, nil},
		{"https with a query", `[{mcp: {url: "https://mcp.example.com/v1/mcp?team=a", allow: [a-b_C9]}}]`, nil},
		{"two servers, distinct tools", `[{mcp: {url: "http://a/mcp", allow: [x]}}, {mcp: {url: "http://b/mcp", allow: [z]}}]`, nil},
		{"no url", `[{mcp: {allow: [x]}}]`,
			[]string{tools + `[0].mcp.url: Required value`}},
		{"a relative url", `[{mcp: {url: "/mcp", allow: [x]}}]`,
			[]string{tools + `[0].mcp.url: Invalid value: "/mcp": must be an absolute http or https URL`}},
		{"another scheme", `[{mcp: {url: "ws://a/mcp", allow: [x]}}]`,
			[]string{tools + `[0].mcp.url: Invalid value: "ws://a/mcp": must be an absolute http or https URL`}},
		{"no host", `[{mcp: {url: "http://:8080/mcp", allow: [x]}}]`,
			[]string{tools + `[0].mcp.url: Invalid value`, "absolute http or https URL"}},
		{"credentials", `[{mcp: {url: "https://user:pw@a/mcp", allow: [x]}}]`,
			[]string{tools + `[0].mcp.url: Invalid value`, "must not hold credentials"}},
		{"a fragment", `[{mcp: {url: "https://a/mcp#x", allow: [x]}}]`,
			[]string{tools + `[0].mcp.url: Invalid value: "https://a/mcp#x": must not have a fragment`}},
		{"an unparsable url", `[{mcp: {url: "http://a b/mcp", allow: [x]}}]`,
			[]string{tools + `[0].mcp.url: Invalid value`}},
		{"a too long url", `[{mcp: {url: "https://a/` + strings.Repeat("p", 2048) + `", allow: [x]}}]`,
			[]string{tools + `[0].mcp.url: Too long`}},
		{"no allow", `[{mcp: {url: "http://a/mcp"}}]`,
			[]string{tools + `[0].mcp.allow: Required value`}},
		{"an empty allow", `[{mcp: {url: "http://a/mcp", allow: []}}]`,
			[]string{tools + `[0].mcp.allow: Required value`}},
		{"a bad tool name", `[http_fetch, {mcp: {url: "http://a/mcp", allow: [ok, "has space"]}}]`,
			[]string{tools + `[1].mcp.allow[1]: Invalid value: "has space"`}},
		{"a too long tool name", `[{mcp: {url: "http://a/mcp", allow: [` + strings.Repeat("t", 65) + `]}}]`,
			[]string{tools + `[0].mcp.allow[0]: Invalid value`}},
		{"a tool twice in one allow", `[{mcp: {url: "http://a/mcp", allow: [x, z, x]}}]`,
			[]string{tools + `[0].mcp.allow[2]: Duplicate value: "x"`}},
		{"a tool of two servers", `[{mcp: {url: "http://a/mcp", allow: [x]}}, {mcp: {url: "http://b/mcp", allow: [search, x]}}]`,
			[]string{tools + `[1].mcp.allow[1]: Duplicate value: "x"`}},
		{"a tool named like a built-in", `[http_fetch, {mcp: {url: "http://a/mcp", allow: [http_fetch]}}]`,
			[]string{tools + `[1].mcp.allow[0]: Duplicate value: "http_fetch"`}},
		{"a built-in after a server's tool of its name", `[{mcp: {url: "http://a/mcp", allow: [http_fetch]}}, http_fetch]`,
			[]string{tools + `[1].name: Duplicate value: "http_fetch"`}},
		{"a name on a server", `[{name: issues, mcp: {url: "http://a/mcp", allow: [x]}}]`,
			[]string{tools + `[0].name: Forbidden`, "keep their own names"}},
		{"approval of a server's tools", `[http_fetch, {requireApproval: true, mcp: {url: "http://a/mcp", allow: [x, z]}}]`, nil},
		{"approval of one server's tools, not the other's", `[{requireApproval: true, mcp: {url: "http://a/mcp", allow: [x]}},
			{mcp: {url: "http://b/mcp", allow: [z]}}]`, nil},
		{"approval of a server's tools with a bad name", `[{requireApproval: true, name: x, mcp: {url: "http://a/mcp", allow: [x]}}]`,
			[]string{tools + `[0].name: Forbidden`, "keep their own names"}},
		{"too many servers", `[{mcp: {url: "http://a/mcp", allow: [a]}}, {mcp: {url: "http://b/mcp", allow: [b]}},
			{mcp: {url: "http://c/mcp", allow: [c]}}, {mcp: {url: "http://d/mcp", allow: [d]}}, {mcp: {url: "http://e/mcp", allow: [e]}}]`,
			[]string{tools + `[4]: Too many: 5: must have at most 4 items`}},
		{"too many tools of a server", `[{mcp: {url: "http://a/mcp", allow: [` + manyNames(33) + `]}}]`,
			[]string{tools + `[0].mcp.allow: Too many: 33: must have at most 32 items`}},
	}
	checkToolCases(t, cases)
}

func manyNames(n int) string {
	names := make([]string, n)
	for i := range names {
		names[i] = "t" + strings.Repeat("x", i)
	}
	return strings.Join(names, ", ")
}
