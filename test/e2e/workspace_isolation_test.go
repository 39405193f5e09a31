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
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

// wsReaches reports whether a TCP connection from the workspace pod to addr is answered, as
// reaches does for any pod: any HTTP answer means the connection was made.
func wsReaches(ctx context.Context, ns, pod, addr string) bool {
	host, port, _ := strings.Cut(addr, ":")
	out := shell(ctx, ns, pod, fmt.Sprintf(`printf 'GET / HTTP/1.0\r\n\r\n' | nc -w 3 %s %s 2>&1 | head -c 64`, host, port))
	GinkgoWriter.Printf("workspace pod to %s: %q\n", addr, out)
	return strings.Contains(out, "HTTP/1.")
}

// apiServerEndpoint is the address the API server itself listens on, behind the kubernetes
// Service: on the local cluster, the host's address.
func apiServerEndpoint(ctx context.Context) string {
	GinkgoHelper()
	slices := &discoveryv1.EndpointSliceList{}
	Expect(k8sClient.List(ctx, slices, client.InNamespace("default"),
		client.MatchingLabels{discoveryv1.LabelServiceName: "kubernetes"})).To(Succeed())
	for _, s := range slices.Items {
		for _, e := range s.Endpoints {
			if len(e.Addresses) > 0 && len(s.Ports) > 0 && s.Ports[0].Port != nil {
				return net.JoinHostPort(e.Addresses[0], strconv.Itoa(int(*s.Ports[0].Port)))
			}
		}
	}
	Fail("the kubernetes Service has no endpoint")
	return ""
}

var _ = Describe("A Workspace's isolation on a real cluster", func() {
	BeforeEach(func() {
		if !localCluster() {
			Skip("only the local cluster is known to enforce NetworkPolicy")
		}
	})

	It("has no token, reaches only its cidrs, never the API server or another namespace's pods, and nothing with egress Deny",
		func(ctx SpecContext) {
			start := time.Now()
			otherNS, wsNS := newNamespace(ctx), newNamespace(ctx)
			const web = `mkdir -p /tmp/www && echo ok > /tmp/www/index.html && exec httpd -f -p 8080 -h /tmp/www`
			allowed := runningPod(ctx, restrictedPod(otherNS, "allowed", web))
			other := runningPod(ctx, restrictedPod(otherNS, "other", web))
			allowedAddr, otherAddr := allowed.Status.PodIP+":8080", other.Status.PodIP+":8080"
			api := &corev1.Service{}
			Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: "default", Name: "kubernetes"}, api)).To(Succeed())
			apiAddr, apiHost := api.Spec.ClusterIP+":443", apiServerEndpoint(ctx)

			ws := e2eWorkspace(wsNS, "desk", "mallory@example.com")
			ws.Spec.Network = &ergonv1alpha1.WorkspaceNetwork{Egress: ergonv1alpha1.EgressCIDRs,
				CIDRs: []string{allowed.Status.PodIP + "/32"}}
			Expect(k8sClient.Create(ctx, ws)).To(Succeed())
			pod := runningWorkspace(ctx, wsNS, "desk", "")

			By("no Kubernetes credentials in the pod")
			const sa = "/var/run/secrets/kubernetes.io/serviceaccount"
			Expect(shell(ctx, wsNS, pod.Name, "ls "+sa+" 2>/dev/null; test -e "+sa+"/token && echo token || echo none")).
				To(Equal("none\n"))

			By("egress CIDRs: the listed pod only")
			Eventually(func() bool { return wsReaches(ctx, wsNS, pod.Name, allowedAddr) }).
				WithTimeout(30*time.Second).WithPolling(time.Second).Should(BeTrue(), "the pod its cidrs allow")
			Expect(wsReaches(ctx, wsNS, pod.Name, otherAddr)).To(BeFalse(), "another namespace's pod outside its cidrs")
			Expect(wsReaches(ctx, wsNS, pod.Name, apiAddr)).To(BeFalse(), "the API server's Service")
			Expect(wsReaches(ctx, wsNS, pod.Name, apiHost)).To(BeFalse(), "the API server on the host")
			By("the other pods are reachable from outside the Workspace: its policy, not the network, stops it")
			Expect(reaches(allowed, otherAddr)).To(BeTrue())

			By("egress Deny: nothing at all")
			Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
				if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(ws), ws); err != nil {
					return err
				}
				ws.Spec.Network = &ergonv1alpha1.WorkspaceNetwork{Egress: ergonv1alpha1.EgressDeny}
				return k8sClient.Update(ctx, ws)
			})).To(Succeed())
			Eventually(func() bool { return wsReaches(ctx, wsNS, pod.Name, allowedAddr) }).
				WithTimeout(30*time.Second).WithPolling(time.Second).Should(BeFalse(), "the pod its cidrs allowed before")
			Expect(wsReaches(ctx, wsNS, pod.Name, otherAddr)).To(BeFalse())
			Expect(wsReaches(ctx, wsNS, pod.Name, apiAddr)).To(BeFalse())
			Expect(wsReaches(ctx, wsNS, pod.Name, apiHost)).To(BeFalse())
			current := &corev1.Pod{}
			Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(pod), current)).To(Succeed())
			Expect(current.UID).To(Equal(pod.UID), "a network change does not replace the pod")
			GinkgoWriter.Printf("workspace isolation: %s\n", time.Since(start).Round(100*time.Millisecond))
		})
})
