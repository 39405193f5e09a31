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
	"os/exec"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/naming"
)

var _ = Describe("Admission on a real cluster", func() {
	It("makes kubectl refuse a Scene whose steps form a cycle", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		cmd := exec.CommandContext(ctx, "kubectl", "apply", "-n", ns, "-f", "-")
		cmd.Stdin = strings.NewReader(`apiVersion: ergon.dev/v1alpha1
kind: Scene
metadata: {name: loop}
spec:
  steps:
    - {name: a, dependsOn: [b], container: {image: x, command: ["true"]}}
    - {name: b, dependsOn: [a], container: {image: x, command: ["true"]}}
`)
		out, err := cmd.CombinedOutput()
		GinkgoWriter.Printf("kubectl apply said:\n%s\n", out)
		Expect(err).To(HaveOccurred(), "kubectl accepted the Scene")
		Expect(string(out)).To(ContainSubstring("steps form a cycle: a -> b -> a"))
	})

	It("lets a user bound to ergon-gate-approver approve a Gate, stamped with that user", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		Expect(k8sClient.Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "dave-approves", Namespace: ns},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "ergon-gate-approver"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "dave"}},
		})).To(Succeed())
		run := runScene(ctx, ns, "ask",
			ergonv1alpha1.Step{Name: "review", Gate: &ergonv1alpha1.GateStep{Message: "Go?"}},
			busyboxStep("after", `echo -n went {{ .steps.review.decision | shquote }} > "$ERGON_OUTPUT"`, "review"))
		gate := &ergonv1alpha1.Gate{}
		Eventually(func() error {
			return k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: naming.GateName("ask-1", "review")}, gate)
		}).WithTimeout(time.Minute).Should(Succeed())

		// dave's requests, as kubectl --as=dave sends them: the webhook sees dave.
		asDave := rest.CopyConfig(cfg)
		asDave.Impersonate = rest.ImpersonationConfig{UserName: "dave"}
		dave, err := client.New(asDave, client.Options{Scheme: scheme})
		Expect(err).NotTo(HaveOccurred())
		patch := []byte(`{"spec":{"decision":{"option":"approve","comment":"go","user":"someone-else"}}}`)
		Expect(dave.Patch(ctx, gate, client.RawPatch(types.MergePatchType, patch))).To(Succeed())
		Expect(gate.Spec.Decision.User).To(Equal("dave"))

		run = finished(ctx, run)
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded), "%+v", run.Status)
		Expect(stepOf(run, "after").Output.Preview).To(Equal("went approve"))
	})
})
