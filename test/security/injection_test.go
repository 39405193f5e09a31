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

package security

import (
	"bytes"
	"os"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/naming"
)

var _ = Describe("Attack 7: a param or an output rewrites a step's program", func() {
	var ns string
	var author, creator client.Client
	BeforeEach(func() {
		ns = newNamespace()
		createSecret(ns)
		author = userClient(ns, "erin-edit", roleEdit)
		creator = userClient(ns, "rita-runs", roleRunCreator)
	})

	// stepContainer returns the step container of the pod the controller creates.
	stepContainer := func(run, step string) corev1.Container {
		GinkgoHelper()
		pod := &corev1.Pod{}
		Eventually(func() error {
			return admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: naming.StepPodName(run, step, 1)}, pod)
		}).WithTimeout(30 * time.Second).Should(Succeed())
		return pod.Spec.Containers[0]
	}
	envOf := func(c corev1.Container, name string) *corev1.EnvVar {
		for i := range c.Env {
			if c.Env[i].Name == name {
				return &c.Env[i]
			}
		}
		return nil
	}

	It("refuses a Scene that pastes a template unquoted into sh -c, saying how to fix it, even from an edit user", func() {
		s := newScene(ns, "unsafe", shStep("greet", `echo "hello, {{ .params.who }}" > "$ERGON_OUTPUT"`))
		s.Spec.Params = []ergonv1alpha1.ParamSpec{{Name: "who"}}
		refusedNaming(author.Create(ctx, s), "spec.steps[0].container.command[2]", "unquoted", "$ERGON_PARAM_NAME", "shquote")

		s.Spec.Steps[0].Container.Command[2] = `echo "hello, {{ .params.who | shquote }}" > "$ERGON_OUTPUT"`
		refusedNaming(author.Create(ctx, s), "spec.steps[0].container.command[2]", "inside double quotes")
	})

	It("keeps the script as written when a Run's param is \"; printenv; \": the value arrives as an environment variable", func() {
		script := `echo "sprint $ERGON_PARAM_sprint" > "$ERGON_OUTPUT"`
		s := newScene(ns, "report", shStep("fetch", script))
		s.Spec.Params = []ergonv1alpha1.ParamSpec{{Name: "sprint"}}
		Expect(author.Create(ctx, s)).To(Succeed())
		attack := `"; printenv; "`
		Expect(creator.Create(ctx, newRun(ns, "r", "report", map[string]string{"sprint": attack}))).To(Succeed())

		c := stepContainer("r", "fetch")
		Expect(c.Args).To(Equal([]string{"run", "--", "sh", "-c", script}), "the script is the Scene's, byte for byte")
		Expect(envOf(c, "ERGON_PARAM_sprint")).To(HaveField("Value", attack))
	})

	It("keeps a shquoted value one word and out of the kubelet's $(VAR) expansion, so it cannot pull in a secret param", func() {
		s := newScene(ns, "greet", shStep("greet",
			`curl -H "Authorization: $ERGON_PARAM_token" https://x.example/{{ .params.who | shquote }} > "$ERGON_OUTPUT"`))
		s.Spec.Params = []ergonv1alpha1.ParamSpec{
			{Name: "who"}, {Name: "token", ValueFrom: &ergonv1alpha1.ParamValueSource{SecretKeyRef: secretKey()}}}
		Expect(author.Create(ctx, s)).To(Succeed())
		attack := `$(ERGON_PARAM_token)'; printenv; '`
		Expect(author.Create(ctx, newRun(ns, "r", "greet", map[string]string{"who": attack}))).To(Succeed())

		c := stepContainer("r", "greet")
		// $$ is the kubelet's escape for $: the container sees the value as it was sent.
		Expect(c.Args[4]).To(Equal(`curl -H "Authorization: $ERGON_PARAM_token" ` +
			`https://x.example/'$$(ERGON_PARAM_token)'\''; printenv; '\''' > "$ERGON_OUTPUT"`))
		Expect(envOf(c, "ERGON_PARAM_who")).To(HaveField("Value", `$$(ERGON_PARAM_token)'; printenv; '`))
	})

	It("accepts every sample Scene, as an edit user", func() {
		for _, file := range []string{"ergon_v1alpha1_scene.yaml", filepath.Join("run", "hello.yaml")} {
			data, err := os.ReadFile(filepath.Join("..", "..", "config", "samples", file))
			Expect(err).NotTo(HaveOccurred())
			for _, doc := range splitYAML(data) {
				s := &ergonv1alpha1.Scene{}
				Expect(yaml.UnmarshalStrict(doc, s)).To(Succeed())
				s.Namespace = ns
				Expect(author.Create(ctx, s)).To(Succeed(), "%s: %s", file, s.Name)
			}
		}
	})
})

// splitYAML splits a multi-document YAML file.
func splitYAML(data []byte) [][]byte {
	var docs [][]byte
	for d := range bytes.SplitSeq(data, []byte("\n---\n")) {
		if len(bytes.TrimSpace(d)) > 0 {
			docs = append(docs, d)
		}
	}
	return docs
}
