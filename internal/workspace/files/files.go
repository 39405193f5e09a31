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

// Package files reads a Workspace's files for people: the `files` command of Ergon's
// entrypoint, which runs inside the workspace pod, lists a directory or streams a file under
// /workspace and nothing else. It uses only the standard library, so the entrypoint stays
// small. The client that runs it through the API server is package browse.
package files

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"
)

// MaxEntries bounds a listing, so a directory of a million files cannot flood the caller.
const MaxEntries = 10000

// Entry is one file of a listing, one JSON object per line.
type Entry struct {
	Name    string    `json:"name"`
	Type    string    `json:"type"` // file, dir, symlink or other
	Size    int64     `json:"size"`
	Mode    string    `json:"mode"`
	ModTime time.Time `json:"modTime"`
}

// ErrOutside is the error for a path that leaves the root, itself or through a symlink.
var ErrOutside = errors.New("the path leaves the workspace")

// Resolve turns a path relative to root ("/" or "" is root itself) into a path on disk whose
// every symlink is resolved and which is still under root.
func Resolve(root, rel string) (string, error) {
	clean := path.Clean("/" + rel)
	real, err := filepath.EvalSymlinks(filepath.Join(root, filepath.FromSlash(clean)))
	if err != nil {
		return "", err
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return "", err
	}
	if real != realRoot && !strings.HasPrefix(real, realRoot+string(filepath.Separator)) {
		return "", fmt.Errorf("%s: %w", rel, ErrOutside)
	}
	return real, nil
}

// List writes the entries of a directory under root, sorted by name, as JSON lines.
func List(root, rel string, w io.Writer) error {
	dir, err := Resolve(root, rel)
	if err != nil {
		return err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	if len(entries) > MaxEntries {
		return fmt.Errorf("%s has %d entries, more than the %d a listing shows", rel, len(entries), MaxEntries)
	}
	enc := json.NewEncoder(w)
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			continue // removed since it was read
		}
		if err := enc.Encode(Entry{Name: e.Name(), Type: typeOf(info.Mode()), Size: info.Size(),
			Mode: info.Mode().Perm().String(), ModTime: info.ModTime().UTC()}); err != nil {
			return err
		}
	}
	return nil
}

func typeOf(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "file"
	case m.IsDir():
		return "dir"
	case m&fs.ModeSymlink != 0:
		return "symlink"
	}
	return "other"
}

// Read writes a regular file under root.
func Read(root, rel string, w io.Writer) error {
	p, err := Resolve(root, rel)
	if err != nil {
		return err
	}
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	info, err := f.Stat()
	if err != nil {
		return err
	}
	if !info.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", rel)
	}
	_, err = io.Copy(w, f)
	return err
}

// Command runs the entrypoint's `files` command: `files ls PATH` or `files cat PATH`, PATH
// relative to root. Errors go to stderr and the exit code, so the caller can tell them from
// content.
func Command(root string, args []string, stdout, stderr io.Writer) int {
	if len(args) != 2 || args[0] != "ls" && args[0] != "cat" {
		_, _ = fmt.Fprintln(stderr, "usage: entrypoint files ls|cat PATH")
		return 2
	}
	run := List
	if args[0] == "cat" {
		run = Read
	}
	if err := run(root, args[1], stdout); err != nil {
		_, _ = fmt.Fprintln(stderr, strings.ReplaceAll(err.Error(), root, ""))
		return 1
	}
	return 0
}
