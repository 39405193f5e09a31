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

package kubectlergon

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

func TestLintPassesEverySample(t *testing.T) {
	docs, err := readDocuments(nil, []string{filepath.Join("..", "..", "config", "samples")})
	if err != nil {
		t.Fatal(err)
	}
	results := Lint(docs)
	scenes := 0
	for _, r := range results {
		if r.Err != nil {
			t.Errorf("%s: %v", r.Source, r.Err)
		}
		if r.Kind == "Scene" {
			scenes++
		}
	}
	if scenes == 0 {
		t.Fatal("no Scene among the samples was linted")
	}
}

// webhookCase is a case of the webhook's corpus, webhook/v1alpha1/testdata/invalid.yaml.
type webhookCase struct {
	Name   string           `json:"name"`
	Setup  []map[string]any `json:"setup,omitempty"`
	Expect []string         `json:"expect"`
	Object map[string]any   `json:"object"`
}

// The envtest suite compares these messages with admission's, word for word; this test needs
// no API server and checks each fails for the reason the corpus expects.
func TestLintRefusesTheWebhookCorpusScenes(t *testing.T) {
	for _, c := range webhookCorpus(t) {
		if c.Object["kind"] != "Scene" && c.Object["kind"] != "Run" {
			continue
		}
		t.Run(c.Name, func(t *testing.T) {
			res := lintCase(t, c)
			if res.Err == nil {
				t.Fatalf("lint passed a %s admission refuses", c.Object["kind"])
			}
			for _, want := range c.Expect {
				if !strings.Contains(res.Err.Error(), want) {
					t.Errorf("%q lacks %q", res.Err, want)
				}
			}
		})
	}
}

// apiCase is a case of the API's corpus, api/v1alpha1/testdata/invalid.yaml: an object the
// API server refuses for its CRD's schema or validation rules.
type apiCase struct {
	Name   string         `json:"name"`
	Expect []string       `json:"expect"`
	Object map[string]any `json:"object"`
	// Patch makes the case one of an update, which lint, checking files, never sees.
	Patch map[string]any `json:"patch,omitempty"`
}

// apiCorpus is the API's corpus without its cases of updates.
func apiCorpus(t fataler) []webhookCase {
	data, err := os.ReadFile(filepath.Join("..", "..", "api", "v1alpha1", "testdata", "invalid.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []apiCase
	if err := yaml.UnmarshalStrict(data, &cases); err != nil {
		t.Fatal(err)
	}
	var creates []webhookCase
	for _, c := range cases {
		if c.Patch == nil {
			creates = append(creates, webhookCase{Name: c.Name, Expect: c.Expect, Object: c.Object})
		}
	}
	return creates
}

// The envtest suite compares these messages with the API server's, word for word; this
// test needs no API server and checks every object of every kind fails for the reason the
// corpus expects.
func TestLintRefusesTheAPICorpus(t *testing.T) {
	cases := apiCorpus(t)
	if len(cases) < 40 {
		t.Fatalf("only %d cases of creates in the API corpus", len(cases))
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			res := lintCase(t, c)
			if res.Kind != c.Object["kind"] {
				t.Fatalf("lint saw a %q, not the case's %v", res.Kind, c.Object["kind"])
			}
			if res.Err == nil {
				t.Fatalf("lint passed a %s the API server refuses", c.Object["kind"])
			}
			for _, want := range c.Expect {
				if !strings.Contains(res.Err.Error(), want) {
					t.Errorf("%q lacks %q", res.Err, want)
				}
			}
		})
	}
}

// fataler is what the corpus helpers need of *testing.T and GinkgoT().
type fataler interface{ Fatal(args ...any) }

