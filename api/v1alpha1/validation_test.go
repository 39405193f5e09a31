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

package v1alpha1_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}()

// invalidCase is one object of testdata/invalid.yaml that the API server must refuse.
type invalidCase struct {
	Name   string         `json:"name"`
	Expect []string       `json:"expect"`
	Object map[string]any `json:"object"`
	Patch  map[string]any `json:"patch,omitempty"`
}

func loadInvalidCases() []invalidCase {
	data, err := os.ReadFile(filepath.Join("testdata", "invalid.yaml"))
	if err != nil {
		panic(err)
	}
	var cases []invalidCase
	if err := yaml.UnmarshalStrict(data, &cases); err != nil {
		panic(fmt.Sprintf("testdata/invalid.yaml: %v", err))
	}
	return cases
}

// newNamespace creates a namespace for one test and deletes it afterwards.
func newNamespace(ctx context.Context) string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "validation-"}}
	Expect(k8sClient.Create(ctx, ns)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) {
		Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, ns))).To(Succeed())
	})
	return ns.Name
}

var nonName = regexp.MustCompile(`[^a-z0-9]+`)

func (c invalidCase) object(namespace string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: maps.Clone(c.Object)}
	u.SetAPIVersion(ergonv1alpha1.GroupVersion.String())
	u.SetNamespace(namespace)
	name := strings.Trim(nonName.ReplaceAllString(strings.ToLower(c.Name), "-"), "-")
	u.SetName(name[:min(len(name), 63)])
	return u
}

// expectRefused asserts that err is the API server refusing an invalid object, with every
// expected piece of message.
func expectRefused(err error, expect []string) {
	Expect(err).To(HaveOccurred(), "the API server accepted the object")
	Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want an Invalid error, got: %v", err)
	Expect(err.Error()).NotTo(ContainSubstring("type conversion error"), "a rule that fails to evaluate says nothing of the value")
	for _, want := range expect {
		Expect(err.Error()).To(ContainSubstring(want))
	}
}

