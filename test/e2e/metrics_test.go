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
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

// scrape gets the manager's /metrics through its Service, as Prometheus does, with token
// (none when empty), from inside the local cluster's network, and returns the status and the
// body.
func scrape(ctx SpecContext, token string) (int, string) {
	svc := &corev1.Service{}
	Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: managerNamespace, Name: "ergon-metrics"}, svc)).To(Succeed())
	url := "https://" + net.JoinHostPort(svc.Spec.ClusterIP, strconv.Itoa(int(svc.Spec.Ports[0].Port))) + "/metrics"
	// The manager's metrics certificate is its own (the chart's ServiceMonitor skips the check too).
	args := []string{"exec", "curl", "-sS", "-k", "--max-time", "10", "-w", "\n%{http_code}"}
	if token != "" {
		// From a file, so that the token is not on a command line.
		header := filepath.Join(GinkgoT().TempDir(), "auth")
		Expect(os.WriteFile(header, []byte("Authorization: Bearer "+token+"\n"), 0o600)).To(Succeed())
		args = append(args, "-H", "@"+header)
	}
	cmd := exec.CommandContext(ctx, "hack/local-cluster.sh", append(args, url)...)
	cmd.Dir = repoRoot
	out, err := cmd.Output()
	Expect(err).NotTo(HaveOccurred(), "curl %s", url)
	// -w prints the status after the body, on a line of its own.
	i := strings.LastIndex(string(out), "\n")
	body, code := string(out[:max(i, 0)]), string(out[i+1:])
	status, err := strconv.Atoi(strings.TrimSpace(code))
	Expect(err).NotTo(HaveOccurred(), "curl's status line %q", code)
	return status, body
}

// sample is the value of the series line of body that starts with series, and whether there is one.
func sample(body, series string) (float64, bool) {
	for line := range strings.SplitSeq(body, "\n") {
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			Expect(err).NotTo(HaveOccurred(), line)
			return v, true
		}
	}
	return 0, false
}

var _ = Describe("The manager's metrics", func() {
	It("are served to a caller RBAC lets get /metrics, and count what waits and what admission refused", func(ctx SpecContext) {
		if !localCluster() {
			Skip("the manager is scraped from inside the local cluster's network")
		}
		ns := newNamespace(ctx)
		By("a caller with no token, and one without the metrics reader role, are refused")
		status, body := scrape(ctx, "")
		Expect(status).To(Equal(http.StatusUnauthorized), body)
		_, nobody := person(ctx, ns, "nobody")
		status, body = scrape(ctx, nobody)
		Expect(status).To(Equal(http.StatusForbidden), body)

		_, token := person(ctx, ns, "prometheus")
		binding := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "e2e-metrics-reader-"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "ergon-metrics-reader"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "prometheus", Namespace: ns}},
		}
		Expect(k8sClient.Create(ctx, binding)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, binding))).To(Succeed()) })
		// The manager asks the API server, whose authorizer learns of the binding a moment later.
		Eventually(func() int { status, _ := scrape(ctx, token); return status }).
			WithTimeout(time.Minute).Should(Equal(http.StatusOK))

		By("a refused Scene, and two Runs waiting on their Gates")
		_, before := scrape(ctx, token)
		refusedBefore, _ := sample(before, `ergon_admission_refusals_total{kind="Scene",operation="CREATE"}`)
		loop := &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: "loop", Namespace: ns}}
		loop.Spec.Steps = []ergonv1alpha1.Step{busyboxStep("a", "true", "b"), busyboxStep("b", "true", "a")}
		Expect(k8sClient.Create(ctx, loop)).NotTo(Succeed())
		runScene(ctx, ns, "ask", ergonv1alpha1.Step{Name: "review", Gate: &ergonv1alpha1.GateStep{Message: "Go?"}})
		Expect(k8sClient.Create(ctx, &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: "ask-2", Namespace: ns},
			Spec: ergonv1alpha1.RunSpec{SceneRef: corev1.LocalObjectReference{Name: "ask"}}})).To(Succeed())

		Eventually(func(g Gomega) {
			status, body := scrape(ctx, token)
			g.Expect(status).To(Equal(http.StatusOK))
			for series, want := range map[string]float64{
				`ergon_runs{namespace="` + ns + `",phase="Waiting"}`: 2,
				`ergon_gates_pending{namespace="` + ns + `"}`:        2,
			} {
				v, ok := sample(body, series)
				g.Expect(ok).To(BeTrue(), "no %s in the scrape", series)
				g.Expect(v).To(Equal(want), series)
			}
			oldest, ok := sample(body, `ergon_gates_oldest_pending_seconds{namespace="`+ns+`"}`)
			g.Expect(ok).To(BeTrue())
			g.Expect(oldest).To(BeNumerically("<", 600))
			refused, _ := sample(body, `ergon_admission_refusals_total{kind="Scene",operation="CREATE"}`)
			g.Expect(refused).To(BeNumerically(">=", refusedBefore+1))
			// The census is reported by the leader alone: one manager, one series per namespace.
			g.Expect(strings.Count(body, `ergon_gates_pending{namespace="`+ns+`"}`)).To(Equal(1))
		}).WithTimeout(2 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
	})
})
