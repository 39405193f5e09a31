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

package v1alpha1

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

// corpusCase is one object of testdata/invalid*.yaml that a webhook must refuse.
type corpusCase struct {
	Name   string           `json:"name"`
	Setup  []map[string]any `json:"setup,omitempty"`
	Expect []string         `json:"expect"`
	Object map[string]any   `json:"object"`
}

var nonName = regexp.MustCompile(`[^a-z0-9]+`)

func corpusObject(raw map[string]any, namespace, fallback string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: maps.Clone(raw)}
	u.SetAPIVersion(ergonv1alpha1.GroupVersion.String())
	u.SetNamespace(namespace)
	if u.GetName() == "" {
		name := strings.Trim(nonName.ReplaceAllString(strings.ToLower(fallback), "-"), "-")
		u.SetName(name[:min(len(name), 63)])
	}
	return u
}

var _ = Describe("The admission webhooks' corpus", func() {
	files, err := filepath.Glob(filepath.Join("testdata", "invalid*.yaml"))
	if err != nil || len(files) == 0 {
		panic(fmt.Sprintf("no testdata/invalid*.yaml: %v", err))
	}
	var cases []corpusCase
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			panic(err)
		}
		var more []corpusCase
		if err := yaml.UnmarshalStrict(data, &more); err != nil {
			panic(fmt.Sprintf("%s: %v", file, err))
		}
		cases = append(cases, more...)
	}
	entries := make([]TableEntry, 0, len(cases))
	for _, c := range cases {
		entries = append(entries, Entry(c.Name, c))
	}
	DescribeTable("refuses", func(ctx SpecContext, c corpusCase) {
		ns := newNamespace(ctx)
		for i, s := range c.Setup {
			Expect(k8sClient.Create(ctx, corpusObject(s, ns, fmt.Sprintf("setup-%d", i)))).To(Succeed(), "setup %d", i)
		}
		refused(k8sClient.Create(ctx, corpusObject(c.Object, ns, c.Name)), c.Expect...)
	}, entries)
})
