//go:build e2e && fullsize

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
	"encoding/json"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

// etcdGrowthBound is what the full-size Run may add to etcd's database at the chart's
// defaults (docs/limits.md): the 16 MiB of outputs one Run may keep, plus the churn of the
// pods, Events and status writes of the units it ran before its step failed.
const etcdGrowthBound = 64 << 20

// etcdSize is the size of etcd's database as the API server last measured it
// (apiserver_storage_size_bytes, polled by the API server every 30 s).
func etcdSize(ctx SpecContext) float64 {
	raw, err := clientset.RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	Expect(err).NotTo(HaveOccurred())
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	total := 0.0
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "apiserver_storage_size_bytes{") {
			continue
		}
		fields := strings.Fields(line)
		v, err := strconv.ParseFloat(fields[len(fields)-1], 64)
		Expect(err).NotTo(HaveOccurred(), line)
		total += v
	}
	Expect(total).To(BeNumerically(">", 0), "the API server reports apiserver_storage_size_bytes")
	return total
}

// bigFanOut is a forEach step over 1,000 items whose instances each hand back 512 KiB.
func bigFanOut(name string) ergonv1alpha1.Step {
	items := make([]int, 1000)
	for i := range items {
		items[i] = i
	}
	raw, err := json.Marshal(items)
	Expect(err).NotTo(HaveOccurred())
	step := busyboxStep(name, `head -c 524288 /dev/zero | tr '\0' x > "$ERGON_OUTPUT"`)
	step.ForEach = &ergonv1alpha1.ForEach{Items: &apiextensionsv1.JSON{Raw: raw}}
	return step
}

// chain runs a Scene of three steps one after the other and returns how long the Run took
// and how long its first step waited for its pod to be asked for.
func chain(ctx SpecContext, ns, name string) (took, firstStep time.Duration) {
	started := time.Now()
	run := runScene(ctx, ns, name, busyboxStep("a", "true"), busyboxStep("b", "true", "a"), busyboxStep("c", "true", "b"))
	run = finished(ctx, run)
	Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded), "%+v", run.Status)
	a := stepOf(run, "a")
	Expect(a.StartedAt).NotTo(BeNil())
	return time.Since(started), a.StartedAt.Sub(run.CreationTimestamp.Time)
}

// The full-size run at the chart's defaults: 2,000 units handing back 512 KiB each in
// one namespace, a small Run in another.
var _ = Describe("Full size", func() {
	It("keeps etcd within the bound, finishes the small Run on time and ends the big one clearly", func(ctx SpecContext) {
		big, small := newNamespace(ctx), newNamespace(ctx)
		idle, _ := chain(ctx, small, "idle")
		before := etcdSize(ctx)

		scene := &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: "big", Namespace: big}}
		scene.Spec.Steps = []ergonv1alpha1.Step{bigFanOut("left"), bigFanOut("right")}
		Expect(k8sClient.Create(ctx, scene)).To(Succeed())
		run := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: "big-1", Namespace: big},
			Spec: ergonv1alpha1.RunSpec{SceneRef: corev1.LocalObjectReference{Name: "big"}}}
		Expect(k8sClient.Create(ctx, run)).To(Succeed())
		Eventually(func(g Gomega) {
			pods := &corev1.PodList{}
			g.Expect(k8sClient.List(ctx, pods, client.InNamespace(big))).To(Succeed())
			g.Expect(len(pods.Items)).To(BeNumerically(">=", 10))
		}).WithTimeout(2 * time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())

		loaded, firstStep := chain(ctx, small, "loaded")
		GinkgoWriter.Printf("3-step chain: idle %s, beside the full-size Run %s (%.2fx); its first step started %s "+
			"after the Run was created\n", idle.Round(time.Millisecond), loaded.Round(time.Millisecond),
			loaded.Seconds()/idle.Seconds(), firstStep)

		run = finished(ctx, run)
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunFailed), "%+v", run.Status)
		reasons := []string{}
		for _, s := range run.Status.Steps {
			reasons = append(reasons, s.Reason)
			if s.Reason == ergonv1alpha1.ReasonOutputTooLarge {
				Expect(s.Message).To(ContainSubstring("--max-"), "the message names the limit's flag")
				GinkgoWriter.Printf("step %s: %s\n", s.Name, s.Message)
			}
		}
		Expect(reasons).To(ContainElement(ergonv1alpha1.ReasonOutputTooLarge))
		if run.Status.Storage != nil {
			GinkgoWriter.Printf("the Run keeps %+v\n", *run.Status.Storage)
		}

		// The API server measures the database every 30 s.
		time.Sleep(35 * time.Second)
		grown := etcdSize(ctx) - before
		GinkgoWriter.Printf("etcd's database grew by %.1f MiB (bound %d MiB)\n", grown/(1<<20), etcdGrowthBound>>20)
		Expect(grown).To(BeNumerically("<=", etcdGrowthBound))
		// The manager serves the small Run at once: its first step's pod is asked for within
		// 5 s, whatever the big Run holds. How long the pods then take to run is the node's:
		// on a 2-core single-node cluster, the big Run's pods share its CPU.
		Expect(firstStep).To(BeNumerically("<=", 5*time.Second), "the small Run's first step starts promptly")
	})
})
