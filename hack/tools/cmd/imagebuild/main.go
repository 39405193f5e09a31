// Command imagebuild assembles small container images without a Docker engine and writes them
// as a docker-archive tarball that `ctr images import` (and `docker load`) accept.
//
// An image is one layer: a minimal root filesystem (/etc/passwd and /etc/group with a non-root
// user, /tmp, optional CA certificates) plus the files asked for. Timestamps are fixed, so the
// same inputs give the same image digest.
//
//	# a static binary as the entrypoint, run as 65532:65532, with CA certificates
//	imagebuild --binary bin/manager --entrypoint /manager --tag ergon/manager:dev --out manager.tar
//
//	# a busybox tool image: /bin/busybox plus one symlink per applet, /bin/sh as entrypoint
//	imagebuild --busybox /bin/busybox --tag ergon/busybox:1.35.0 --out busybox.tar
//
//	# a directory of yours on top of the busybox tool image, e.g. scripts a step runs
//	imagebuild --busybox /bin/busybox --dir ./scripts:/scripts --tag my/tools:1.0 --out tools.tar
//
//	# a directory alone, with a static binary of its own as the entrypoint
//	imagebuild --dir ./app:/app --entrypoint /app/server --tag my/app:1.0 --out app.tar
//
// Several --tag flags give one image several names. --add SRC:DST adds a further file,
// --dir SRC:DST a directory tree (files, folders and symbolic links, with their modes).
package main

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// epoch is the modification time of every file, so that images are reproducible.
var epoch = time.Unix(0, 0).UTC()

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

type options struct {
	binary     string
	entrypoint string
	busybox    string
	caCerts    string
	user       string
	workdir    string
	out        string
	tags       listFlag
	adds       listFlag
	dirs       listFlag
	envs       listFlag
	args       listFlag
	labels     listFlag
}

func main() {
	var o options
	flag.StringVar(&o.binary, "binary", "", "static binary to put into the image at --entrypoint")
	flag.StringVar(&o.entrypoint, "entrypoint", "", "path of --binary in the image (default /<its file name>)")
	flag.StringVar(&o.busybox, "busybox", "", "static busybox binary: installs /bin/busybox and a symlink per applet")
	flag.StringVar(&o.caCerts, "ca-certs", "/etc/ssl/certs/ca-certificates.crt",
		"CA bundle to install as /etc/ssl/certs/ca-certificates.crt (empty: none)")
	flag.StringVar(&o.user, "user", "65532:65532", "user:group the image runs as")
	flag.StringVar(&o.workdir, "workdir", "/", "working directory")
	flag.StringVar(&o.out, "out", "", "docker-archive tarball to write")
	flag.Var(&o.tags, "tag", "image name, e.g. ergon/manager:dev (repeatable)")
	flag.Var(&o.adds, "add", "extra file SRC:DST[:MODE] (repeatable; MODE octal, default that of SRC)")
	flag.Var(&o.dirs, "dir", "directory tree SRC:DST to copy in (repeatable; modes and symbolic links kept)")
	flag.Var(&o.envs, "env", "environment variable K=V (repeatable)")
	flag.Var(&o.args, "arg", "default argument after the entrypoint (repeatable)")
	flag.Var(&o.labels, "label", "label K=V (repeatable)")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "imagebuild:", err)
		os.Exit(1)
	}
}

