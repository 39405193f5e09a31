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

package controllers

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/naming"
)

func fanOut(s ergonv1alpha1.Step, parallelism int32, items ...any) ergonv1alpha1.Step {
	raw, err := json.Marshal(items)
	Expect(err).NotTo(HaveOccurred())
	s.ForEach = &ergonv1alpha1.ForEach{Items: &apiextensionsv1.JSON{Raw: raw}}
	if parallelism > 0 {
		s.ForEach.Parallelism = &parallelism
	}
	return s
}

func looping(s ergonv1alpha1.Step, until string, maxIterations int32) ergonv1alpha1.Step {
	s.Loop = &ergonv1alpha1.Loop{Until: until, MaxIterations: maxIterations}
	return s
}

// checkPassesOn answers a loop's iteration with {"pass": true} from the given iteration on,
// and every other pod with its last argument.
func checkPassesOn(iteration string) script {
	return func(pod *corev1.Pod) outcome {
		if it, ok := pod.Labels[ergonv1alpha1.LabelIteration]; ok {
			args := stepArgs(pod)
			out, _ := json.Marshal(map[string]any{"pass": it >= iteration, "said": args[len(args)-1]})
			return outcome{Output: string(out)}
		}
		if pod.Labels[ergonv1alpha1.LabelInstance] == "2" && pod.Labels[ergonv1alpha1.LabelAttempt] == "1" {
			return outcome{ExitCode: 1}
		}
		return echoLastArg(pod)
	}
}

var _ = Describe("Fan-out and loops", func() {
	BeforeEach(func() {
		kctx, stop := context.WithCancel(context.Background())
		DeferCleanup(stop)
		go testKubelet.run(kctx)
	})

	It("runs an instance per item and hands the fan-in step their outputs in order", func(ctx SpecContext) {
		ns := newNamespace(ctx, checkPassesOn("9"))
		createScene(ctx, ns, "fan",
			withRetry(fanOut(container("shard", "item {{ .item }}"), 2, 0, 1, 2, 3, 4), 1),
			container("join", "{{ .steps.shard.output }}", "shard"))
		createRun(ctx, ns, "r", "fan", nil)
		run := finished(ctx, ns, "r")
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded), "%+v", run.Status.Steps)
		shard := stepStatus(run, "shard")
		Expect(shard.Instances.States).To(Equal("SSSSS"))
		Expect(shard.Instances.Attempts).To(Equal([]int32{1, 1, 2, 1, 1}))
		Expect(stepStatus(run, "join").Output.Preview).To(Equal(`["item 0","item 1","item 2","item 3","item 4"]`))

		cm := &corev1.ConfigMap{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: naming.UnitOutputConfigMapName("r", "shard", 3, 0)}, cm)).To(Succeed())
		Expect(cm.Data["output"]).To(Equal("item 3"))
		Eventually(func(g Gomega) {
			pods := &corev1.PodList{}
			g.Expect(k8sClient.List(ctx, pods, client.InNamespace(ns), client.HasLabels{ergonv1alpha1.LabelInstance})).To(Succeed())
			g.Expect(pods.Items).To(BeEmpty(), "the instances' pods are deleted once the Run ended")
		}).Should(Succeed())
	})

	It("loops until the check passes, keeping each iteration's output", func(ctx SpecContext) {
		ns := newNamespace(ctx, checkPassesOn("3"))
		createScene(ctx, ns, "draft",
			looping(container("draft", "draft {{ .loop.iteration }} after [{{ .loop.previous }}]"), "outputs.pass", 5),
			container("publish", "{{ .steps.draft.outputs.said }}", "draft"))
		createRun(ctx, ns, "r", "draft", nil)
		run := finished(ctx, ns, "r")
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded), "%+v", run.Status.Steps)
		draft := stepStatus(run, "draft")
		Expect(draft.Loop.Iteration).To(BeEquivalentTo(3))
		Expect(draft.Loop.Iterations).To(HaveLen(3))
		Expect(stepStatus(run, "publish").Output.Preview).To(HavePrefix(`draft 3 after [{"pass":false,"said":"draft 2 after [`))
		cm := &corev1.ConfigMap{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: draft.Loop.Iterations[0].ConfigMap}, cm)).To(Succeed())
		Expect(cm.Data["output"]).To(Equal(`{"pass":false,"said":"draft 1 after []"}`))
	})

	It("fails a loop that runs out of iterations with MaxIterationsExceeded", func(ctx SpecContext) {
		ns := newNamespace(ctx, checkPassesOn("9"))
		createScene(ctx, ns, "never", looping(container("draft", "d"), "outputs.pass", 2))
		createRun(ctx, ns, "r", "never", nil)
		run := finished(ctx, ns, "r")
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunFailed))
		Expect(stepStatus(run, "draft").Reason).To(Equal(ergonv1alpha1.ReasonMaxIterationsExceeded))
	})
})

var _ = Describe("Fan-out and loops across restarts", Serial, func() {
	It("run no instance or iteration twice and lose none when the manager stops at random points", func(ctx SpecContext) {
		const runs = 4
		seed := uint64(time.Now().UnixNano())
		GinkgoWriter.Printf("restart test seed: %d\n", seed)
		rng := rand.New(rand.NewPCG(seed, 2))
		kctx, stopKubelet := context.WithCancel(context.Background())
		defer stopKubelet()
		go testKubelet.run(kctx)
		ns := newNamespace(ctx, checkPassesOn("3"))
		created := watchPodCreations(ctx, ns)
		stopMgr()
		DeferCleanup(func() { stopMgr = startManager(suiteConfig()) })

		shard := fanOut(container("shard", "item {{ .item }}"), 3, 0, 1, 2, 3, 4, 5, 6, 7)
		shard.Retry = &ergonv1alpha1.RetryPolicy{Limit: 1}
		createScene(ctx, ns, "both",
			shard,
			looping(container("draft", "draft {{ .loop.iteration }}"), "outputs.pass", 5),
			container("join", "{{ .steps.shard.output }}|{{ .steps.draft.outputs.said }}", "shard", "draft"))
		for i := range runs {
			createRun(ctx, ns, fmt.Sprintf("r%d", i), "both", nil)
		}
		allFinished := func() bool { return allRunsFinished(ctx, ns, runs) }
		restarts := restartRandomly(rng, time.Now().Add(120*time.Second), allFinished)
		GinkgoWriter.Printf("restarts: %d, pods created: %d\n", restarts, created.count())
		Expect(allFinished()).To(BeTrue(), "every Run finishes across %d restarts", restarts)
		Expect(restarts).To(BeNumerically(">", 3), "the manager was stopped mid-run several times")
		list := &ergonv1alpha1.RunList{}
		Expect(k8sClient.List(ctx, list, client.InNamespace(ns))).To(Succeed())
		for _, r := range list.Items {
			Expect(r.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded), "%s: %+v", r.Name, r.Status.Steps)
			Expect(stepStatus(&r, "join").Output.Preview).To(Equal(
				`["item 0","item 1","item 2","item 3","item 4","item 5","item 6","item 7"]|draft 3`), r.Name)
			Expect(stepStatus(&r, "draft").Loop.Iterations).To(HaveLen(3), r.Name)
		}
		// Per Run: 8 instances, one retried, 3 iterations and the join.
		Eventually(created.count).Should(Equal(runs * (8 + 1 + 3 + 1)))
		Expect(created.duplicates()).To(BeEmpty(), "pods created more than once")
	})
})
