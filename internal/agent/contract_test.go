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

package agent

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ergon-dev/ergon/internal/agentspec"
)

func TestContractChecksAnswers(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","required":["title"],"properties":{"title":{"type":"string"}}}`)
	for _, tc := range []struct {
		name     string
		contract Contract
		answer   string
		want     string
		err      string
	}{
		{"text is trimmed", Contract{}, "  hello \n", "hello", ""},
		{"json in a code fence is accepted and compacted", Contract{Format: "json", Schema: schema}, "```json\n{ \"title\": \"x\" }\n```", `{"title":"x"}`, ""},
		{"json that breaks the schema is refused", Contract{Format: "json", Schema: schema}, `{"title": 3}`, "", "does not satisfy the schema"},
		{"prose around json is refused", Contract{Format: "json"}, `Sure! {"a":1}`, "", "not valid JSON"},
		{"yaml is checked against the schema", Contract{Format: "yaml", Schema: schema}, "title: hello\n", "title: hello", ""},
		{"yaml that breaks the schema is refused", Contract{Format: "yaml", Schema: schema}, "name: hello\n", "", "missing property 'title'"},
		{"a missing section is named", Contract{Outputs: []NamedOutput{{Name: "a"}, {Name: "b"}}}, "## [a]\nx\n", "", "section ## [b] is missing"},
		{"an undeclared section is named", Contract{Outputs: []NamedOutput{{Name: "a"}}}, "## [a]\nx\n## [z]\ny", "", "## [z] is not one of the declared outputs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := compileContract(tc.contract)
			if err != nil {
				t.Fatal(err)
			}
			got, err := c.check(tc.answer)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v; want it to contain %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestAdmissionKnowsTheRegisteredFormats(t *testing.T) {
	if len(formats) != len(agentspec.Formats) {
		t.Fatalf("registered %d formats, agentspec.Formats lists %d", len(formats), len(agentspec.Formats))
	}
	for _, f := range agentspec.Formats {
		if _, ok := formats[f]; !ok {
			t.Errorf("agentspec.Formats lists %q, which is not registered", f)
		}
	}
}

func TestParseSections(t *testing.T) {
	got, err := ParseSections("preamble\n## [one]\nfirst\n\n##[two]  \r\nsecond\n## not a label\n")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got["one"] != "first" || got["two"] != "second\n## not a label" {
		t.Fatalf("got %q", got)
	}
	if _, err := ParseSections("## [a]\n1\n## [a]\n2"); err == nil || !strings.Contains(err.Error(), "appears twice") {
		t.Errorf("a duplicate label: %v", err)
	}
	if _, err := ParseSections("## [bad name]\n"); err == nil {
		t.Error("a label with a space was accepted")
	}
	if _, err := ParseSections("no labels"); err == nil {
		t.Error("an answer without labels was accepted")
	}
}

// FuzzParseSections checks that whatever the model writes, the parser neither panics nor
// loses or invents a section: each section it returns appears as a label, and writing the
// sections back parses to the same result.
func FuzzParseSections(f *testing.F) {
	f.Add("## [a]\nx\n## [b]\ny")
	f.Add("pre\n##[a]\r\n\n## [a]")
	f.Add("## [ü]\n")
	f.Add("## [a]\n## [b]\n## [c]")
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseSections(s)
		if err != nil {
			return
		}
		labels := map[string]bool{}
		for line := range strings.Lines(s) {
			if m := sectionHeader.FindStringSubmatch(strings.TrimRight(line, "\r\n")); m != nil {
				labels[strings.TrimSpace(m[1])] = true
			}
		}
		var b strings.Builder
		for name, body := range got {
			if !labels[name] {
				t.Fatalf("section %q is not labelled in %q", name, s)
			}
			if strings.Contains(body, "\n## [") {
				continue // a body holding a label-like line cannot be written back unambiguously
			}
			b.WriteString("## [" + name + "]\n" + body + "\n")
		}
		again, err := ParseSections(b.String())
		if err != nil && b.Len() > 0 {
			t.Fatalf("re-parsing %q: %v", b.String(), err)
		}
		for name, body := range again {
			if got[name] != body {
				t.Fatalf("section %q: %q then %q", name, got[name], body)
			}
		}
	})
}
