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

package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ergon-dev/ergon/internal/artifacts"
	"github.com/ergon-dev/ergon/internal/artifacts/store"
)

// scopes is the test's Authority: the scope of each token.
type scopes map[string]*artifacts.Scope

func (s scopes) Scope(_ context.Context, token string) (*artifacts.Scope, error) {
	if sc, ok := s[token]; ok {
		return sc, nil
	}
	return nil, &artifacts.Refusal{Status: http.StatusUnauthorized, Reason: "Unauthorized", Message: "not a step pod's token"}
}

type fixture struct {
	store  *store.Store
	srv    *httptest.Server
	dir    string
	now    time.Time
	client func(token string) *artifacts.Client
}

func setup(t *testing.T, auth scopes) *fixture {
	t.Helper()
	f := &fixture{dir: t.TempDir(), now: time.Now()}
	var err error
	if f.store, err = store.Open(context.Background(), "file://"+f.dir+"/store"); err != nil {
		t.Fatal(err)
	}
	signer, err := artifacts.NewSigner()
	if err != nil {
		t.Fatal(err)
	}
	f.srv = httptest.NewTLSServer(&Handler{Store: f.store, Signer: signer, Authority: auth, Now: func() time.Time { return f.now }})
	t.Cleanup(f.srv.Close)
	ca := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: f.srv.Certificate().Raw}))
	f.client = func(token string) *artifacts.Client {
		file := filepath.Join(t.TempDir(), "token")
		if err := os.WriteFile(file, []byte(token+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		c, err := artifacts.NewClient(f.srv.URL, ca, "", file)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	return f
}

func write(t *testing.T, dir, name string, data []byte) (string, int64, string) {
	t.Helper()
	file := filepath.Join(dir, name)
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	return file, int64(len(data)), hex.EncodeToString(sum[:])
}

func reason(err error) string {
	if f, ok := errors.AsType[*artifacts.Failure](err); ok {
		return f.Reason
	}
	return ""
}

func TestPutThenGet(t *testing.T) {
	ctx := context.Background()
	ref := artifacts.Ref{NamespaceUID: "ns", RunUID: "run", Step: "render", Instance: -1, Attempt: 1, PodUID: "pod-a", Name: "big.bin"}
	producer := &artifacts.Scope{Puts: map[string]artifacts.Ref{"big.bin": ref}, MaxBytes: 64 << 20, RunBytes: 100 << 20}
	auth := scopes{"producer": producer}
	f := setup(t, auth)
	data := bytes.Repeat([]byte{0, 1, 2, 3, 255}, 4<<20) // 20 MiB
	file, size, sum := write(t, t.TempDir(), "big.bin", data)

	c := f.client("producer")
	resp, err := c.Grants(ctx, artifacts.GrantsRequest{Put: []artifacts.PutRequest{{Name: "big.bin", Size: size, SHA256: sum}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Put) != 1 || !strings.HasPrefix(resp.Put[0].URL, artifacts.PathBlobs) {
		t.Fatalf("grants = %+v", resp)
	}
	if err := c.Upload(ctx, resp.Put[0], file); err != nil {
		t.Fatal(err)
	}
	info, err := f.store.Stat(ctx, ref.Key())
	if err != nil || info.Size != size || info.SHA256 != sum {
		t.Fatalf("the store has %+v, %v", info, err)
	}

	// The consumer may read exactly what its Run recorded.
	auth["consumer"] = &artifacts.Scope{Gets: map[string]artifacts.Recorded{"render/big.bin": {Key: ref.Key(), Size: size, SHA256: sum}},
		MaxBytes: 1, RunBytes: 1}
	cc := f.client("consumer")
	got, err := cc.Grants(ctx, artifacts.GrantsRequest{Get: []artifacts.GetRequest{{Step: "render", Name: "big.bin"}}})
	if err != nil {
		t.Fatal(err)
	}
	dest := filepath.Join(t.TempDir(), "in", "render", "big.bin")
	if err := cc.Download(ctx, got.Get[0], dest); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(dest); !bytes.Equal(b, data) {
		t.Fatalf("downloaded %d bytes, not the %d uploaded", len(b), len(data))
	}

	// A grant to read cannot write, and a grant to write cannot read.
	req, _ := http.NewRequest(http.MethodPut, f.srv.URL+got.Get[0].URL, strings.NewReader("x"))
	if r, err := f.srv.Client().Do(req); err != nil || r.StatusCode != http.StatusForbidden {
		t.Errorf("PUT with a get grant: %v %v", r.Status, err)
	}
	if r, err := f.srv.Client().Get(f.srv.URL + resp.Put[0].URL); err != nil || r.StatusCode != http.StatusForbidden {
		t.Errorf("GET with a put grant: %v %v", r.Status, err)
	}

	// The store's bytes changed behind the Run's back: the reader sees it, and keeps nothing.
	if err := f.store.Put(ctx, ref.Key(), bytes.NewReader(data[:size-1]), size-1, digestOf(data[:size-1])); err != nil {
		t.Fatal(err)
	}
	dest = filepath.Join(filepath.Dir(dest), "again")
	if err := cc.Download(ctx, got.Get[0], dest); reason(err) != "ArtifactDigestMismatch" {
		t.Errorf("Download of changed bytes = %v", err)
	}
	if _, err := os.Stat(dest); !os.IsNotExist(err) {
		t.Errorf("the changed bytes were left at %s", dest)
	}

	// A grant past its time is refused.
	f.now = f.now.Add(DefaultTTL + time.Second)
	if err := c.Upload(ctx, resp.Put[0], file); reason(err) != "Unauthorized" {
		t.Errorf("Upload with an expired grant = %v", err)
	}
}

func digestOf(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func TestRefusals(t *testing.T) {
	ctx := context.Background()
	ref := artifacts.Ref{NamespaceUID: "ns", RunUID: "run", Step: "render", Instance: -1, Attempt: 1, PodUID: "pod-a", Name: "a.txt"}
	auth := scopes{"step": {Puts: map[string]artifacts.Ref{"a.txt": ref, "b.txt": ref}, MaxBytes: 10, RunBytes: 15, RunBytesKept: 2}}
	f := setup(t, auth)
	c := f.client("step")
	sum := strings.Repeat("0", 64)
	for _, tc := range []struct {
		name, reason string
		req          artifacts.GrantsRequest
	}{
		{"undeclared", "ArtifactNotDeclared", artifacts.GrantsRequest{Put: []artifacts.PutRequest{{Name: "c.txt", Size: 1, SHA256: sum}}}},
		{"too large", "ArtifactTooLarge", artifacts.GrantsRequest{Put: []artifacts.PutRequest{{Name: "a.txt", Size: 11, SHA256: sum}}}},
		{"run limit", "ArtifactTooLarge", artifacts.GrantsRequest{Put: []artifacts.PutRequest{
			{Name: "a.txt", Size: 7, SHA256: sum}, {Name: "b.txt", Size: 7, SHA256: sum}}}},
		{"bad digest", "BadRequest", artifacts.GrantsRequest{Put: []artifacts.PutRequest{{Name: "a.txt", Size: 1, SHA256: "zz"}}}},
		{"not an input", "InputArtifactMissing", artifacts.GrantsRequest{Get: []artifacts.GetRequest{{Step: "other", Name: "a.txt"}}}},
	} {
		if _, err := c.Grants(ctx, tc.req); reason(err) != tc.reason {
			t.Errorf("%s: Grants = %v, want %s", tc.name, err, tc.reason)
		}
	}
	if _, err := f.client("stranger").Grants(ctx, artifacts.GrantsRequest{}); reason(err) != "Unauthorized" {
		t.Errorf("an unknown token: %v", err)
	}

	// An upload of other bytes than announced fails, and the store keeps none.
	dir := t.TempDir()
	file, size, _ := write(t, dir, "a.txt", []byte("hello"))
	resp, err := c.Grants(ctx, artifacts.GrantsRequest{Put: []artifacts.PutRequest{{Name: "a.txt", Size: size, SHA256: digestOf([]byte("HELLO"))}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Upload(ctx, resp.Put[0], file); reason(err) != "ArtifactDigestMismatch" {
		t.Errorf("Upload of other bytes = %v", err)
	}
	if _, err := f.store.Stat(ctx, ref.Key()); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the store kept bytes that did not match: %v", err)
	}
	// A forged path is refused.
	for _, path := range []string{artifacts.PathBlobs + "x.y", artifacts.PathBlobs, "/artifacts/v1/other"} {
		r, err := f.srv.Client().Get(f.srv.URL + path)
		if err != nil || r.StatusCode/100 != 4 {
			t.Errorf("GET %s: %v %v", path, r.Status, err)
		}
	}
}

// TestPresignedS3 runs against the S3-compatible server ERGON_TEST_S3_URL names (make
// test-artifacts-s3 starts SeaweedFS for it): step pods get presigned URLs of the store itself,
// which write exactly the bytes announced under exactly the key granted, and nothing else.
func TestPresignedS3(t *testing.T) {
	u := os.Getenv("ERGON_TEST_S3_URL")
	if u == "" {
		t.Skip("ERGON_TEST_S3_URL is not set: make test-artifacts-s3 runs this against a real S3 server")
	}
	ctx := context.Background()
	st, err := store.Open(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	signer, _ := artifacts.NewSigner()
	ref := artifacts.Ref{NamespaceUID: "ns-s3", RunUID: "run", Step: "render", Instance: -1, Attempt: 1, PodUID: "pod", Name: "a.bin"}
	auth := scopes{"step": {Puts: map[string]artifacts.Ref{"a.bin": ref}, MaxBytes: 64 << 20, RunBytes: 64 << 20}}
	srv := httptest.NewTLSServer(&Handler{Store: st, Signer: signer, Authority: auth})
	defer srv.Close()
	ca := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))
	client := func(token string) *artifacts.Client {
		file := filepath.Join(t.TempDir(), "token")
		_ = os.WriteFile(file, []byte(token), 0o600)
		c, err := artifacts.NewClient(srv.URL, ca, "", file)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	data := bytes.Repeat([]byte("s3 "), 3<<20)
	file, size, sum := write(t, t.TempDir(), "a.bin", data)
	c := client("step")
	resp, err := c.Grants(ctx, artifacts.GrantsRequest{Put: []artifacts.PutRequest{{Name: "a.bin", Size: size, SHA256: sum}}})
	if err != nil {
		t.Fatal(err)
	}
	put := resp.Put[0]
	if !strings.HasPrefix(put.URL, "http://127.0.0.1:") || !strings.Contains(put.URL, "X-Amz-Signature=") {
		t.Fatalf("not a presigned URL of the store: %s", put.URL)
	}

	// Other bytes than announced: the store refuses a length the URL did not sign.
	short, _, _ := write(t, t.TempDir(), "short", data[:100])
	if err := c.Upload(ctx, put, short); err == nil {
		t.Error("the store took 100 bytes on a URL signed for more")
	}
	// The URL signs its key: another key is refused.
	other := strings.Replace(put.URL, "/a.bin", "/b.bin", 1)
	req, _ := http.NewRequest(http.MethodPut, other, bytes.NewReader(data))
	req.ContentLength = size
	for k, v := range put.Headers {
		req.Header.Set(k, v)
	}
	if r, err := http.DefaultClient.Do(req); err == nil && r.StatusCode/100 == 2 {
		t.Error("the store took a write under another key than the one granted")
	}

	if err := c.Upload(ctx, put, file); err != nil {
		t.Fatal(err)
	}
	info, err := st.Stat(ctx, ref.Key())
	if err != nil || info.Size != size || info.SHA256 != sum {
		t.Fatalf("the store has %+v, %v", info, err)
	}
	// Without a signature, nothing is read.
	plain, _, _ := strings.Cut(put.URL, "?")
	if r, err := http.Get(plain); err == nil && r.StatusCode/100 == 2 {
		t.Error("the store served the artifact without a signature")
	}

	auth["reader"] = &artifacts.Scope{Gets: map[string]artifacts.Recorded{"render/a.bin": {Key: ref.Key(), Size: size, SHA256: sum}}}
	got, err := client("reader").Grants(ctx, artifacts.GrantsRequest{Get: []artifacts.GetRequest{{Step: "render", Name: "a.bin"}}})
	if err != nil {
		t.Fatal(err)
	}
	dest := filepath.Join(t.TempDir(), "a.bin")
	if err := client("reader").Download(ctx, got.Get[0], dest); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(dest); !bytes.Equal(b, data) {
		t.Fatal("read back other bytes")
	}
	if _, err := st.Delete(ctx, artifacts.RunPrefix(ref.NamespaceUID, ref.RunUID)); err != nil {
		t.Fatal(err)
	}
}