func run(o options) error {
	if o.out == "" || len(o.tags) == 0 {
		return errors.New("--out and at least one --tag are required")
	}
	if o.binary != "" && o.busybox != "" {
		return errors.New("give one of --binary or --busybox, not both")
	}
	if o.binary == "" && o.busybox == "" && len(o.dirs) == 0 {
		return errors.New("give --binary, --busybox or --dir")
	}
	uid, gid, err := parseUser(o.user)
	if err != nil {
		return err
	}

	layout := newTree()
	layout.dir("/etc", 0o755)
	layout.dir("/tmp", 0o1777)
	layout.dir("/home/nonroot", 0o755)
	layout.chown("/home/nonroot", 65532, 65532)
	layout.file("/etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/sbin/nologin\n"+
		"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"+
		"nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n"))
	layout.file("/etc/group", 0o644, []byte("root:x:0:\nnonroot:x:65532:\nnogroup:x:65534:\n"))
	layout.file("/etc/nsswitch.conf", 0o644, []byte("hosts: files dns\n"))
	if o.caCerts != "" {
		pem, err := os.ReadFile(o.caCerts)
		if err != nil {
			return fmt.Errorf("CA certificates: %w", err)
		}
		layout.file("/etc/ssl/certs/ca-certificates.crt", 0o644, pem)
	}

	var entrypoint []string
	env := []string{"PATH=/usr/local/bin:/usr/bin:/bin"}
	if o.binary != "" {
		if err := checkStatic(o.binary); err != nil {
			return err
		}
		ep := o.entrypoint
		if ep == "" {
			ep = "/" + path.Base(o.binary)
		}
		if err := layout.copyFile(o.binary, ep, 0o755); err != nil {
			return err
		}
		entrypoint = []string{ep}
	} else if o.busybox != "" {
		if err := layout.copyFile(o.busybox, "/bin/busybox", 0o755); err != nil {
			return err
		}
		applets, err := busyboxApplets(o.busybox)
		if err != nil {
			return err
		}
		for _, a := range applets {
			if a == "/bin/busybox" {
				continue
			}
			layout.symlink(a, "/bin/busybox")
		}
		entrypoint = []string{"/bin/sh"}
		if o.entrypoint != "" {
			entrypoint = []string{o.entrypoint}
		}
	} else if o.entrypoint != "" {
		entrypoint = []string{o.entrypoint}
	}
	for _, d := range o.dirs {
		src, dst, ok := strings.Cut(d, ":")
		if !ok || src == "" || dst == "" {
			return fmt.Errorf("--dir %q: want SRC:DST", d)
		}
		if err := layout.copyDir(src, dst); err != nil {
			return fmt.Errorf("--dir %q: %w", d, err)
		}
	}
	for _, a := range o.adds {
		parts := strings.Split(a, ":")
		if len(parts) < 2 || len(parts) > 3 {
			return fmt.Errorf("--add %q: want SRC:DST[:MODE]", a)
		}
		mode := int64(-1)
		if len(parts) == 3 {
			if _, err := fmt.Sscanf(parts[2], "%o", &mode); err != nil {
				return fmt.Errorf("--add %q: mode: %w", a, err)
			}
		}
		if err := layout.copyFile(parts[0], parts[1], mode); err != nil {
			return err
		}
	}
	env = append(env, o.envs...)
	if o.caCerts != "" {
		env = append(env, "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt")
	}

	layerTar, err := layout.tar()
	if err != nil {
		return err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	})
	if err != nil {
		return err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cf = cf.DeepCopy()
	cf.OS = "linux"
	cf.Architecture = runtime.GOARCH
	cf.Created = v1.Time{Time: epoch}
	cf.Config.Entrypoint = entrypoint
	cf.Config.Cmd = o.args
	cf.Config.Env = env
	cf.Config.User = fmt.Sprintf("%d:%d", uid, gid)
	cf.Config.WorkingDir = o.workdir
	if len(o.labels) > 0 {
		cf.Config.Labels = map[string]string{}
		for _, l := range o.labels {
			k, v, _ := strings.Cut(l, "=")
			cf.Config.Labels[k] = v
		}
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return err
	}

	refs := map[name.Reference]v1.Image{}
	for _, t := range o.tags {
		tag, err := name.NewTag(t)
		if err != nil {
			return fmt.Errorf("--tag %q: %w", t, err)
		}
		refs[tag] = img
	}
	tmp := o.out + ".tmp"
	if err := tarball.MultiRefWriteToFile(tmp, refs); err != nil {
		return err
	}
	if err := os.Rename(tmp, o.out); err != nil {
		return err
	}
	d, _ := img.Digest()
	fmt.Fprintf(os.Stderr, "imagebuild: wrote %s (%s) to %s\n", strings.Join(o.tags, ", "), d, o.out)
	return nil
}

// checkStatic refuses a dynamically linked ELF binary: the image has no C library to load it
// with (build Go programs with CGO_ENABLED=0). Anything that is not ELF is let through.
func checkStatic(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is dynamically linked and would not start in the image: "+
				"build it statically (for Go: CGO_ENABLED=0 go build ...)", path)
		}
	}
	return nil
}

