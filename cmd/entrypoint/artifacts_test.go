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

package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ergon-dev/ergon/internal/artifacts"
	"github.com/ergon-dev/ergon/internal/artifacts/server"
	"github.com/ergon-dev/ergon/internal/artifacts/store"
	"github.com/ergon-dev/ergon/internal/outputs/wire"
	"github.com/ergon-dev/ergon/internal/stepcontract"
)

type scopeFunc func(token string) (*artifacts.Scope, error)

func (f scopeFunc) Scope(_ context.Context, token string) (*artifacts.Scope, error) { return f(token) }

// TestAStepReadsAndWritesItsArtifacts runs the built entrypoint and artifact binary, side by
// side as in a step pod's /ergon/bin, against the manager's artifact endpoint over a directory
// store: the inputs are there, checked, before the command starts; what it wrote is in the
// store after, and in the report.
func TestAStepReadsAndWritesItsArtifacts(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the entrypoint")
	}
	ctx := context.Background()
	bin := t.TempDir()
	for dest, pkg := range map[string]string{"entrypoint": ".", ArtifactsBinary: "../artifacts"} {
		build := exec.Command("go", "build", "-o", filepath.Join(bin, dest), pkg)
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if b, err := build.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", pkg, err, b)
		}
	}
	st, err := store.Open(ctx, "file://"+filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	input := []byte(strings.Repeat("data ", 300_000))
	sum := sha256.Sum256(input)
	inKey := artifacts.Ref{NamespaceUID: "ns", RunUID: "run", Step: "fetch", Instance: -1, Attempt: 1, PodUID: "p0", Name: "data.bin"}.Key()
	if err := st.Put(ctx, inKey, strings.NewReader(string(input)), int64(len(input)), hex.EncodeToString(sum[:])); err != nil {
		t.Fatal(err)
	}
	outRef := artifacts.Ref{NamespaceUID: "ns", RunUID: "run", Step: "render", Instance: -1, Attempt: 1, PodUID: "p1", Name: "report.md"}
	recorded := artifacts.Recorded{Key: inKey, Size: int64(len(input)), SHA256: hex.EncodeToString(sum[:])}
	signer, _ := artifacts.NewSigner()
	srv := httptest.NewTLSServer(&server.Handler{Store: st, Signer: signer, Authority: scopeFunc(func(token string) (*artifacts.Scope, error) {
		if token != "pod-token" {
			return nil, &artifacts.Refusal{Status: http.StatusUnauthorized, Reason: "Unauthorized", Message: "no"}
		}
		return &artifacts.Scope{Puts: map[string]artifacts.Ref{"report.md": outRef},
			Gets: map[string]artifacts.Recorded{"fetch/data.bin": recorded}, MaxBytes: 10 << 20, RunBytes: 20 << 20}, nil
	})})
	defer srv.Close()
	ca := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))

	run := func(t *testing.T, spec artifacts.PodSpec, endpoint, script string) *wire.Report {
		dir := t.TempDir()
		token := filepath.Join(dir, "token")
		if err := os.WriteFile(token, []byte("pod-token\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		raw, _ := json.Marshal(spec)
		cmd := exec.Command(filepath.Join(bin, "entrypoint"), "run", "--", "sh", "-c", script)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), stepcontract.EnvOutput + "=" + filepath.Join(dir, "value"),
			stepcontract.EnvTerminationLog + "=" + filepath.Join(dir, "termination-log"), "DIR=" + dir,
			stepcontract.EnvArtifactSpec + "=" + string(raw), stepcontract.EnvArtifactEndpoint + "=" + endpoint,
			stepcontract.EnvArtifactCA + "=" + ca, stepcontract.EnvArtifactToken + "=" + token}
		_ = cmd.Run()
		msg, err := os.ReadFile(filepath.Join(dir, "termination-log"))
		if err != nil {
			t.Fatal(err)
		}
		r, err := wire.ParseReport(string(msg))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	reads := artifacts.PodFile{Step: "fetch", Name: "data.bin"}
	writes := artifacts.PodFile{Name: "report.md"}

	t.Run("inputs before the command, artifacts after", func(t *testing.T) {
		in := filepath.Join(t.TempDir(), "in", "fetch", "data.bin")
		out := filepath.Join(t.TempDir(), "report.md")
		reads.Path, writes.Path = in, out
		r := run(t, artifacts.PodSpec{Get: []artifacts.PodFile{reads}, Put: []artifacts.PodFile{writes}}, srv.URL,
			`wc -c < `+in+` > `+out)
		if r.ExitCode != 0 || r.Reason != "" {
			t.Fatalf("report %+v", r)
		}
		want := []byte(strings.TrimSpace(string(mustRead(t, out))))
		if string(want) != "1500000" {
			t.Fatalf("the command read %s bytes of its input", want)
		}
		if len(r.Artifacts) != 1 || r.Artifacts[0].Name != "report.md" || r.Artifacts[0].Size != int64(len(mustRead(t, out))) {
			t.Fatalf("report's artifacts %+v", r.Artifacts)
		}
		info, err := st.Stat(ctx, outRef.Key())
		if err != nil || info.SHA256 != r.Artifacts[0].SHA256 {
			t.Fatalf("the store has %+v, %v; the report says %s", info, err, r.Artifacts[0].SHA256)
		}
	})
	t.Run("an artifact the command did not write", func(t *testing.T) {
		writes.Path = filepath.Join(t.TempDir(), "nothing")
		r := run(t, artifacts.PodSpec{Put: []artifacts.PodFile{writes}}, srv.URL, `true`)
		if r.ExitCode != 1 || r.Reason != "ArtifactMissing" || !strings.Contains(r.Message, "did not write artifact report.md") {
			t.Fatalf("report %+v", r)
		}
	})
	t.Run("an input whose bytes changed: the command does not run", func(t *testing.T) {
		recorded.SHA256 = strings.Repeat("0", 64)
		defer func() { recorded.SHA256 = hex.EncodeToString(sum[:]) }()
		marker := filepath.Join(t.TempDir(), "ran")
		reads.Path = filepath.Join(t.TempDir(), "data.bin")
		r := run(t, artifacts.PodSpec{Get: []artifacts.PodFile{reads}}, srv.URL, `touch `+marker)
		if r.ExitCode != 1 || r.Reason != "ArtifactDigestMismatch" {
			t.Fatalf("report %+v", r)
		}
		if _, err := os.Stat(marker); !os.IsNotExist(err) {
			t.Fatal("the command ran without its input")
		}
	})
	t.Run("a manager that keeps no artifacts", func(t *testing.T) {
		r := run(t, artifacts.PodSpec{Put: []artifacts.PodFile{writes}}, "", `true`)
		if r.ExitCode != 1 || r.Reason != "ArtifactStoreMissing" || !strings.Contains(r.Message, "artifacts.store") {
			t.Fatalf("report %+v", r)
		}
	})
}

func mustRead(t *testing.T, file string) []byte {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
