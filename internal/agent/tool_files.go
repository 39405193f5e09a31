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
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// Filesystem tools, confined to the Workspace directory with os.Root: paths that leave it,
// by "..", by an absolute path elsewhere or through a symbolic link, are refused.

const maxListed = 1000

func init() {
	const pathParam = `"path": {"type": "string", "description": "path relative to the workspace"}`
	registerTool(&Tool{
		Name: "read_file", Description: "Read a file of the workspace.", NeedsWorkspace: true,
		Parameters: jsonSchema(`{"type": "object", "additionalProperties": false, "required": ["path"],
			"properties": {` + pathParam + `}}`),
		Call: readFile,
	})
	registerTool(&Tool{
		Name: "write_file", Description: "Write a file of the workspace, creating its directories.", NeedsWorkspace: true,
		Parameters: jsonSchema(`{"type": "object", "additionalProperties": false, "required": ["path", "content"],
			"properties": {` + pathParam + `, "content": {"type": "string"}}}`),
		Call: writeFile,
	})
	registerTool(&Tool{
		Name: "list_files", Description: "List the files under a directory of the workspace, recursively.", NeedsWorkspace: true,
		Parameters: jsonSchema(`{"type": "object", "additionalProperties": false, "properties": {` + pathParam + `}}`),
		Call:       listFiles,
	})
}

// workspacePath turns a path the model gave into one relative to the workspace root, or
// refuses it.
func workspacePath(root, p string) (string, error) {
	if p == "" {
		p = "."
	}
	if filepath.IsAbs(p) {
		rel, err := filepath.Rel(root, p)
		if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
			return "", fmt.Errorf("path %q is outside the workspace %s", p, root)
		}
		p = rel
	}
	clean := path.Clean(filepath.ToSlash(p))
	if clean == ".." || strings.HasPrefix(clean, "../") {
		return "", fmt.Errorf("path %q leaves the workspace", p)
	}
	return clean, nil
}

func openRoot(env *ToolEnv) (*os.Root, error) {
	if env.Workspace == "" {
		return nil, errors.New("this step is bound to no Workspace")
	}
	return os.OpenRoot(env.Workspace)
}

type pathArgs struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

// openPath reads a file tool's arguments and opens the workspace for the path they name, as a
// root that nothing outside it can be reached through. The caller closes the root.
func openPath(env *ToolEnv, raw json.RawMessage) (pathArgs, string, *os.Root, error) {
	var a pathArgs
	if err := json.Unmarshal(raw, &a); err != nil {
		return a, "", nil, err
	}
	p, err := workspacePath(env.Workspace, a.Path)
	if err != nil {
		return a, "", nil, err
	}
	root, err := openRoot(env)
	return a, p, root, err
}

func readFile(_ context.Context, env *ToolEnv, raw json.RawMessage) (string, error) {
	_, p, root, err := openPath(env, raw)
	if err != nil {
		return "", err
	}
	defer func() { _ = root.Close() }()
	f, err := root.Open(p)
	if err != nil {
		return "", err
	}
	defer func() { _ = f.Close() }()
	b, err := io.ReadAll(io.LimitReader(f, int64(env.MaxResult)+1))
	return string(b), err
}

func writeFile(_ context.Context, env *ToolEnv, raw json.RawMessage) (string, error) {
	a, p, root, err := openPath(env, raw)
	if err != nil {
		return "", err
	}
	defer func() { _ = root.Close() }()
	if p == "." {
		return "", errors.New("path names the workspace itself; name a file")
	}
	if dir := path.Dir(p); dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return "", err
		}
	}
	if err := root.WriteFile(p, []byte(a.Content), 0o644); err != nil {
		return "", err
	}
	return fmt.Sprintf("wrote %d bytes to %s", len(a.Content), p), nil
}

func listFiles(ctx context.Context, env *ToolEnv, raw json.RawMessage) (string, error) {
	_, p, root, err := openPath(env, raw)
	if err != nil {
		return "", err
	}
	defer func() { _ = root.Close() }()
	var b strings.Builder
	n := 0
	err = fs.WalkDir(root.FS(), p, func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if n >= maxListed {
			return fs.SkipAll
		}
		n++
		if d.IsDir() {
			name += "/"
		}
		b.WriteString(name + "\n")
		return nil
	})
	if n >= maxListed {
		fmt.Fprintf(&b, "[stopped after %d entries]\n", maxListed)
	}
	return b.String(), err
}
