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
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

// asking waits for a person to say which version to ship, then ships it.
const asking = `apiVersion: ergon.dev/v1alpha1
kind: Scene
metadata: {name: asking}
spec:
  steps:
  - name: plan
    gate:
      message: Which version ships?
      input:
        type: object
        required: [version]
        properties:
          version: {type: string, pattern: '^v[0-9]+$', title: Version}
          notify: {type: boolean, default: false}
          reviewers: {type: array, items: {type: string}}
  - {name: ship, dependsOn: [plan], container: {image: x, command: [ship, '{{ .steps.plan.outputs.version }}']}}
`

var _ = Describe("kubectl ergon answer and inbox", func() {
	It("lists the question for whoever may answer it, checks an answer against its schema, and resumes the Run with it", func(ctx SpecContext) {
		ns := newNamespace(ctx, echo)
		apply(ctx, ns, asking)
		grant(ctx, ns, "bob", []string{"gates", "runs"}, "get", "list", "watch", "patch")
		grant(ctx, ns, "alice", []string{"gates", "runs"}, "get", "list", "watch", "patch", "approve")

		followed := background(ctx, ns, "run", "asking", "--follow")
		name := runOf(ctx, ns, "asking")
		var gate string
		Eventually(func() string {
			for _, s := range getRun(ctx, ns, name).Status.Steps {
				gate = s.Gate
			}
			return gate
		}).ShouldNot(BeEmpty())

		Expect(plugin(ctx, ns, "inbox", "--as", "bob").err).To(ContainSubstring("Nothing waits on you."))
		inbox := plugin(ctx, ns, "inbox", "--as", "alice")
		Expect(inbox.code).To(Equal(0), inbox.err)
		Expect(inbox.err).To(ContainSubstring("You may not list Gates in every namespace; namespace " + ns + " only."))
		Expect(inbox.out).To(MatchRegexp(`(?m)^%s\s+%s\s+plan\s+input: notify,reviewers,version\s+\S+\s+Which version ships\?$`, ns, name))

		bad := plugin(ctx, ns, "answer", name, "plan", "--as", "alice", "--set", "version=1.0", "--set", "notify=yes")
		Expect(bad.code).To(Equal(1))
		Expect(bad.err).To(ContainSubstring(`--set notify: "yes" is not true or false`))
		bad = plugin(ctx, ns, "answer", name, "plan", "--as", "alice", "--set", "version=1.0")
		Expect(bad.err).To(And(ContainSubstring("the answer does not fit the question of Gate "+gate),
			ContainSubstring(`values.version`), ContainSubstring(`^v[0-9]+$`)))
		bad = plugin(ctx, ns, "answer", name, "plan", "--as", "alice")
		Expect(bad.err).To(ContainSubstring("values.version: Required value"))
		bad = plugin(ctx, ns, "answer", name, "ship", "--as", "alice", "--set", "version=v1")
		Expect(bad.err).To(ContainSubstring("step ship of Run " + name + " waits on no question"))

		refused := plugin(ctx, ns, "answer", name, "plan", "--as", "bob", "--set", "version=v3")
		Expect(refused.code).To(Equal(1))
		Expect(refused.err).To(ContainSubstring("bob may not decide this Gate"))

		file := GinkgoT().TempDir() + "/answer.yaml"
		Expect(writeFile(file, "version: v2\nreviewers: [dana, eli]\n")).To(Succeed())
		answered := plugin(ctx, ns, "answer", name, "plan", "--as", "alice", "-f", file, "--set", "version=v3", "-m", "per QA")
		Expect(answered.code).To(Equal(0), answered.err)
		Expect(answered.out).To(Equal("gate.ergon.dev/" + gate + " answered\n"))

		var res result
		Eventually(followed, 30*time.Second).Should(Receive(&res))
		Expect(res.code).To(Equal(0), res.err)
		Expect(res.out).To(ContainSubstring("step plan Waiting: waiting on Gate " + gate +
			"; answer with: kubectl ergon answer " + name + " plan --set name=value -n " + ns))
		out := plugin(ctx, ns, "output", name, "plan")
		Expect(out.out).To(MatchJSON(`{"version": "v3", "notify": false, "reviewers": ["dana", "eli"]}`),
			"the file, the --set over it, and the schema's default")

		g := &ergonv1alpha1.Gate{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: gate}, g)).To(Succeed())
		Expect(g.Spec.Decision.User).To(Equal("alice"), "the webhook stamps who answered")
		Expect(g.Spec.Decision.Comment).To(Equal("per QA"))
		Expect(plugin(ctx, ns, "inbox", "--as", "alice").err).To(ContainSubstring("Nothing waits on you."))
	})
})
