//go:build e2e && chaos

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
	"bufio"
	"bytes"
	"fmt"
	"os/exec"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

// The chaos suite's disruptions of the local cluster (hack/local-cluster.sh), and the checks
// that each disrupted part is back.

// localClusterCmd runs hack/local-cluster.sh with ARGS, its output to the spec's log.
func localClusterCmd(args ...string) error {
	cmd := exec.Command("hack/local-cluster.sh", args...)
	cmd.Dir = repoRoot
	cmd.Stdout, cmd.Stderr = GinkgoWriter, GinkgoWriter
	return cmd.Run()
}

// restartComponent kills one component of the local cluster with SIGKILL and starts it
// again; the script returns once etcd, the API server or containerd answers again.
func restartComponent(name string) {
	Expect(localClusterCmd("restart", name)).To(Succeed(), "restart %s", name)
}

// managerPod returns the manager's pod (the chart runs one replica).
func managerPod(ctx SpecContext) *corev1.Pod {
	pods := &corev1.PodList{}
	Expect(k8sClient.List(ctx, pods, client.InNamespace(managerNamespace),
		client.MatchingLabels{"app.kubernetes.io/name": "ergon", "app.kubernetes.io/component": "manager"})).To(Succeed())
	Expect(pods.Items).To(HaveLen(1), "one manager pod")
	return &pods.Items[0]
}

func containerStatus(pod *corev1.Pod, name string) corev1.ContainerStatus {
	for _, c := range pod.Status.ContainerStatuses {
		if c.Name == name {
			return c
		}
	}
	Fail(fmt.Sprintf("pod %s has no container %s", pod.Name, name))
	return corev1.ContainerStatus{}
}

// killContainer kills every process of a container on the node with SIGKILL: no grace, no
// API call, as a crash or the OOM killer would.
func killContainer(pod *corev1.Pod, container string) error {
	id := containerStatus(pod, container).ContainerID
	_, id, _ = strings.Cut(id, "://")
	if id == "" {
		return fmt.Errorf("pod %s: container %s has not started", pod.Name, container)
	}
	return localClusterCmd("kill-container", id)
}

// killManagerProcess kills the manager's process (kill -9 on the node); the kubelet starts
// the container again. It returns a check that the restarted manager is Ready.
func killManagerProcess(ctx SpecContext) func(Gomega) {
	pod := managerPod(ctx)
	restarts := containerStatus(pod, "manager").RestartCount
	Expect(killContainer(pod, "manager")).To(Succeed())
	return func(g Gomega) {
		now := &corev1.Pod{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(pod), now)).To(Succeed())
		c := containerStatus(now, "manager")
		g.Expect(c.RestartCount).To(BeNumerically(">", restarts))
		g.Expect(c.Ready).To(BeTrue())
	}
}

// deleteManagerPod deletes the manager's pod with no grace (kubectl delete --force); the
// Deployment makes another, which must wait out the old leader's lease.
func deleteManagerPod(ctx SpecContext) func(Gomega) {
	pod := managerPod(ctx)
	Expect(k8sClient.Delete(ctx, pod, client.GracePeriodSeconds(0))).To(Succeed())
	return func(g Gomega) {
		pods := &corev1.PodList{}
		g.Expect(k8sClient.List(ctx, pods, client.InNamespace(managerNamespace), client.MatchingLabels(pod.Labels))).To(Succeed())
		g.Expect(pods.Items).To(HaveLen(1))
		now := &pods.Items[0]
		g.Expect(now.UID).NotTo(Equal(pod.UID))
		g.Expect(now.Status.ContainerStatuses).NotTo(BeEmpty())
		g.Expect(containerStatus(now, "manager").Ready).To(BeTrue())
	}
}

// apiReady checks that the API server answers /readyz, etcd included.
func apiReady(ctx SpecContext) func(Gomega) {
	return func(g Gomega) {
		_, err := clientset.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		g.Expect(err).NotTo(HaveOccurred())
	}
}

// nodeReadySince checks that the kubelet has reported the node Ready after a time.
func nodeReadySince(ctx SpecContext, since time.Time) func(Gomega) {
	return func(g Gomega) {
		nodes := &corev1.NodeList{}
		g.Expect(k8sClient.List(ctx, nodes)).To(Succeed())
		g.Expect(nodes.Items).NotTo(BeEmpty())
		for _, n := range nodes.Items {
			var ready *corev1.NodeCondition
			for i := range n.Status.Conditions {
				if n.Status.Conditions[i].Type == corev1.NodeReady {
					ready = &n.Status.Conditions[i]
				}
			}
			g.Expect(ready).NotTo(BeNil())
			g.Expect(ready.Status).To(Equal(corev1.ConditionTrue), n.Name)
			g.Expect(ready.LastHeartbeatTime.Time).To(BeTemporally(">", since.Truncate(time.Second)), n.Name)
		}
	}
}

// killStepPods kills the processes of up to n running pods of a step, on the node, and
// returns their names (each such attempt must fail and be retried) and the first kill's time.
func killStepPods(ctx SpecContext, ns, step string, n int) ([]string, time.Time) {
	var killed []string
	var first time.Time
	Eventually(func(g Gomega) {
		pods := &corev1.PodList{}
		g.Expect(k8sClient.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{ergonv1alpha1.LabelStep: step})).To(Succeed())
		for i := range pods.Items {
			p := &pods.Items[i]
			if len(killed) == n || p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil {
				continue
			}
			c := p.Status.ContainerStatuses
			if len(c) == 0 || c[0].State.Running == nil || time.Since(c[0].State.Running.StartedAt.Time) > 4*time.Second {
				continue // the step sleeps 8 s: kill only those sure to be still at work
			}
			at := time.Now()
			if killContainer(p, c[0].Name) == nil {
				killed = append(killed, p.Name)
				if first.IsZero() {
					first = at
				}
			}
		}
		g.Expect(killed).NotTo(BeEmpty(), "no running %s pod to kill", step)
	}).WithTimeout(time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())
	return killed, first
}

// ensureClusterHealthy starts again any component of the local cluster that died and waits
// until `hack/local-cluster.sh status` says none is dead, the API server is ready and CoreDNS
// and the provisioner are, and the manager is Ready: the cluster is left as the suite found
// it. (A component the cluster was started without, "stopped", is left alone.)
func ensureClusterHealthy(ctx SpecContext) {
	status := func() string {
		cmd := exec.Command("hack/local-cluster.sh", "status")
		cmd.Dir = repoRoot
		out, _ := cmd.CombinedOutput()
		return string(out)
	}
	sc := bufio.NewScanner(bytes.NewBufferString(status()))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[1] == "DEAD" && f[0] != "holder" {
			GinkgoWriter.Printf("chaos: %s is not running; starting it again\n", f[0])
			_ = localClusterCmd("restart", f[0])
		}
	}
	Eventually(func(g Gomega) {
		out := status()
		g.Expect(out).NotTo(ContainSubstring("DEAD"))
		g.Expect(out).To(MatchRegexp(`api server +ready`))
		g.Expect(strings.Count(out, "ready 1/1")).To(Equal(2), out)
	}).WithTimeout(3 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
	Eventually(func(g Gomega) {
		d := &appsv1.Deployment{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: managerNamespace, Name: "ergon-manager"}, d)).To(Succeed())
		g.Expect(d.Status.ReadyReplicas).To(BeEquivalentTo(1))
	}).WithTimeout(3 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
}