var _ = Describe("The API contract", func() {
	Context("refuses invalid objects with a message that names the field", func() {
		cases := loadInvalidCases()
		It("has a corpus of at least 25 invalid objects", func() {
			Expect(len(cases)).To(BeNumerically(">=", 25))
		})
		entries := make([]TableEntry, 0, len(cases))
		for _, c := range cases {
			entries = append(entries, Entry(c.Name, c))
		}
		DescribeTable("refusing", func(ctx SpecContext, c invalidCase) {
			obj := c.object(newNamespace(ctx))
			if c.Patch == nil {
				expectRefused(k8sClient.Create(ctx, obj), c.Expect)
				return
			}
			Expect(k8sClient.Create(ctx, obj)).To(Succeed(), "the object before the patch must be valid")
			patch, err := json.Marshal(c.Patch)
			Expect(err).NotTo(HaveOccurred())
			expectRefused(k8sClient.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch)), c.Expect)
		}, entries)
	})

	It("accepts every sample in config/samples", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		files, err := filepath.Glob(filepath.Join("..", "..", "config", "samples", "ergon_*.yaml"))
		Expect(err).NotTo(HaveOccurred())
		runnable, err := filepath.Glob(filepath.Join("..", "..", "config", "samples", "run", "*.yaml"))
		Expect(err).NotTo(HaveOccurred())
		files = append(files, runnable...)
		Expect(files).NotTo(BeEmpty())
		kinds := map[string]bool{}
		for _, f := range files {
			for _, obj := range readObjects(f) {
				obj.SetNamespace(ns)
				Expect(k8sClient.Create(ctx, obj)).To(Succeed(), "%s: %s", f, obj.GetName())
				kinds[obj.GetKind()] = true
			}
		}
		Expect(kinds).To(HaveLen(6), "one sample of each kind")
	})

	It("fills in the documented defaults", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		trigger := &ergonv1alpha1.Trigger{
			ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: ns},
			Spec: ergonv1alpha1.TriggerSpec{
				SceneRef: corev1.LocalObjectReference{Name: "weekly-report"},
				Schedule: &ergonv1alpha1.ScheduleSource{Cron: "@daily"},
			},
		}
		Expect(k8sClient.Create(ctx, trigger)).To(Succeed())
		Expect(trigger.Spec.Schedule.ConcurrencyPolicy).To(Equal(ergonv1alpha1.AllowConcurrent))
		Expect(trigger.Spec.SuccessfulRunsHistoryLimit).To(HaveValue(BeEquivalentTo(3)))
		Expect(trigger.Spec.FailedRunsHistoryLimit).To(HaveValue(BeEquivalentTo(1)))

		hook := &ergonv1alpha1.Trigger{
			ObjectMeta: metav1.ObjectMeta{Name: "on-close", Namespace: ns},
			Spec: ergonv1alpha1.TriggerSpec{
				SceneRef: corev1.LocalObjectReference{Name: "weekly-report"},
				Webhook: &ergonv1alpha1.WebhookSource{SecretRef: corev1.SecretKeySelector{
					LocalObjectReference: corev1.LocalObjectReference{Name: "hook"}, Key: "key"}},
			},
		}
		Expect(k8sClient.Create(ctx, hook)).To(Succeed())
		Expect(hook.Spec.Webhook.Format).To(Equal(ergonv1alpha1.WebhookFormatErgon))

		scene := &ergonv1alpha1.Scene{
			ObjectMeta: metav1.ObjectMeta{Name: "ask", Namespace: ns},
			Spec: ergonv1alpha1.SceneSpec{Steps: []ergonv1alpha1.Step{
				{Name: "think", Agent: &ergonv1alpha1.AgentStep{Prompt: "hi", Output: &ergonv1alpha1.OutputContract{}}},
				{Name: "ask", DependsOn: []string{"think"}, Gate: &ergonv1alpha1.GateStep{}},
			}},
		}
		Expect(k8sClient.Create(ctx, scene)).To(Succeed())
		agent, gate := scene.Spec.Steps[0].Agent, scene.Spec.Steps[1].Gate
		Expect(agent.Model).To(Equal("default"))
		Expect(agent.MaxTurns).To(HaveValue(BeEquivalentTo(20)))
		Expect(agent.Output.Format).To(Equal("text"))
		Expect(agent.Output.MaxRepairs).To(HaveValue(BeEquivalentTo(2)))
		Expect(gate.Options).To(Equal([]string{"approve", "reject"}))
		Expect(gate.MinApprovals).To(HaveValue(BeEquivalentTo(1)))
	})

	It("lets a Gate be decided once, and only its decision change", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		gate := &ergonv1alpha1.Gate{
			ObjectMeta: metav1.ObjectMeta{Name: "r-review", Namespace: ns},
			Spec:       ergonv1alpha1.GateSpec{RunRef: corev1.LocalObjectReference{Name: "r"}, Step: "review"},
		}
		Expect(k8sClient.Create(ctx, gate)).To(Succeed())
		decide := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"decision":{"option":"approve","comment":"ok"}}}`))
		Expect(k8sClient.Patch(ctx, gate, decide)).To(Succeed())
		Expect(gate.Spec.Decision).NotTo(BeNil())
		Expect(gate.Spec.Decision.Option).To(Equal("approve"))
	})

	It("accepts a Scene of 1,000 steps that fan out from one", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		busybox := &ergonv1alpha1.ContainerStep{Image: "busybox:1.36", Command: []string{"true"}}
		steps := []ergonv1alpha1.Step{{Name: "root", Container: busybox}}
		for i := 1; i < ergonv1alpha1.MaxSteps; i++ {
			steps = append(steps, ergonv1alpha1.Step{
				Name: fmt.Sprintf("leaf-%d", i), DependsOn: []string{"root"}, Container: busybox,
			})
		}
		scene := &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: "fan-out", Namespace: ns}}
		scene.Spec.Steps = steps
		Expect(k8sClient.Create(ctx, scene)).To(Succeed())

		scene.Spec.Steps = append(scene.Spec.Steps, ergonv1alpha1.Step{Name: "one-too-many", Container: busybox})
		expectRefused(k8sClient.Update(ctx, scene), []string{"spec.steps", "must have at most 1000 items"})
	})

	It("publishes field descriptions for kubectl explain", func(ctx SpecContext) {
		raw, err := discoveryClient().RESTClient().Get().AbsPath("/openapi/v3/apis/ergon.dev/v1alpha1").DoRaw(ctx)
		Expect(err).NotTo(HaveOccurred())
		var doc map[string]any
		Expect(json.Unmarshal(raw, &doc)).To(Succeed())
		steps, found, err := unstructured.NestedMap(doc, "components", "schemas", "dev.ergon.v1alpha1.Scene",
			"properties", "spec", "properties", "steps")
		Expect(err).NotTo(HaveOccurred())
		Expect(found).To(BeTrue(), "the Scene schema is published with spec.steps")
		Expect(steps["description"]).To(ContainSubstring("nodes of the graph"))
	})
})

// readObjects decodes every document of a YAML file.
func readObjects(path string) []*unstructured.Unstructured {
	data, err := os.ReadFile(path)
	Expect(err).NotTo(HaveOccurred())
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var objs []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		err := dec.Decode(&u.Object)
		if errors.Is(err, io.EOF) {
			return objs
		}
		Expect(err).NotTo(HaveOccurred(), path)
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
}
