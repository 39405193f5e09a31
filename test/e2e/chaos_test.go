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
	"context"
	"fmt"
	"os/exec"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

// The chaos suite (make test-chaos): while 30 Runs of a diamond with a Gate are active, the
// manager, the API server, etcd, the kubelet and containerd are killed with SIGKILL in turn
// and started again. Afterwards every Run must have succeeded, no attempt may have had two
// pods (one pod UID per attempt name), every Gate must have been decided once, and each Run's
// status must be whole. It prints how long the cluster took to run a new Run after each kill.

const chaosRuns = 30

// podUIDs records every pod UID seen per pod name, from a watch that survives restarts of
// the API server by watching again.
type podUIDs struct {
	mu   sync.Mutex
	uids map[string]map[types.UID]bool
}

func watchPodUIDs(ctx context.Context, ns string) *podUIDs {
	p := &podUIDs{uids: map[string]map[types.UID]bool{}}
	go func() {
		defer GinkgoRecover()
		for ctx.Err() == nil {
			w, err := clientset.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{})
			if err != nil {
				time.Sleep(time.Second)
				continue
			}
			for e := range w.ResultChan() {
				if pod, ok := e.Object.(*corev1.Pod); ok && e.Type != watch.Error {
					p.mu.Lock()
					if p.uids[pod.Name] == nil {
						p.uids[pod.Name] = map[types.UID]bool{}
					}
					p.uids[pod.Name][pod.UID] = true
					p.mu.Unlock()
				}
			}
		}
	}()
	return p
}

func (p *podUIDs) reused() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string]int{}
	for name, uids := range p.uids {
		if len(uids) > 1 {
			out[name] = len(uids)
		}
	}
	return out
}

