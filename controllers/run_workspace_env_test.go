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

package controllers

import (
	"context"
	"encoding/json"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/agentspec"
	"github.com/ergon-dev/ergon/internal/naming"
)

var _ = Describe("The env of a Workspace", func() {
	BeforeEach(func() {
		ctx, cancel := context.WithCancel(context.Background())
		go testKubelet.run(ctx)
		DeferCleanup(cancel)
	})

	It("reaches the step pods bound to it, Secrets by reference, under the step's own env; agent tools without Secrets",
		func(ctx SpecContext) {
			ns := newNamespace(ctx, func(*corev1.Pod) outcome { return outcome{Stay: true} })
			token := corev1.EnvVar{Name: "TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "dev-creds"}, Key: "token"}}}
			region := corev1.EnvVar{Name: "REGION", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "dev-settings"}, Key: "region"}}}
			ws := &ergonv1alpha1.Workspace{}
			ws.Name, ws.Namespace = "desk", ns
			ws.Spec = workspaceFor(ctx, ns, "desk-template", "bob@example.org", nil).Spec
			ws.Spec.User = "carol@example.org"
			ws.Spec.Env = []corev1.EnvVar{{Name: "LANG", Value: "C.UTF-8"}, {Name: "MODE", Value: "workspace"},
				{Name: "ERGON_RUN", Value: "forged"}, token, region}
			Expect(k8sClient.Create(ctx, ws)).To(Succeed())
			build := container("build", "make")
			build.Container.Env = []corev1.EnvVar{{Name: "MODE", Value: "step"}}
			boundScene(ctx, ns, "build", "desk", build, agentWith("look", ergonv1alpha1.ToolReadFile))
			createRun(ctx, ns, "build-1", "build", nil)

			for _, step := range []string{"build", "look"} {
				By("the " + step + " step's pod")
				pod := &corev1.Pod{}
				Eventually(func(g Gomega) {
					g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: naming.StepPodName("build-1", step, 1)}, pod)).To(Succeed())
				}).WithTimeout(10 * time.Second).Should(Succeed())
				env := map[string]corev1.EnvVar{}
				for _, e := range pod.Spec.Containers[0].Env {
					Expect(env).NotTo(HaveKey(e.Name), "%s is set twice", e.Name)
					env[e.Name] = e
				}
				Expect(env).To(HaveKeyWithValue("LANG", corev1.EnvVar{Name: "LANG", Value: "C.UTF-8"}))
				Expect(env).To(HaveKeyWithValue("TOKEN", token), "a Secret's key goes by reference")
				Expect(env).To(HaveKeyWithValue("REGION", region))
				Expect(env["ERGON_RUN"].Value).To(Equal("build-1"), "Ergon's own variables win")
				if step == "build" {
					Expect(env["MODE"].Value).To(Equal("step"), "the step's env wins a clash")
				} else {
					Expect(env["MODE"].Value).To(Equal("workspace"))
					var spec agentspec.Spec
					Expect(json.Unmarshal([]byte(pod.Annotations["agent.ergon.dev/spec"]), &spec)).To(Succeed())
					Expect(spec.ToolEnv).To(ConsistOf("LANG", "MODE", "REGION"),
						"the shell tool sees the Workspace's env, but neither a Secret's value nor Ergon's own variables")
				}
			}
		})
})
