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

package compile

import (
	"fmt"
	"path"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/artifacts"
	"github.com/ergon-dev/ergon/internal/stepcontract"
)

// checkArtifacts checks the artifacts a step declares and the ones it reads: only a container
// or agent step without forEach or loop has them (an agent writes its own in its Workspace); names are artifact names, unique; paths are files
// the step may write (under /tmp, or the Workspace's mount); an input names an artifact an
// upstream step declares.
func (c *compiler) checkArtifacts(spec *ergonv1alpha1.Step, p *field.Path, upstream func(string) bool) {
	if len(spec.Artifacts) == 0 && len(spec.InputArtifacts) == 0 {
		return
	}
	if (spec.Container == nil && spec.Agent == nil) || spec.ForEach != nil || spec.Loop != nil {
		f := p.Child("artifacts")
		if len(spec.Artifacts) == 0 {
			f = p.Child("inputArtifacts")
		}
		c.errs = append(c.errs, field.Forbidden(f, "only a container or agent step without forEach or loop has artifacts "+
			"and inputArtifacts; write a file of a forEach instance or a loop into a step after it"))
		return
	}
	if spec.Agent != nil {
		// An agent writes files with its file tools, in its Workspace only.
		for i, a := range spec.Artifacts {
			if c.spec.Workspace == nil || !strings.HasPrefix(a.Path, stepcontract.DefaultWorkspace+"/") {
				c.errs = append(c.errs, field.Invalid(p.Child("artifacts").Index(i).Child("path"), a.Path,
					"an agent step writes artifacts with its file tools, in its Workspace: bind the Scene to a Workspace "+
						"and give a path under "+stepcontract.DefaultWorkspace+"/"))
			}
		}
	}
	paths := map[string]string{}
	claim := func(f *field.Path, file string) {
		if file == "" {
			return
		}
		if err := c.artifactPath(file); err != "" {
			c.errs = append(c.errs, field.Invalid(f, file, err))
			return
		}
		if other, ok := paths[file]; ok {
			c.errs = append(c.errs, field.Duplicate(f, fmt.Sprintf("%s, also the path of %s", file, other)))
			return
		}
		paths[file] = f.String()
	}
	names := map[string]bool{}
	for i, a := range spec.Artifacts {
		f := p.Child("artifacts").Index(i)
		if err := artifacts.ValidName(a.Name); err != nil {
			c.errs = append(c.errs, field.Invalid(f.Child("name"), a.Name, err.Error()))
		} else if names[a.Name] {
			c.errs = append(c.errs, field.Duplicate(f.Child("name"), a.Name))
		}
		names[a.Name] = true
		claim(f.Child("path"), a.Path)
	}
	for i, in := range spec.InputArtifacts {
		f := p.Child("inputArtifacts").Index(i)
		claim(f.Child("path"), in.Path)
		producer := c.stepSpec(in.Step)
		switch {
		case producer == nil:
			c.errs = append(c.errs, field.NotFound(f.Child("step"), in.Step))
		case !upstream(in.Step):
			c.errs = append(c.errs, field.Invalid(f.Child("step"), in.Step, fmt.Sprintf("step %s does not run before "+
				"this one: list it in dependsOn, directly or through another step", in.Step)))
		case !declares(producer, in.Name):
			c.errs = append(c.errs, field.Invalid(f.Child("name"), in.Name, fmt.Sprintf("step %s declares no artifact %q",
				in.Step, in.Name)))
		}
	}
}

// artifactPath says why a step cannot use file as an artifact's path, or "".
func (c *compiler) artifactPath(file string) string {
	roots := []string{"/tmp"}
	if c.spec.Workspace != nil {
		roots = append(roots, stepcontract.DefaultWorkspace)
	}
	if !path.IsAbs(file) || path.Clean(file) != file {
		return "must be an absolute, clean path (no '.', '..', '//' or trailing '/')"
	}
	for _, r := range roots {
		if strings.HasPrefix(file, r+"/") {
			return ""
		}
	}
	return fmt.Sprintf("must be under %s: the step's root filesystem is read-only", strings.Join(roots, "/ or ")+"/")
}

// stepSpec finds a step of the Scene's graph by name.
func (c *compiler) stepSpec(name string) *ergonv1alpha1.Step {
	for i := range c.spec.Steps {
		if c.spec.Steps[i].Name == name {
			return &c.spec.Steps[i]
		}
	}
	return nil
}

func declares(s *ergonv1alpha1.Step, name string) bool {
	for _, a := range s.Artifacts {
		if a.Name == name {
			return true
		}
	}
	return false
}
