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

package files

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func tree(t *testing.T) (string, string) {
	t.Helper()
	base := t.TempDir()
	root := filepath.Join(base, "workspace")
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, "src"), 0o755))
	must(os.WriteFile(filepath.Join(root, "src", "main.py"), []byte("print('hi')\n"), 0o644))
	must(os.WriteFile(filepath.Join(base, "secret"), []byte("key"), 0o600))
	must(os.Symlink(filepath.Join(base, "secret"), filepath.Join(root, "escape")))
	must(os.Symlink("src/main.py", filepath.Join(root, "inside")))
	return root, base
}

func TestListAndReadStayInTheWorkspace(t *testing.T) {
	root, _ := tree(t)
	var out bytes.Buffer
	if code := Command(root, []string{"ls", "/"}, &out, &bytes.Buffer{}); code != 0 {
		t.Fatalf("ls / exited %d", code)
	}
	var names []string
	for line := range strings.SplitSeq(strings.TrimSpace(out.String()), "\n") {
		var e Entry
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatal(err)
		}
		names = append(names, e.Name+":"+e.Type)
	}
	if got := strings.Join(names, " "); got != "escape:symlink inside:symlink src:dir" {
		t.Errorf("ls / lists %s", got)
	}

	for _, tc := range []struct {
		path, want string
		outside    bool
	}{
		{"src/main.py", "print('hi')\n", false},
		{"/inside", "print('hi')\n", false},
		{"../secret", "", true}, // cleaned to /secret under the root: absent, not outside
		{"escape", "", true},
	} {
		out.Reset()
		err := Read(root, tc.path, &out)
		if tc.want != "" && (err != nil || out.String() != tc.want) {
			t.Errorf("cat %s: %q, %v; want %q", tc.path, out.String(), err, tc.want)
		}
		if tc.outside && err == nil {
			t.Errorf("cat %s read %q outside the workspace", tc.path, out.String())
		}
	}
	if err := Read(root, "escape", &out); !errors.Is(err, ErrOutside) {
		t.Errorf("a symlink out of the workspace gives %v, want ErrOutside", err)
	}
	var stderr bytes.Buffer
	if code := Command(root, []string{"cat", "src"}, &out, &stderr); code != 1 || strings.Contains(stderr.String(), root) {
		t.Errorf("cat of a directory exited %d with %q; want 1 and no path of the pod's disk", code, stderr.String())
	}
	if code := Command(root, []string{"rm", "src"}, &out, &stderr); code != 2 {
		t.Errorf("an unknown command exited %d, want 2", code)
	}
}
