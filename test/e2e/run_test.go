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
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

var _ = Describe("Runs on a real cluster", func() {
	It("runs the sample Scene of make run with real pods and passes outputs along", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		data, err := os.ReadFile(filepath.Join(repoRoot, "config", "samples", "run", "hello.yaml"))
		Expect(err).NotTo(HaveOccurred())
		scene := &ergonv1alpha1.Scene{}
		Expect(yaml.UnmarshalStrict([]byte(strings.ReplaceAll(string(data), "busybox:1.36", toolImage)), scene)).To(Succeed())
		scene.Namespace = ns
		Expect(k8sClient.Create(ctx, scene)).To(Succeed())
		run := &ergonv1alpha1.Run{
			ObjectMeta: metav1.ObjectMeta{Name: "hello-1", Namespace: ns},
			Spec: ergonv1alpha1.RunSpec{SceneRef: corev1.LocalObjectReference{Name: "hello"},
				Params: map[string]string{"who": "Ergon"}},
		}
		Expect(k8sClient.Create(ctx, run)).To(Succeed())

		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(run), run)).To(Succeed())
			g.Expect(run.Status.Phase.Finished()).To(BeTrue(), "phase %s, steps %+v", run.Status.Phase, run.Status.Steps)
		}).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded), "%+v", run.Status)
		Expect(run.Status.Outputs).To(HaveKeyWithValue("report",
			HaveField("Preview", "hello, Ergon has 12 letters\n")))

		By("deleting the step pods once their outputs are in the status")
		Eventually(func(g Gomega) {
			pods := &corev1.PodList{}
			g.Expect(k8sClient.List(ctx, pods, client.InNamespace(ns))).To(Succeed())
			g.Expect(pods.Items).To(BeEmpty())
		}).WithTimeout(time.Minute).Should(Succeed())
	})
})
