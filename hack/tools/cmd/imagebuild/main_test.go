package main

import (
	"archive/tar"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// files returns the image's single layer as path -> header, and the file contents.
func files(t *testing.T, out, tag string) (map[string]*tar.Header, map[string]string, *imageConfig) {
	t.Helper()
	ref, err := name.NewTag(tag)
	if err != nil {
		t.Fatal(err)
	}
	img, err := tarball.ImageFromPath(out, &ref)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers: %v, %d", err, len(layers))
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	hdrs, data := map[string]*tar.Header{}, map[string]string{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		p := "/" + strings.TrimSuffix(h.Name, "/")
		hdrs[p] = h
		b, _ := io.ReadAll(tr)
		data[p] = string(b)
	}
	return hdrs, data, &imageConfig{os: cf.OS, arch: cf.Architecture, user: cf.Config.User,
		entrypoint: cf.Config.Entrypoint, env: cf.Config.Env}
}

type imageConfig struct {
	os, arch, user string
	entrypoint     []string
	env            []string
}

func TestBinaryImage(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "manager")
	if err := os.WriteFile(bin, []byte("#!fake binary\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	ca := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(ca, []byte("-----BEGIN CERTIFICATE-----\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "image.tar")
	o := options{binary: bin, entrypoint: "/manager", caCerts: ca, user: "65532:65532", workdir: "/",
		out: out, tags: listFlag{"ergon/manager:dev"}}
	if err := run(o); err != nil {
		t.Fatal(err)
	}
	hdrs, data, cfg := files(t, out, "ergon/manager:dev")
	if cfg.os != "linux" || cfg.arch == "" || cfg.user != "65532:65532" ||
		len(cfg.entrypoint) != 1 || cfg.entrypoint[0] != "/manager" {
		t.Errorf("config: %+v", cfg)
	}
	if h := hdrs["/manager"]; h == nil || h.Mode != 0o755 || data["/manager"] != "#!fake binary\n" {
		t.Errorf("/manager: %+v", h)
	}
	if !strings.Contains(data["/etc/ssl/certs/ca-certificates.crt"], "BEGIN CERTIFICATE") {
		t.Error("no CA certificates")
	}
	if !strings.Contains(data["/etc/passwd"], "nonroot:x:65532:65532") {
		t.Errorf("/etc/passwd: %q", data["/etc/passwd"])
	}
	if h := hdrs["/tmp"]; h == nil || h.Typeflag != tar.TypeDir || h.Mode != 0o1777 {
		t.Errorf("/tmp: %+v", h)
	}
	// Reproducible: the same inputs give the same bytes.
	out2 := filepath.Join(dir, "image2.tar")
	o.out = out2
	if err := run(o); err != nil {
		t.Fatal(err)
	}
	a, _ := os.ReadFile(out)
	b, _ := os.ReadFile(out2)
	if string(a) != string(b) {
		t.Error("two builds of the same image differ")
	}
}

func TestBusyboxImage(t *testing.T) {
	const bb = "/bin/busybox"
	if _, err := os.Stat(bb); err != nil {
		t.Skip("no busybox on this machine")
	}
	out := filepath.Join(t.TempDir(), "busybox.tar")
	o := options{busybox: bb, user: "65532:65532", workdir: "/", out: out, tags: listFlag{"ergon/busybox:dev"}}
	if err := run(o); err != nil {
		t.Fatal(err)
	}
	hdrs, _, cfg := files(t, out, "ergon/busybox:dev")
	if cfg.entrypoint[0] != "/bin/sh" {
		t.Errorf("entrypoint %v", cfg.entrypoint)
	}
	for _, p := range []string{"/bin/sh", "/bin/ls", "/usr/bin/nslookup"} {
		if h := hdrs[p]; h == nil || h.Typeflag != tar.TypeSymlink || h.Linkname != "/bin/busybox" {
			t.Errorf("%s: %+v", p, h)
		}
	}
}

func TestDirectoryImage(t *testing.T) {
	dir := t.TempDir()
	app := filepath.Join(dir, "app")
	for p, content := range map[string]string{"server": "#!fake server\n", "data/greeting.txt": "hello\n"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(app, p)), 0o750); err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if p == "server" {
			mode = 0o755
		}
		if err := os.WriteFile(filepath.Join(app, p), []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("data/greeting.txt", filepath.Join(app, "greeting")); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "app.tar")
	o := options{dirs: listFlag{app + ":/app"}, entrypoint: "/app/server", user: "65532", workdir: "/app",
		out: out, tags: listFlag{"my/app:1.0", "example.org/app:1.0"}}
	if err := run(o); err != nil {
		t.Fatal(err)
	}
	for _, tag := range o.tags {
		hdrs, data, cfg := files(t, out, tag)
		if len(cfg.entrypoint) != 1 || cfg.entrypoint[0] != "/app/server" {
			t.Errorf("%s: entrypoint %v", tag, cfg.entrypoint)
		}
		if h := hdrs["/app/server"]; h == nil || h.Mode != 0o755 || data["/app/server"] != "#!fake server\n" {
			t.Errorf("%s: /app/server: %+v", tag, h)
		}
		if h := hdrs["/app/data/greeting.txt"]; h == nil || h.Mode != 0o644 || data["/app/data/greeting.txt"] != "hello\n" {
			t.Errorf("%s: /app/data/greeting.txt: %+v", tag, h)
		}
		if h := hdrs["/app/data"]; h == nil || h.Typeflag != tar.TypeDir || h.Mode != 0o750 {
			t.Errorf("%s: /app/data: %+v", tag, h)
		}
		if h := hdrs["/app/greeting"]; h == nil || h.Typeflag != tar.TypeSymlink || h.Linkname != "data/greeting.txt" {
			t.Errorf("%s: /app/greeting: %+v", tag, h)
		}
	}
	// A file where a directory is wanted, or a relative destination, is refused.
	for _, d := range []string{filepath.Join(app, "server") + ":/app", app + ":app", app} {
		o.dirs = listFlag{d}
		if err := run(o); err == nil || !strings.Contains(err.Error(), "--dir") {
			t.Errorf("--dir %s: err = %v", d, err)
		}
	}
}

func TestRejectsBadFlags(t *testing.T) {
	for _, o := range []options{
		{out: "x.tar"},
		{out: "x.tar", tags: listFlag{"a:b"}},
		{out: "x.tar", tags: listFlag{"a:b"}, binary: "a", busybox: "b"},
	} {
		if err := run(o); err == nil {
			t.Errorf("%+v: no error", o)
		}
	}
}

func TestRejectsDynamicBinary(t *testing.T) {
	const dyn = "/bin/sh" // dynamically linked on Debian
	if err := checkStatic(dyn); err == nil {
		t.Skip(dyn + " is not a dynamically linked ELF binary here")
	}
	o := options{binary: dyn, user: "65532", out: filepath.Join(t.TempDir(), "x.tar"), tags: listFlag{"a:b"}}
	if err := run(o); err == nil || !strings.Contains(err.Error(), "CGO_ENABLED=0") {
		t.Errorf("err = %v", err)
	}
	if err := checkStatic("/bin/busybox"); err != nil {
		if _, statErr := os.Stat("/bin/busybox"); statErr == nil {
			t.Errorf("busybox-static refused: %v", err)
		}
	}
}
