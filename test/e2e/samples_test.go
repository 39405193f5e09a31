//go:build e2e

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

package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

// sampleImages is every image config/samples names (a container step's, a Workspace's),
// read from the YAML wherever a field "image" holds one.
func sampleImages() []string {
	var images []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if s, ok := x.(string); ok && k == "image" && !slices.Contains(images, s) {
					images = append(images, s)
				}
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	err := filepath.WalkDir(filepath.Join(repoRoot, "config", "samples"), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(p) != ".yaml" {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			var doc map[string]any
			if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
				return nil
			} else if err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
			walk(doc)
		}
	})
	Expect(err).NotTo(HaveOccurred())
	slices.Sort(images)
	return images
}

var _ = Describe("The samples' images", func() {
	It("run unchanged: a Scene with a step of each image a sample names succeeds", func(ctx SpecContext) {
		images := sampleImages()
		Expect(images).To(ContainElement("busybox:1.36"), "the hello sample's image")
		ns := newNamespace(ctx)
		var steps []ergonv1alpha1.Step
		for i, img := range images {
			// As the samples write them: the public name, the default pull policy (IfNotPresent
			// for a tag other than latest).
			steps = append(steps, ergonv1alpha1.Step{Name: fmt.Sprintf("image-%d", i),
				Container: &ergonv1alpha1.ContainerStep{Image: img,
					Command: []string{"sh", "-c", `echo -n "ran $0" > "$ERGON_OUTPUT"`, img}}})
		}
		run := finished(ctx, runScene(ctx, ns, "sample-images", steps...))
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded), "%+v", run.Status)
		for i, img := range images {
			step := stepOf(run, fmt.Sprintf("image-%d", i))
			Expect(step.Output).NotTo(BeNil(), img)
			Expect(step.Output.Preview).To(Equal("ran "+img), img)
		}
	})
})
