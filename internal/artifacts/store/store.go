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

// Package store keeps artifacts in a blob store through gocloud.dev/blob: a directory on the
// manager's volume, or S3 (or any store that speaks its API).
package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"

	// The stores a URL may name: a directory (the embedded default) and S3 or any store that
	// speaks its API.
	_ "gocloud.dev/blob/fileblob"
	_ "gocloud.dev/blob/s3blob"
)

// metaSHA256 is the blob metadata key of an artifact's digest.
const metaSHA256 = "sha256"

// Store is the blob store artifacts live in, over gocloud.dev/blob.
type Store struct {
	bucket *blob.Bucket
	// direct says a step pod reaches the store itself with presigned URLs (S3); otherwise it
	// goes through the manager's endpoint with a Grant (a directory).
	direct bool
	desc   string
}

// Open opens the store a URL names:
//
//	file:///var/lib/ergon/artifacts                 a directory (created when missing)
//	s3://BUCKET?region=R&endpoint=URL&use_path_style=true
//
// S3's credentials come from the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY), as
// the AWS SDK reads them.
func Open(ctx context.Context, rawURL string) (*Store, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("the artifact store URL: %w", err)
	}
	s := &Store{desc: u.Scheme + "://" + u.Host + u.Path}
	switch u.Scheme {
	case "file":
		q := u.Query()
		q.Set("create_dir", "true")
		// Next to the artifact, not in $TMPDIR: a rename does not cross volumes.
		q.Set("no_tmp_dir", "true")
		q.Set("dir_file_mode", "0700")
		u.RawQuery = q.Encode()
	case "s3":
		s.direct = true
	default:
		return nil, fmt.Errorf("the artifact store URL %q: the scheme must be file or s3", s.desc)
	}
	if s.bucket, err = blob.OpenBucket(ctx, u.String()); err != nil {
		return nil, fmt.Errorf("opening the artifact store %s: %w", s.desc, err)
	}
	return s, nil
}

// String names the store without its query (where nothing secret is either).
func (s *Store) String() string { return s.desc }

// Direct says step pods reach the store itself, with URLs from PresignedURL.
func (s *Store) Direct() bool { return s.direct }

// Close closes the store.
func (s *Store) Close() error { return s.bucket.Close() }

// ErrMismatch is wrapped by the error of a write whose bytes are not the ones announced.
var ErrMismatch = errors.New("the bytes are not the ones announced")

// Put writes exactly size bytes with the digest sha256 (hex) from r to key. Anything else (fewer
// or more bytes, another digest) aborts the write, so the key never holds them. It streams:
// the store's writer buffers a part at most.
func (s *Store) Put(ctx context.Context, key string, r io.Reader, size int64, sha string) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := s.bucket.NewWriter(ctx, key, &blob.WriterOptions{
		ContentType:        "application/octet-stream",
		ContentDisposition: "attachment",
		Metadata:           map[string]string{metaSHA256: sha},
	})
	if err != nil {
		return err
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(w, h), io.LimitReader(r, size+1))
	switch {
	case err != nil:
	case n != size:
		err = fmt.Errorf("%w: %d bytes where %d were announced", ErrMismatch, n, size)
	case hex.EncodeToString(h.Sum(nil)) != sha:
		err = fmt.Errorf("%w: their sha256 is %s, not %s", ErrMismatch, hex.EncodeToString(h.Sum(nil)), sha)
	}
	if err != nil {
		cancel() // before Close: the write is aborted
		_ = w.Close()
		return err
	}
	return w.Close()
}

// Info is what the store says of an artifact.
type Info struct {
	Size   int64
	SHA256 string
}

// ErrNotFound is wrapped by the error of a key the store does not have.
var ErrNotFound = errors.New("no such artifact in the store")

// Stat says what the store has at key.
func (s *Store) Stat(ctx context.Context, key string) (Info, error) {
	a, err := s.bucket.Attributes(ctx, key)
	if err != nil {
		return Info{}, s.wrap(key, err)
	}
	return Info{Size: a.Size, SHA256: a.Metadata[metaSHA256]}, nil
}

// Reader opens key for reading.
func (s *Store) Reader(ctx context.Context, key string) (io.ReadCloser, error) {
	r, err := s.bucket.NewReader(ctx, key, nil)
	if err != nil {
		return nil, s.wrap(key, err)
	}
	return r, nil
}

