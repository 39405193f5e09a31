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

package manifests

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// defaultImage is the manager image every install path deploys when not told otherwise: the
// one `make image`, `make load-image` and `make docker-build` build (the Makefile's IMG).
const defaultImage = "ergon/manager:dev"

// releaseImage stands for an image of the user's: a registry host, a path, a tag.
const releaseImage = "registry.example:5000/team/ergon-manager:v1.2.3"

// installPath is one way the README says to install Ergon, with the image it promises.
type installPath struct {
	name   string
	render func(t *testing.T) []byte
	image  string
}

// installPaths are the documented installs: the chart with and without image values, and
// the kustomize bases as they are and after `make deploy IMG=...` has set the image.
func installPaths() []installPath {
	repo, tag, _ := strings.Cut(releaseImage, ":v")
	var paths []installPath
	for _, r := range renderings {
		paths = append(paths, installPath{name: r.name, render: r.render, image: defaultImage})
	}
	return append(paths,
		installPath{name: "chart, --set image.repository and image.tag", image: releaseImage,
			render: helmTemplate("--set", "image.repository="+repo, "--set", "image.tag=v"+tag)},
		installPath{name: "chart, cert-manager, --set image.repository and image.tag", image: releaseImage,
			render: helmTemplate("--set", "webhooks.certMode=certManager", "--set", "image.repository="+repo,
				"--set", "image.tag=v"+tag)},
		installPath{name: "make deploy IMG=..., config/default", image: releaseImage,
			render: kustomizeWithImage("default", releaseImage)},
		installPath{name: "make deploy IMG=..., config/overlays/cert-manager", image: releaseImage,
			render: kustomizeWithImage(filepath.Join("overlays", "cert-manager"), releaseImage)},
	)
}

// kustomizeWithImage renders a kustomize directory from a copy of config/ in which the image
// was set the way `make deploy IMG=...` and `make build-installer` set it:
// `cd config/manager && kustomize edit set image controller=IMG`.
func kustomizeWithImage(dir, img string) func(t *testing.T) []byte {
	return func(t *testing.T) []byte {
		kz := os.Getenv("KUSTOMIZE")
		if kz == "" {
			kz = filepath.Join(root, "bin", "kustomize")
		}
		if _, err := os.Stat(kz); err != nil {
			t.Fatalf("kustomize is needed to set the image as `make deploy` does: run `make kustomize`, or set KUSTOMIZE (%v)", err)
		}
		tmp := t.TempDir()
		if err := os.CopyFS(filepath.Join(tmp, "config"), os.DirFS(filepath.Join(root, "config"))); err != nil {
			t.Fatal(err)
		}
		edit := exec.Command(kz, "edit", "set", "image", "controller="+img)
		edit.Dir = filepath.Join(tmp, "config", "manager")
		if out, err := edit.CombinedOutput(); err != nil {
			t.Fatalf("kustomize edit set image: %v\n%s", err, out)
		}
		return run(t, kz, "build", filepath.Join(tmp, "config", dir))
	}
}

// TestInstallPathsDeployTheImageTheyPromise checks, for every documented install path, the
// manager's image and the image step pods copy Ergon's entrypoint from (--entrypoint-image),
// which must be the manager's own: the same binary version on both sides of a step.
func TestInstallPathsDeployTheImageTheyPromise(t *testing.T) {
	for _, p := range installPaths() {
		t.Run(p.name, func(t *testing.T) {
			in := read(t, objects(t, p.render(t)))
			containers := in.deployment.Spec.Template.Spec.Containers
			if len(containers) != 1 || containers[0].Name != "manager" {
				t.Fatalf("want the one container manager, got %d containers", len(containers))
			}
			if got := containers[0].Image; got != p.image {
				t.Errorf("the manager's image is %q, want %q", got, p.image)
			}
			var flags []string
			for _, a := range in.args() {
				if v, ok := strings.CutPrefix(a, "--entrypoint-image="); ok {
					flags = append(flags, v)
				}
			}
			if len(flags) != 1 || flags[0] != p.image {
				t.Errorf("--entrypoint-image is %q, want exactly one, %q (args %v)", flags, p.image, in.args())
			}
		})
	}
}