func parseUser(s string) (int, int, error) {
	var uid, gid int
	if _, err := fmt.Sscanf(s, "%d:%d", &uid, &gid); err != nil {
		if _, err := fmt.Sscanf(s, "%d", &uid); err != nil {
			return 0, 0, fmt.Errorf("--user %q: want UID[:GID] numbers", s)
		}
		gid = uid
	}
	return uid, gid, nil
}

// busyboxApplets asks the busybox binary for the full paths of its applets.
func busyboxApplets(bin string) ([]string, error) {
	out, err := exec.Command(bin, "--list-full").Output()
	if err != nil {
		return nil, fmt.Errorf("%s --list-full: %w", bin, err)
	}
	var applets []string
	for _, l := range strings.Fields(string(out)) {
		applets = append(applets, "/"+strings.TrimPrefix(l, "/"))
	}
	return applets, nil
}

// tree is an in-memory file tree that becomes one tar layer.
type tree struct {
	entries map[string]*tar.Header
	data    map[string][]byte
}

func newTree() *tree {
	return &tree{entries: map[string]*tar.Header{}, data: map[string][]byte{}}
}

func (t *tree) parents(p string) {
	for d := path.Dir(p); d != "/" && d != "."; d = path.Dir(d) {
		if _, ok := t.entries[d]; !ok {
			t.dir(d, 0o755)
		}
	}
}

func (t *tree) dir(p string, mode int64) {
	t.parents(p)
	t.entries[p] = &tar.Header{Typeflag: tar.TypeDir, Name: p, Mode: mode, ModTime: epoch}
}

func (t *tree) chown(p string, uid, gid int) {
	t.entries[p].Uid, t.entries[p].Gid = uid, gid
}

func (t *tree) file(p string, mode int64, data []byte) {
	t.parents(p)
	t.entries[p] = &tar.Header{Typeflag: tar.TypeReg, Name: p, Mode: mode, Size: int64(len(data)), ModTime: epoch}
	t.data[p] = data
}

func (t *tree) symlink(p, target string) {
	t.parents(p)
	t.entries[p] = &tar.Header{Typeflag: tar.TypeSymlink, Name: p, Linkname: target, Mode: 0o777, ModTime: epoch}
}

// copyFile adds the host file src at dst; mode < 0 keeps src's permission bits.
func (t *tree) copyFile(src, dst string, mode int64) error {
	if !path.IsAbs(dst) {
		return fmt.Errorf("%s: destination must be an absolute path", dst)
	}
	st, err := os.Stat(src)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if mode < 0 {
		mode = int64(st.Mode().Perm())
	}
	t.file(path.Clean(dst), mode, data)
	return nil
}

// copyDir adds the host directory tree src at dst: folders, regular files and symbolic links
// (their targets as they are), each with its permission bits. Anything else is refused.
func (t *tree) copyDir(src, dst string) error {
	if !path.IsAbs(dst) {
		return fmt.Errorf("%s: destination must be an absolute path", dst)
	}
	st, err := os.Stat(src)
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return fmt.Errorf("%s is not a directory (use --add for a file)", src)
	}
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := path.Join(path.Clean(dst), filepath.ToSlash(rel))
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			t.dir(target, int64(info.Mode().Perm()))
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			t.symlink(target, link)
		case d.Type().IsRegular():
			return t.copyFile(p, target, int64(info.Mode().Perm()))
		default:
			return fmt.Errorf("%s: only folders, files and symbolic links go into an image", p)
		}
		return nil
	})
}

func (t *tree) tar() ([]byte, error) {
	names := make([]string, 0, len(t.entries))
	for n := range t.entries {
		names = append(names, n)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, n := range names {
		h := *t.entries[n]
		h.Name = strings.TrimPrefix(n, "/")
		if h.Typeflag == tar.TypeDir {
			h.Name += "/"
		}
		h.Format = tar.FormatPAX
		if err := tw.WriteHeader(&h); err != nil {
			return nil, err
		}
		if d, ok := t.data[n]; ok {
			if _, err := tw.Write(d); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
