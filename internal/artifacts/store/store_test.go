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

package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// stores opens the stores the tests run against: a directory always, and the S3-compatible
// store ERGON_TEST_S3_URL names (make test-artifacts-s3 starts one and sets it).
func stores(t *testing.T) map[string]*Store {
	t.Helper()
	ctx := context.Background()
	out := map[string]*Store{}
	fs, err := Open(ctx, "file://"+t.TempDir()+"/artifacts")
	if err != nil {
		t.Fatal(err)
	}
	out["file"] = fs
	if u := os.Getenv("ERGON_TEST_S3_URL"); u != "" {
		s3, err := Open(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		out["s3"] = s3
	}
	for _, s := range out {
		t.Cleanup(func() { _ = s.Close() })
	}
	return out
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func TestPut(t *testing.T) {
	ctx := context.Background()
	for kind, s := range stores(t) {
		t.Run(kind, func(t *testing.T) {
			prefix := "v1/ns-" + kind + "/run/"
			data := bytes.Repeat([]byte("ergon "), 100_000)
			key := prefix + "render/-/1.pod/report.md"
			if err := s.Put(ctx, key, bytes.NewReader(data), int64(len(data)), digest(data)); err != nil {
				t.Fatal(err)
			}
			info, err := s.Stat(ctx, key)
			if err != nil || info.Size != int64(len(data)) || info.SHA256 != digest(data) {
				t.Fatalf("Stat = %+v, %v", info, err)
			}
			r, err := s.Reader(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(r)
			_ = r.Close()
			if !bytes.Equal(got, data) {
				t.Fatalf("read back %d bytes, not the %d written", len(got), len(data))
			}

			// Other bytes than announced: fewer, more, others. None is kept.
			for name, c := range map[string]struct {
				body []byte
				size int64
				sha  string
			}{
				"short": {data[:10], int64(len(data)), digest(data)},
				"long":  {data, 10, digest(data[:10])},
				"other": {bytes.ToUpper(data), int64(len(data)), digest(data)},
			} {
				bad := prefix + "render/-/1.pod/" + name
				err := s.Put(ctx, bad, bytes.NewReader(c.body), c.size, c.sha)
				if !errors.Is(err, ErrMismatch) {
					t.Errorf("%s: Put = %v, want a mismatch", name, err)
				}
				if _, err := s.Stat(ctx, bad); !errors.Is(err, ErrNotFound) {
					t.Errorf("%s: the store kept the key: %v", name, err)
				}
			}
			// The wrong bytes do not replace the right ones either.
			if err := s.Put(ctx, key, strings.NewReader("x"), 1, digest(data)); !errors.Is(err, ErrMismatch) {
				t.Errorf("Put over the artifact = %v", err)
			}
			if info, _ := s.Stat(ctx, key); info.Size != int64(len(data)) {
				t.Errorf("a refused write changed the artifact: %+v", info)
			}

			copyAndList(t, s, kind, prefix, key, data)

			other := "v1/other-ns/run/render/-/1.pod/report.md"
			if err := s.Put(ctx, other, strings.NewReader("x"), 1, digest([]byte("x"))); err != nil {
				t.Fatal(err)
			}
			keys, err := s.Keys(ctx, prefix)
			if err != nil || len(keys) != 1 || keys[0] != key {
				t.Errorf("Keys(%q) = %v, %v", prefix, keys, err)
			}
			if n, err := s.Delete(ctx, prefix); err != nil || n != 1 {
				t.Errorf("Delete = %d, %v", n, err)
			}
			if _, err := s.Stat(ctx, key); !errors.Is(err, ErrNotFound) {
				t.Errorf("after Delete: %v", err)
			}
			if _, err := s.Stat(ctx, other); err != nil {
				t.Errorf("Delete of one prefix removed another's key: %v", err)
			}
			if _, err := s.Reader(ctx, key); !errors.Is(err, ErrNotFound) {
				t.Errorf("Reader of a deleted key: %v", err)
			}
		})
	}
}

func TestOpen(t *testing.T) {
	for _, u := range []string{"gs://bucket", "http://x", "::"} {
		if _, err := Open(context.Background(), u); err == nil {
			t.Errorf("Open(%q) took it", u)
		}
	}
}

// copyAndList copies key, as a rerun takes the artifacts it reuses, and lists the Runs.
func copyAndList(t *testing.T, s *Store, kind, prefix, key string, data []byte) {
	t.Helper()
	ctx := context.Background()
	// A copy, as a rerun takes the artifacts it reuses, keeps the digest.
	copied := "v1/ns-" + kind + "/rerun/render/-/1.pod/report.md"
	if err := s.Copy(ctx, copied, key); err != nil {
		t.Fatal(err)
	}
	if info, err := s.Stat(ctx, copied); err != nil || info.SHA256 != digest(data) || info.Size != int64(len(data)) {
		t.Errorf("the copy: %+v, %v", info, err)
	}
	if err := s.Copy(ctx, copied, prefix+"none"); !errors.Is(err, ErrNotFound) {
		t.Errorf("a copy of nothing: %v", err)
	}
	runs, err := s.Runs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []RunEntry{{"ns-" + kind, "run"}, {"ns-" + kind, "rerun"}} {
		if !slices.Contains(runs, want) {
			t.Errorf("Runs = %v, without %v", runs, want)
		}
	}
	if newest, err := s.Newest(ctx, prefix); err != nil || time.Since(newest) > time.Minute {
		t.Errorf("Newest = %v, %v", newest, err)
	}
	if _, err := s.Delete(ctx, "v1/ns-"+kind+"/rerun/"); err != nil {
		t.Fatal(err)
	}
}
