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
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

// newNamespace creates a namespace for one test and deletes it afterwards.
func newNamespace(ctx context.Context) string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "e2e-"}}
	Expect(k8sClient.Create(ctx, ns)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) {
		Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, ns))).To(Succeed())
	})
	// Cleanups run last in, first out: a failed spec's namespace is shown before it goes.
	DeferCleanup(func() {
		if CurrentSpecReport().Failed() {
			dumpNamespace(ns.Name)
		}
	})
	return ns.Name
}

// dumpNamespace prints what a failed spec left in its namespace, and what the manager said
// about it, so that a failure on a machine nobody can log in to can still be understood.
func dumpNamespace(ns string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	kubectl := func(args ...string) {
		out, err := exec.CommandContext(ctx, "kubectl", args...).CombinedOutput()
		GinkgoWriter.Printf("\n### kubectl %s (err: %v)\n%s", strings.Join(args, " "), err, out)
	}
	kubectl("get", "runs,gates,scenes,triggers,workspaces,pods", "-n", ns, "-o", "wide")
	kubectl("get", "runs,gates", "-n", ns, "-o", "yaml")
	kubectl("get", "events", "-n", ns, "--sort-by", ".lastTimestamp")
	kubectl("describe", "pods", "-n", ns)
	out, err := exec.CommandContext(ctx, "kubectl", "logs", "-n", managerNamespace, "deploy/ergon-manager",
		"--since", "15m").CombinedOutput()
	GinkgoWriter.Printf("\n### the manager's log lines that name %s (err: %v)\n", ns, err)
	for line := range strings.SplitSeq(string(out), "\n") {
		if strings.Contains(line, ns) {
			GinkgoWriter.Println(line)
		}
	}
	summarizeFailure(ctx, ns)
}

// summarizeFailure appends the state of a failed spec's Runs, a line a step, to the file
// E2E_SUMMARY names: hack/e2e.sh prints it last, where a CI log's tail shows it.
func summarizeFailure(ctx context.Context, ns string) {
	path := os.Getenv("E2E_SUMMARY")
	if path == "" {
		return
	}
	cut := func(s string) string {
		s = strings.ReplaceAll(s, "\n", " ")
		if len(s) > 240 {
			return s[:240] + "…"
		}
		return s
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s (namespace %s)\n", CurrentSpecReport().FullText(), ns)
	runs := &ergonv1alpha1.RunList{}
	if err := k8sClient.List(ctx, runs, client.InNamespace(ns)); err != nil {
		fmt.Fprintf(&b, "  listing Runs: %v\n", err)
	}
	for _, run := range runs.Items {
		fmt.Fprintf(&b, "  Run %s: %s\n", run.Name, run.Status.Phase)
		for _, c := range run.Status.Conditions {
			fmt.Fprintf(&b, "    %s=%s %s: %s\n", c.Type, c.Status, c.Reason, cut(c.Message))
		}
		for _, st := range run.Status.Steps {
			fmt.Fprintf(&b, "    step %s: %s %s (attempt %d): %s\n", st.Name, st.Phase, st.Reason, st.Attempts, cut(st.Message))
		}
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return
	}
	defer func() { _ = f.Close() }()
	_, _ = f.WriteString(b.String())
}

var _ = Describe("Ergon on a real cluster", func() {
	It("runs the manager until it is Ready", func(ctx SpecContext) {
		Eventually(func(g Gomega) {
			d := &appsv1.Deployment{}
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: managerNamespace, Name: "ergon-manager"}, d)).To(Succeed())
			g.Expect(d.Status.ReadyReplicas).To(BeEquivalentTo(1))
		}).WithTimeout(2 * time.Minute).Should(Succeed())
	})

	It("serves the five kinds", func() {
		resources, err := clientset.Discovery().ServerResourcesForGroupVersion(ergonv1alpha1.GroupVersion.String())
		Expect(err).NotTo(HaveOccurred())
		var kinds []string
		for _, r := range resources.APIResources {
			kinds = append(kinds, r.Kind)
		}
		Expect(kinds).To(ContainElements("Scene", "Run", "Gate", "Trigger", "Workspace", "WorkspacePool"))
	})

	It("accepts every sample", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		files, err := filepath.Glob(filepath.Join(repoRoot, "config", "samples", "ergon_*.yaml"))
		Expect(err).NotTo(HaveOccurred())
		Expect(files).NotTo(BeEmpty())
		for _, f := range files {
			data, err := os.ReadFile(f)
			Expect(err).NotTo(HaveOccurred())
			dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
			for {
				u := &unstructured.Unstructured{}
				if err := dec.Decode(&u.Object); errors.Is(err, io.EOF) {
					break
				} else {
					Expect(err).NotTo(HaveOccurred(), f)
				}
				u.SetNamespace(ns)
				// A dry run: the samples name images and Secrets this cluster does not have.
				err := k8sClient.Create(ctx, u, client.DryRunAll)
				if u.GetKind() == "Gate" {
					// The sample shows a Gate as Ergon makes it; nobody else may create one.
					Expect(err).To(MatchError(ContainSubstring("only Ergon creates Gates")), "%s: %s", f, u.GetName())
					continue
				}
				Expect(err).NotTo(HaveOccurred(), "%s: %s", f, u.GetName())
			}
		}
	})

	It("runs a plain pod of the tool image to completion, with its logs readable", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: ns},
			Spec: corev1.PodSpec{
				RestartPolicy:                corev1.RestartPolicyNever,
				AutomountServiceAccountToken: new(false),
				SecurityContext: &corev1.PodSecurityContext{
					RunAsNonRoot: new(true), RunAsUser: new(int64(65532)),
					SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
				},
				Containers: []corev1.Container{{
					Name: "hello", Image: toolImage, ImagePullPolicy: corev1.PullIfNotPresent,
					Command: []string{"sh", "-c", "echo hello from $(hostname)"},
					SecurityContext: &corev1.SecurityContext{
						AllowPrivilegeEscalation: new(false), ReadOnlyRootFilesystem: new(true),
						Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
					},
				}},
			},
		}
		Expect(k8sClient.Create(ctx, pod)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(pod), pod)).To(Succeed())
			g.Expect(pod.Status.Phase).To(Equal(corev1.PodSucceeded))
		}).WithTimeout(2 * time.Minute).Should(Succeed())
		logs, err := clientset.CoreV1().Pods(ns).GetLogs("hello", &corev1.PodLogOptions{}).DoRaw(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(logs)).To(Equal("hello from hello\n"))
	})
})
