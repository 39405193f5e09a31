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

// Package layout checks the arrows of the code map in docs/design.md: what each package may
// import, so that the layout keeps showing the architecture as the code grows.
package layout

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/ergon-dev/ergon/"

// pkg is a package of the module, as go list describes it.
type pkg struct {
	path    string   // relative to the module: "controllers/run"
	imports []string // direct, relative to the module when in it
	deps    []string // transitive
}

func listPackages(t *testing.T) map[string]pkg {
	t.Helper()
	out, err := exec.Command("go", "list", "-tags", "e2e", "-f",
		`{{.ImportPath}}|{{join .Imports ","}}|{{join .Deps ","}}`, module+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	pkgs := map[string]pkg{}
	for line := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, "|")
		p := pkg{path: strings.TrimPrefix(f[0], module)}
		for i := range strings.SplitSeq(f[1], ",") {
			p.imports = append(p.imports, strings.TrimPrefix(i, module))
		}
		p.deps = strings.Split(f[2], ",")
		pkgs[p.path] = p
	}
	if len(pkgs) < 20 {
		t.Fatalf("go list found %d packages of the module; want them all", len(pkgs))
	}
	return pkgs
}

// under reports whether path is dir or below it.
func under(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, dir+"/")
}

// kindOf is the reconciler package path is in ("controllers/run"), or "".
func kindOf(path string) string {
	if !under(path, "controllers") || under(path, "controllers/internal") {
		return ""
	}
	parts := strings.SplitN(path, "/", 3)
	if len(parts) < 2 {
		return ""
	}
	return parts[0] + "/" + parts[1]
}

func TestTheCodeMapArrowsHold(t *testing.T) {
	pkgs := listPackages(t)
	kinds := map[string]bool{}
	for path := range pkgs {
		if k := kindOf(path); k != "" {
			kinds[k] = true
		}
	}
	for _, want := range []string{"controllers/run", "controllers/gate", "controllers/scene", "controllers/trigger",
		"controllers/workspace", "controllers/archive"} {
		if !kinds[want] {
			t.Errorf("no package %s: the reconcilers are a package per kind", want)
		}
	}
	for path, p := range pkgs {
		for _, imp := range p.imports {
			switch {
			case under(path, "internal") && (under(imp, "controllers") || under(imp, "webhook") || under(imp, "cmd")):
				t.Errorf("%s imports %s: nothing under internal/ points up to controllers/, webhook/ or cmd/", path, imp)
			case under(path, "api") && !under(imp, "api") && strings.HasPrefix(imp, "internal"):
				t.Errorf("%s imports %s: the API types import no implementation", path, imp)
			case kindOf(path) != "" && kindOf(imp) != "" && kindOf(imp) != kindOf(path):
				t.Errorf("%s imports %s: a reconciler imports no other one; what both need goes in controllers/internal/shared",
					path, imp)
			case kindOf(path) != "" && imp == "controllers":
				t.Errorf("%s imports %s: a reconciler does not import the wiring above it", path, imp)
			case under(path, "controllers/internal/shared") && under(imp, "controllers") && !under(imp, "controllers/internal"):
				t.Errorf("%s imports %s: what the reconcilers share imports none of them", path, imp)
			case path == "internal/planner" && (under(imp, "k8s.io/client-go") || under(imp, "sigs.k8s.io/controller-runtime")):
				t.Errorf("%s imports %s: the planner decides from facts, it reads nothing", path, imp)
			}
		}
	}
}

// TestTheBinariesCarryOnlyWhatTheyNeed checks what the binaries other than the manager's depend on.
func TestTheBinariesCarryOnlyWhatTheyNeed(t *testing.T) {
	pkgs := listPackages(t)
	// The OTLP exporters are the manager's: the console and the plugin name traces, never send them.
	for _, bin := range []string{"cmd/console", "cmd/kubectl-ergon"} {
		for _, dep := range pkgs[bin].deps {
			if dep == module+"internal/tracing/otlp" {
				t.Errorf("%s depends on internal/tracing/otlp: only the manager exports spans", bin)
			}
		}
	}
	// What runs inside every step pod is small and holds no client: it talks to nothing but
	// the files and the model the step is given.
	for _, bin := range []string{"cmd/entrypoint", "cmd/agent", "cmd/artifacts"} {
		for _, dep := range pkgs[bin].deps {
			if under(dep, "k8s.io/client-go") || under(dep, "sigs.k8s.io/controller-runtime") || under(dep, "k8s.io/api") ||
				under(dep, "gocloud.dev") || under(dep, "github.com/aws") {
				t.Errorf("%s depends on %s: the step pod binaries carry no Kubernetes client, API types or store client", bin, dep)
			}
		}
	}
	// The entrypoint starts in every step pod: it loads no HTTP client, which only a step with
	// artifacts needs, and gets from Ergon's artifact binary (cmd/artifacts).
	for _, dep := range pkgs["cmd/entrypoint"].deps {
		if dep == "net/http" {
			t.Errorf("cmd/entrypoint depends on net/http: moving artifacts is cmd/artifacts' work")
		}
	}
	if !slices.Contains(pkgs["cmd/artifacts"].deps, "net/http") {
		t.Error("the dependencies listed miss net/http of cmd/artifacts: the check above would pass for nothing")
	}
}