func webhookCorpus(t fataler) []webhookCase {
	data, err := os.ReadFile(filepath.Join("..", "..", "webhook", "v1alpha1", "testdata", "invalid.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []webhookCase
	if err := yaml.UnmarshalStrict(data, &cases); err != nil {
		t.Fatal(err)
	}
	return cases
}

// lintCase lints a corpus case's object, with its setup objects in the same files, as YAML
// documents named the way the webhook suite names them.
func lintCase(t fataler, c webhookCase) LintResult {
	var docs []Document
	var want map[string]any
	for i, obj := range append(append([]map[string]any{}, c.Setup...), c.Object) {
		obj = withDefaults(obj, corpusName(c.Name, i, len(c.Setup)))
		want = obj
		data, err := yaml.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, Document{Source: c.Name, Data: data})
	}
	results := Lint(docs)
	if len(results) == 0 {
		t.Fatal("lint saw no object")
	}
	// Lint reports an object its schema refuses before the ones it checks further.
	name, _ := want["metadata"].(map[string]any)["name"].(string)
	for _, r := range results {
		if r.Kind == want["kind"] && r.Name == name {
			return r
		}
	}
	return results[len(results)-1]
}

func TestLintWarnsOfUnknownFields(t *testing.T) {
	results := Lint([]Document{{Source: "w.yaml#1", Data: []byte(`
apiVersion: ergon.dev/v1alpha1
kind: Scene
metadata: {name: s}
spec:
  steps: [{name: a, colour: blue, container: {image: busybox:1.36, command: ['true']}}]
`)}})
	if len(results) != 1 {
		t.Fatalf("want one result, got %d", len(results))
	}
	if r := results[0]; r.Err != nil || len(r.Warnings) != 1 || r.Warnings[0] != `unknown field "spec.steps[0].colour"` {
		t.Fatalf("want no error and a warning of spec.steps[0].colour, got %v, %q", r.Err, r.Warnings)
	}
}

func TestLintChecksTriggersWorkspacesAndPoolsAsTheirWebhooksDo(t *testing.T) {
	cases := []struct{ name, doc, want string }{
		{"a cron of six fields", `kind: Trigger
spec: {sceneRef: {name: s}, schedule: {cron: '0 0 9 * * MON'}}`, "spec.schedule.cron"},
		{"a webhook without its Secret", `kind: Trigger
spec: {sceneRef: {name: s}, webhook: {params: {sprint: body.sprint}}}`, "spec.webhook.secretRef"},
		{"a Scene name no Scene can have", `kind: Trigger
spec: {sceneRef: {name: Weekly_Report}, schedule: {cron: '@daily'}}`, "no Scene can have this name"},
		{"a good Trigger", `kind: Trigger
spec: {sceneRef: {name: s}, schedule: {cron: '@daily'}}`, ""},
		{"a Workspace request above its limit", `kind: Workspace
spec: {user: alice, image: busybox:1.36, storage: {size: 1Gi},
  resources: {requests: {cpu: "2", memory: 512Mi}, limits: {cpu: "1", memory: 1Gi}}}`, "spec.resources.requests[cpu]"},
		{"a Workspace env variable of the step contract", `kind: Workspace
spec: {user: alice, image: busybox:1.36, storage: {size: 1Gi}, env: [{name: ERGON_PARAM_X, value: "1"}],
  resources: {limits: {cpu: "1", memory: 1Gi}}}`, "spec.env[0].name"},
		{"a good Workspace", `kind: Workspace
spec: {user: alice, image: busybox:1.36, storage: {size: 1Gi},
  resources: {requests: {cpu: 250m, memory: 512Mi}, limits: {cpu: "1", memory: 1Gi}}}`, ""},
		{"a WorkspacePool template request above its limit", `kind: WorkspacePool
spec: {template: {image: busybox:1.36, storage: {size: 1Gi},
  resources: {requests: {memory: 2Gi}, limits: {cpu: "1", memory: 1Gi}}}}`, "spec.template.resources.requests[memory]"},
		{"a WorkspacePool reading a Secret", `kind: WorkspacePool
spec: {template: {image: busybox:1.36, storage: {size: 1Gi}, resources: {limits: {cpu: "1", memory: 1Gi}},
  env: [{name: T, valueFrom: {secretKeyRef: {name: s, key: k}}}]}}`, "values only"},
		{"a good WorkspacePool", `kind: WorkspacePool
spec: {replicas: 3, template: {image: busybox:1.36, storage: {size: 1Gi}, resources: {limits: {cpu: "1", memory: 1Gi}}}}`, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			doc := "apiVersion: ergon.dev/v1alpha1\nmetadata: {name: x, namespace: ns}\n" + tc.doc
			results := Lint([]Document{{Source: tc.name, Data: []byte(doc)}})
			if len(results) != 1 {
				t.Fatalf("want one result, got %v", results)
			}
			err := results[0].Err
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("want no error, got %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("want an error naming %s, got %v", tc.want, err)
			}
		})
	}
}
