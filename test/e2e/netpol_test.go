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
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// restrictedPod is a pod of the tool image that runs a shell script, hardened as Pod
// Security "restricted" asks.
func restrictedPod(ns, name, script string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": name}},
		Spec: corev1.PodSpec{
			AutomountServiceAccountToken:  new(false),
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: new(true), RunAsUser: new(int64(1000)),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Containers: []corev1.Container{{Name: "main", Image: toolImage, ImagePullPolicy: corev1.PullIfNotPresent,
				Command: []string{"sh", "-c", script},
				SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: new(false),
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}}},
		}}
}

func runningPod(ctx SpecContext, pod *corev1.Pod) *corev1.Pod {
	Expect(k8sClient.Create(ctx, pod)).To(Succeed())
	Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(pod), pod)).To(Succeed())
		g.Expect(pod.Status.Phase).To(Equal(corev1.PodRunning))
		g.Expect(pod.Status.PodIP).NotTo(BeEmpty())
	}).WithTimeout(time.Minute).Should(Succeed())
	return pod
}

// reaches reports whether a TCP connection from the pod to addr (host:port) is answered: any
// HTTP answer (the API server's 400 to plain HTTP included) means the connection was made; a
// timeout means the packets were dropped.
func reaches(pod *corev1.Pod, addr string) bool {
	host, port, _ := strings.Cut(addr, ":")
	cmd := exec.Command("hack/local-cluster.sh", "kubectl", "-n", pod.Namespace, "exec", pod.Name, "--",
		"sh", "-c", `printf 'GET / HTTP/1.0\r\n\r\n' | nc -w 3 "$0" "$1" | head -c 64`, host, port)
	cmd.Dir = repoRoot
	out, err := cmd.CombinedOutput()
	GinkgoWriter.Printf("%s to %s: %v %q\n", pod.Name, addr, err, out)
	return strings.Contains(string(out), "HTTP/1.")
}

var _ = Describe("NetworkPolicy on the local cluster", func() {
	BeforeEach(func() {
		if !localCluster() {
			Skip("only the local cluster is known to enforce NetworkPolicy")
		}
	})

	It("enforces a deny-all egress policy: no pod and no API server, and both again once it is gone", func(ctx SpecContext) {
		serverNS, clientNS := newNamespace(ctx), newNamespace(ctx)
		server := runningPod(ctx, restrictedPod(serverNS, "server",
			`mkdir -p /tmp/www && echo ok > /tmp/www/index.html && exec httpd -f -p 8080 -h /tmp/www`))
		probe := runningPod(ctx, restrictedPod(clientNS, "client", `exec sleep 3600`))
		podAddr := server.Status.PodIP + ":8080"
		api := &corev1.Service{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: "default", Name: "kubernetes"}, api)).To(Succeed())
		apiAddr := api.Spec.ClusterIP + ":443"

		By("without a policy the client reaches the other pod and the API server")
		Eventually(func() bool { return reaches(probe, podAddr) }).WithTimeout(30 * time.Second).Should(BeTrue())
		Expect(reaches(probe, apiAddr)).To(BeTrue())

		By("with a deny-all egress policy in its namespace it reaches neither")
		policy := &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "deny-egress", Namespace: clientNS},
			Spec: networkingv1.NetworkPolicySpec{PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}}}
		Expect(k8sClient.Create(ctx, policy)).To(Succeed())
		applied := time.Now()
		Eventually(func() bool { return reaches(probe, podAddr) }).WithTimeout(30 * time.Second).Should(BeFalse())
		GinkgoWriter.Printf("netpol: egress denied %s after the policy was created\n", time.Since(applied).Round(100*time.Millisecond))
		Expect(reaches(probe, apiAddr)).To(BeFalse(), "the API server")
		Expect(reaches(probe, podAddr)).To(BeFalse(), "still denied")

		By("the other namespace's pod is not affected: it still reaches the API server")
		other := runningPod(ctx, restrictedPod(serverNS, "other", `exec sleep 3600`))
		Eventually(func() bool { return reaches(other, apiAddr) }).WithTimeout(30 * time.Second).Should(BeTrue())

		By("once the policy is deleted the client reaches both again")
		Expect(k8sClient.Delete(ctx, policy)).To(Succeed())
		Eventually(func() bool { return reaches(probe, podAddr) }).WithTimeout(30 * time.Second).Should(BeTrue())
		Expect(reaches(probe, apiAddr)).To(BeTrue())
	})
})