// Delete deletes every key under prefix and says how many it deleted; a key already gone is
// no error.
func (s *Store) Delete(ctx context.Context, prefix string) (int, error) {
	it := s.bucket.List(&blob.ListOptions{Prefix: prefix})
	n := 0
	for {
		obj, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		if obj.IsDir {
			continue
		}
		if err := s.bucket.Delete(ctx, obj.Key); err != nil && gcerrors.Code(err) != gcerrors.NotFound {
			return n, err
		}
		n++
	}
}

// Keys lists the keys under prefix.
func (s *Store) Keys(ctx context.Context, prefix string) ([]string, error) {
	var keys []string
	it := s.bucket.List(&blob.ListOptions{Prefix: prefix})
	for {
		obj, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			return keys, nil
		}
		if err != nil {
			return keys, err
		}
		if !obj.IsDir && !strings.HasSuffix(obj.Key, ".attrs") {
			keys = append(keys, obj.Key)
		}
	}
}

func (s *Store) wrap(key string, err error) error {
	if gcerrors.Code(err) == gcerrors.NotFound {
		return fmt.Errorf("%w: %s", ErrNotFound, key)
	}
	return err
}

// Presign returns a URL a step pod writes (put) or reads (get) key with, for ttl, and the
// headers it must send: only for a Direct store. A put's URL signs its length and metadata
// (the digest, as Put records it), so the pod writes exactly the size it announced; readers
// check the digest.
func (s *Store) Presign(ctx context.Context, put bool, key string, size int64, sha string,
	ttl time.Duration) (string, map[string]string, error) {
	if !s.direct {
		return "", nil, errors.New("the store has no presigned URLs: step pods go through the manager")
	}
	opts := &blob.SignedURLOptions{Method: http.MethodGet, Expiry: ttl}
	var headers map[string]string
	if put {
		opts.Method = http.MethodPut
		headers = map[string]string{"x-amz-meta-" + metaSHA256: sha}
		opts.BeforeSign = func(as func(any) bool) error {
			var in *s3.PutObjectInput
			if !as(&in) {
				return errors.New("not an S3 store")
			}
			in.Metadata = map[string]string{metaSHA256: sha}
			in.ContentLength = &size
			return nil
		}
	}
	u, err := s.bucket.SignedURL(ctx, key, opts)
	return u, headers, err
}

// RunEntry is one Run's artifacts in the store: the keys under artifacts.RunPrefix.
type RunEntry struct {
	NamespaceUID, RunUID string
}

// Runs lists the Runs that have artifacts in the store, a level of the key tree at a time.
func (s *Store) Runs(ctx context.Context) ([]RunEntry, error) {
	namespaces, err := s.dirs(ctx, "v1/")
	if err != nil {
		return nil, err
	}
	var out []RunEntry
	for _, ns := range namespaces {
		runs, err := s.dirs(ctx, "v1/"+ns+"/")
		if err != nil {
			return nil, err
		}
		for _, run := range runs {
			out = append(out, RunEntry{NamespaceUID: ns, RunUID: run})
		}
	}
	return out, nil
}

// dirs lists the names of the "directories" right under prefix.
func (s *Store) dirs(ctx context.Context, prefix string) ([]string, error) {
	var out []string
	it := s.bucket.List(&blob.ListOptions{Prefix: prefix, Delimiter: "/"})
	for {
		obj, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if obj.IsDir {
			out = append(out, strings.TrimSuffix(strings.TrimPrefix(obj.Key, prefix), "/"))
		}
	}
}

// Newest is when the newest key under prefix was written; zero when there is none.
func (s *Store) Newest(ctx context.Context, prefix string) (time.Time, error) {
	var newest time.Time
	it := s.bucket.List(&blob.ListOptions{Prefix: prefix})
	for {
		obj, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			return newest, nil
		}
		if err != nil {
			return newest, err
		}
		if obj.ModTime.After(newest) {
			newest = obj.ModTime
		}
	}
}

// Copy copies the artifact at src to dst, in the store (S3 copies it server side).
func (s *Store) Copy(ctx context.Context, dst, src string) error {
	return s.wrap(src, s.bucket.Copy(ctx, dst, src, nil))
}