// approveGates decides every Gate of the namespace that is still open, until ctx ends, and
// counts the decisions it made per Gate.
func approveGates(ctx context.Context, ns string) map[string]int {
	decided := map[string]int{}
	var mu sync.Mutex
	go func() {
		defer GinkgoRecover()
		for ctx.Err() == nil {
			gates := &ergonv1alpha1.GateList{}
			if err := k8sClient.List(ctx, gates, client.InNamespace(ns)); err == nil {
				for i := range gates.Items {
					g := &gates.Items[i]
					if g.Spec.Decision != nil {
						continue
					}
					patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"decision":{"option":"approve"}}}`))
					if k8sClient.Patch(ctx, g, patch) == nil {
						mu.Lock()
						decided[g.Name]++
						mu.Unlock()
					}
				}
			}
			time.Sleep(time.Second)
		}
	}()
	return decided
}

// restartComponent kills one component of the local cluster and starts it again.
func restartComponent(name string) {
	cmd := exec.Command("hack/local-cluster.sh", "restart", name)
	cmd.Dir = repoRoot
	cmd.Stdout, cmd.Stderr = GinkgoWriter, GinkgoWriter
	Expect(cmd.Run()).To(Succeed(), "restart %s", name)
}

// killManager kills the manager's pod as kill -9 would: no grace.
func killManager(ctx context.Context) {
	pods := &corev1.PodList{}
	Expect(k8sClient.List(ctx, pods, client.InNamespace(managerNamespace),
		client.MatchingLabels{"app.kubernetes.io/name": "ergon", "app.kubernetes.io/component": "manager"})).To(Succeed())
	Expect(pods.Items).NotTo(BeEmpty())
	for i := range pods.Items {
		Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, &pods.Items[i], client.GracePeriodSeconds(0)))).To(Succeed())
	}
}

// probe runs a one-step Run and returns how long it took to succeed: the recovery time.
func probe(ctx SpecContext, ns string, n int, since time.Time) time.Duration {
	run := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("probe-%d", n), Namespace: ns},
		Spec: ergonv1alpha1.RunSpec{SceneRef: corev1.LocalObjectReference{Name: "probe"}}}
	Eventually(func() error { return k8sClient.Create(ctx, run) }).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
	Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(run), run)).To(Succeed())
		g.Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded))
	}).WithTimeout(5 * time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())
	return time.Since(since)
}

var _ = Describe("Chaos", Ordered, func() {
	It("finishes 30 Runs of a diamond correctly while the manager and the cluster's components are killed in turn", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		uids := watchPodUIDs(ctx, ns)
		gateCtx, stopGates := context.WithCancel(ctx)
		defer stopGates()
		decided := approveGates(gateCtx, ns)

		step := func(name string, deps ...string) ergonv1alpha1.Step {
			s := busyboxStep(name, `sleep 5; echo -n "$ERGON_STEP of $ERGON_RUN" > "$ERGON_OUTPUT"`, deps...)
			s.Retry = &ergonv1alpha1.RetryPolicy{Limit: 3, Backoff: &ergonv1alpha1.Backoff{Duration: &metav1.Duration{Duration: 2 * time.Second}}}
			return s
		}
		gate := ergonv1alpha1.Step{Name: "review", DependsOn: []string{"fetch"}, Gate: &ergonv1alpha1.GateStep{Message: "go on?"}}
		diamond := &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: "diamond", Namespace: ns}}
		diamond.Spec.Steps = []ergonv1alpha1.Step{step("fetch"), step("left", "fetch"), gate, step("join", "left", "review")}
		Expect(k8sClient.Create(ctx, diamond)).To(Succeed())
		probeScene := &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: ns}}
		probeScene.Spec.Steps = []ergonv1alpha1.Step{busyboxStep("ping", `echo -n pong > "$ERGON_OUTPUT"`)}
		Expect(k8sClient.Create(ctx, probeScene)).To(Succeed())
		for i := range chaosRuns {
			run := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("diamond-%02d", i), Namespace: ns},
				Spec: ergonv1alpha1.RunSpec{SceneRef: corev1.LocalObjectReference{Name: "diamond"}}}
			Expect(k8sClient.Create(ctx, run)).To(Succeed())
		}

		disruptions := []struct {
			name string
			do   func()
		}{
			{"manager (kill -9)", func() { killManager(ctx) }},
			{"kube-apiserver", func() { restartComponent("kube-apiserver") }},
			{"etcd", func() { restartComponent("etcd") }},
			{"kubelet", func() { restartComponent("kubelet") }},
			{"containerd", func() { restartComponent("containerd") }},
		}
		for i, d := range disruptions {
			time.Sleep(5 * time.Second) // let work be under way
			start := time.Now()
			d.do()
			recovery := probe(ctx, ns, i, start)
			GinkgoWriter.Printf("chaos: %-20s recovered in %s (a new one-step Run succeeded)\n", d.name, recovery.Round(100*time.Millisecond))
			AddReportEntry("recovery after "+d.name, recovery.Round(100*time.Millisecond).String())
		}

		var runs []ergonv1alpha1.Run
		Eventually(func(g Gomega) {
			list := &ergonv1alpha1.RunList{}
			g.Expect(k8sClient.List(ctx, list, client.InNamespace(ns))).To(Succeed())
			runs = nil
			for _, r := range list.Items {
				if r.Spec.SceneRef.Name == "diamond" {
					g.Expect(r.Status.Phase.Finished()).To(BeTrue(), "%s is %s", r.Name, r.Status.Phase)
					runs = append(runs, r)
				}
			}
			g.Expect(runs).To(HaveLen(chaosRuns))
		}).WithTimeout(10 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
		stopGates()

		for _, r := range runs {
			Expect(r.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded), "%s: %+v", r.Name, r.Status)
			Expect(r.Status.Progress).To(Equal("4/4"), r.Name)
			Expect(r.Status.Outputs).To(HaveKeyWithValue("join", HaveField("Preview", "join of "+r.Name)), r.Name)
			for _, s := range r.Status.Steps {
				Expect(s.Phase).To(Equal(ergonv1alpha1.StepSucceeded), "%s/%s", r.Name, s.Name)
				if s.Name == "review" {
					Expect(s.Decision).To(Equal("approve"), r.Name)
				}
			}
		}
		Expect(uids.reused()).To(BeEmpty(), "pod names created more than once (an attempt ran twice)")
		for name, n := range decided {
			Expect(n).To(BeNumerically("<=", 1), "Gate %s was decided %d times", name, n)
		}
		gates := &ergonv1alpha1.GateList{}
		Expect(k8sClient.List(ctx, gates, client.InNamespace(ns))).To(Succeed())
		Expect(gates.Items).To(HaveLen(chaosRuns), "one Gate per Run")
		for _, g := range gates.Items {
			Expect(g.Status.Option).To(Equal("approve"), "Gate %s: %+v", g.Name, g.Status)
		}
	})
})
