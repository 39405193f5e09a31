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
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

// pluginBinary is kubectl-ergon, built once for the specs that drive Ergon with it only, in a
// folder of the suite's (a spec's TempDir goes with the spec that made it).
var pluginBinary = func() func() string {
	var path string
	return func() string {
		if path == "" {
			dir, err := os.MkdirTemp("", "ergon-e2e-plugin-")
			Expect(err).NotTo(HaveOccurred())
			pluginDir = dir
			path = filepath.Join(dir, "kubectl-ergon")
			cmd := exec.Command("go", "build", "-o", path, "./cmd/kubectl-ergon")
			cmd.Dir = repoRoot
			out, err := cmd.CombinedOutput()
			Expect(err).NotTo(HaveOccurred(), string(out))
		}
		return path
	}
}()

// pluginDir holds the plugin built for the suite; it goes when the suite ends.
var pluginDir string

var _ = AfterSuite(func() {
	if pluginDir != "" {
		Expect(os.RemoveAll(pluginDir)).To(Succeed())
	}
})

// ergon runs the plugin against the cluster of KUBECONFIG.
func ergon(ns string, args ...string) *exec.Cmd {
	cmd := exec.Command(pluginBinary(), append([]string{"-n", ns}, args...)...)
	cmd.Env = os.Environ()
	return cmd
}

// ran is a finished plugin command: its exit code and output.
func ran(cmd *exec.Cmd) (int, string, string) {
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else {
		Expect(err).NotTo(HaveOccurred())
	}
	GinkgoWriter.Printf("$ kubectl ergon %s\n%s%s(exit %d)\n", strings.Join(cmd.Args[1:], " "), out.String(), errOut.String(), code)
	return code, out.String(), errOut.String()
}

var _ = Describe("kubectl-ergon on a real cluster", func() {
	It("drives a gated Scene to Succeeded, shows a failed step's log, and prints a 900 KiB output byte for byte", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		review := ergonv1alpha1.Step{Name: "review", DependsOn: []string{"build"}, Gate: &ergonv1alpha1.GateStep{Message: "Ship it?"}}
		gated := &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: "gated", Namespace: ns}, Spec: ergonv1alpha1.SceneSpec{
			Steps: []ergonv1alpha1.Step{busyboxStep("build", `echo -n built > "$ERGON_OUTPUT"`), review,
				busyboxStep("ship", `echo -n shipped > "$ERGON_OUTPUT"`, "review")}}}
		failing := &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: "failing", Namespace: ns}, Spec: ergonv1alpha1.SceneSpec{
			Steps: []ergonv1alpha1.Step{busyboxStep("compile", `echo compiling; echo "error: the build is broken" >&2; exit 3`)}}}
		big := &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: "big", Namespace: ns}, Spec: ergonv1alpha1.SceneSpec{
			Steps: []ergonv1alpha1.Step{busyboxStep("produce", `seq 1 200000 | head -c 921600 > "$ERGON_OUTPUT"`)}}}
		for _, s := range []*ergonv1alpha1.Scene{gated, failing, big} {
			Expect(k8sClient.Create(ctx, s)).To(Succeed())
		}
		// carol may decide Gates of the namespace, as the role ergon-gate-approver allows.
		Expect(k8sClient.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "carol"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "ergon-gate-approver"},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: "carol"}}})).To(Succeed())

		By("following the gated Run in the background and approving as carol")
		var followOut, followErr bytes.Buffer
		follow := ergon(ns, "run", "gated", "--name", "gated-1", "--follow", "--timeout", "4m")
		follow.Stdout, follow.Stderr = &followOut, &followErr
		Expect(follow.Start()).To(Succeed())
		gate := &ergonv1alpha1.Gate{}
		Eventually(func(g Gomega) {
			run := &ergonv1alpha1.Run{}
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "gated-1"}, run)).To(Succeed())
			g.Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunWaiting))
			g.Expect(stepOf(run, "review").Gate).NotTo(BeEmpty())
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: stepOf(run, "review").Gate}, gate)).To(Succeed())
		}).WithTimeout(2 * time.Minute).Should(Succeed())
		code, out, _ := ran(ergon(ns, "gates", "--as", "carol"))
		Expect(code).To(Equal(0))
		Expect(out).To(ContainSubstring(gate.Name))
		code, out, errOut := ran(ergon(ns, "approve", gate.Name, "--as", "carol", "-m", "from e2e"))
		Expect(code).To(Equal(0), errOut)
		Expect(out).To(Equal("gate.ergon.dev/" + gate.Name + " decided approve\n"))
		done := make(chan error, 1)
		go func() { done <- follow.Wait() }()
		Eventually(done).WithTimeout(3*time.Minute).Should(Receive(BeNil()), "run --follow exits 0:\n%s%s", &followOut, &followErr)
		GinkgoWriter.Printf("$ kubectl ergon run gated --follow\n%s%s", &followOut, &followErr)
		Expect(followOut.String()).To(ContainSubstring("Run gated-1 Succeeded"))
		code, out, _ = ran(ergon(ns, "tree", "gated-1"))
		Expect(code).To(Equal(0))
		Expect(out).To(ContainSubstring(`Approved approve by carol "from e2e"`))

		By("following a failing Run to exit 1 with its log tail")
		code, out, _ = ran(ergon(ns, "run", "failing", "--follow", "--timeout", "3m"))
		Expect(code).To(Equal(1))
		Expect(out).To(MatchRegexp(`step compile failed: \w+: `))
		// stdout and stderr reach the log in the order the runtime reads its two pipes.
		Expect(out).To(And(ContainSubstring("\n  compiling\n"), ContainSubstring("\n  error: the build is broken\n")))

		By("printing a 900 KiB output byte for byte")
		code, out, errOut = ran(ergon(ns, "run", "big", "--name", "big-1", "--follow", "--timeout", "3m"))
		Expect(code).To(Equal(0), out+errOut)
		var want bytes.Buffer
		for i := 1; want.Len() < 921600; i++ {
			want.WriteString(strconv.Itoa(i) + "\n")
		}
		cmd := ergon(ns, "output", "big-1", "produce")
		var got bytes.Buffer
		cmd.Stdout, cmd.Stderr = &got, GinkgoWriter
		Expect(cmd.Run()).To(Succeed())
		Expect(got.Len()).To(Equal(921600))
		Expect(bytes.Equal(got.Bytes(), want.Bytes()[:921600])).To(BeTrue(), "the output differs from what the step wrote")
		_, _ = fmt.Fprintf(GinkgoWriter, "output: %d bytes, identical\n", got.Len())
	})
})
