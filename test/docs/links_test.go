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

// Package docs checks the repository's Markdown: a clone must find everything its documents
// point to, with nothing outside the clone.
package docs

import (
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"unicode"
)

var (
	// inline links and images: [text](target "title"); reference definitions: [name]: target
	inlineLink = regexp.MustCompile(`!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	refLink    = regexp.MustCompile(`(?m)^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$`)
	codeSpan   = regexp.MustCompile("`[^`]*`")
	heading    = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
)

func repoRoot(t *testing.T) string {
	t.Helper()
	_, here, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(here), "..", "..")
}

// markdownFiles lists the repository's Markdown files, without hidden directories and what
// builds put in bin/.
func markdownFiles(t *testing.T, root string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() && path != root && (strings.HasPrefix(name, ".") || name == "bin" || name == "vendor" || name == "node_modules") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(name, ".md") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// prose is a Markdown file without fenced code blocks and code spans, where text in
// brackets is not a link.
func prose(text string) string {
	var b strings.Builder
	fence := ""
	for line := range strings.SplitSeq(text, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case fence == "" && (strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~")):
			fence = trimmed[:3]
		case fence != "" && strings.HasPrefix(trimmed, fence):
			fence = ""
		case fence == "":
			b.WriteString(codeSpan.ReplaceAllString(line, "``"))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// links are the link targets of a Markdown file.
func links(text string) []string {
	p := prose(text)
	var out []string
	for _, m := range inlineLink.FindAllStringSubmatch(p, -1) {
		out = append(out, m[1])
	}
	for _, m := range refLink.FindAllStringSubmatch(p, -1) {
		out = append(out, m[1])
	}
	return out
}

// anchors are the ids GitHub gives a Markdown file's headings: lower case, punctuation
// dropped, spaces as hyphens, "-1", "-2" for repeats.
func anchors(text string) map[string]bool {
	ids := map[string]bool{}
	seen := map[string]int{}
	for line := range strings.SplitSeq(prose(text), "\n") {
		m := heading.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		id := slug(m[1])
		if n := seen[id]; n > 0 {
			ids[fmt.Sprintf("%s-%d", id, n)] = true
		} else {
			ids[id] = true
		}
		seen[id]++
	}
	return ids
}

func slug(title string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(title) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
	}
	return b.String()
}

// check says what is wrong with a link of a file, or "".
func check(root, file, target string) string {
	u, err := url.Parse(target)
	if err != nil {
		return "does not parse: " + err.Error()
	}
	if u.Scheme != "" || strings.HasPrefix(target, "//") {
		return "" // a web address; the test does not go on the network
	}
	if strings.HasPrefix(u.Path, "/") {
		return "is an absolute path; a clone has no such file: link relative to the file"
	}
	path := filepath.Join(filepath.Dir(file), filepath.FromSlash(u.Path))
	if u.Path == "" {
		path = file
	}
	rel, err := filepath.Rel(root, path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "points outside the repository"
	}
	info, err := os.Stat(path)
	if err != nil {
		return "names a file that does not exist"
	}
	if u.Fragment == "" || info.IsDir() || !strings.HasSuffix(path, ".md") {
		return ""
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	if !anchors(string(raw))[u.Fragment] {
		return fmt.Sprintf("names a heading #%s that %s does not have", u.Fragment, filepath.Base(path))
	}
	return ""
}

func TestEveryRelativeLinkInTheRepositorysMarkdownResolves(t *testing.T) {
	root := repoRoot(t)
	files := markdownFiles(t, root)
	if len(files) < 4 {
		t.Fatalf("found only %d Markdown files under %s", len(files), root)
	}
	checked := 0
	for _, file := range files {
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, file)
		for _, target := range links(string(raw)) {
			checked++
			if problem := check(root, file, target); problem != "" {
				t.Errorf("%s: the link %q %s", rel, target, problem)
			}
		}
	}
	if checked < 10 {
		t.Errorf("checked only %d links; is the link pattern broken?", checked)
	}
}

// The checker itself, on links it must refuse and accept.
func TestTheLinkCheckerTellsBrokenLinksFromGoodOnes(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "docs", "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	doc := "# Title\n\n## How a Run executes\n\n## Twice\n\n## Twice\n\n```\n# not a heading\n```\n"
	if err := os.WriteFile(filepath.Join(root, "docs", "a.md"), []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(root, "README.md")
	for _, tc := range []struct {
		target string
		ok     bool
	}{
		{"docs/a.md", true},
		{"docs/a.md#how-a-run-executes", true},
		{"docs/a.md#twice-1", true},
		{"docs/sub", true},
		{"https://example.org/x", true},
		{"docs/a.md#not-a-heading", false},
		{"docs/a.md#nowhere", false},
		{"docs/b.md", false},
		{"../outside/DESIGN.md", false},
		{"/elsewhere/DESIGN.md", false},
	} {
		if got := check(root, file, tc.target) == ""; got != tc.ok {
			t.Errorf("%s: accepted %v, want %v (%s)", tc.target, got, tc.ok, check(root, file, tc.target))
		}
	}
	got := links("See [a](docs/a.md), `[not](code.md)`, ![img](x.png \"t\")\n\n```\n[no](fence.md)\n```\n[ref]: docs/sub\n")
	if strings.Join(got, " ") != "docs/a.md x.png docs/sub" {
		t.Errorf("links found: %q", got)
	}
}
