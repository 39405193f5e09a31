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
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

// instancePods lists the instance labels of the pods of a fan-out step that exist in ns.
func instancePods(ctx context.Context, g Gomega, ns, step string) []string {
	pods := &corev1.PodList{}
	g.Expect(k8sClient.List(ctx, pods, client.InNamespace(ns),
		client.MatchingLabels{ergonv1alpha1.LabelStep: step}, client.HasLabels{ergonv1alpha1.LabelInstance})).To(Succeed())
	var instances []string
	for _, p := range pods.Items {
		instances = append(instances, p.Labels[ergonv1alpha1.LabelInstance])
	}
	return instances
}

// statesOf is the instance states of a fan-out step, "" while the Run records none.
func statesOf(run *ergonv1alpha1.Run, step string) string {
	for _, s := range run.Status.Steps {
		if s.Name == step && s.Instances != nil {
			return s.Instances.States
		}
	}
	return ""
}

var _ = Describe("Control flow constructs together", func() {
	BeforeEach(func() {
		ctx, cancel := context.WithCancel(context.Background())
		go testKubelet.run(ctx)
		DeferCleanup(cancel)
	})

	It("suspends a Run mid-fan-out: running instances finish, no new one starts until it resumes", func(ctx SpecContext) {
		release := make(chan struct{})
		seen := &podLog{pods: map[string][]string{}}
		ns := newNamespace(ctx, func(pod *corev1.Pod) outcome {
			seen.add(pod)
			if pod.Labels[ergonv1alpha1.LabelStep] == "fan" {
				select {
				case <-release:
				default:
					return outcome{Stay: true}
				}
			}
			return echoLastArg(pod)
		})
		createScene(ctx, ns, "fan",
			fanOut(container("fan", "item {{ .item }}"), 2, 0, 1, 2, 3),
			container("join", "{{ .steps.fan.output }}", "fan"))
		run := createRun(ctx, ns, "fan-1", "fan", nil)
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(run), run)).To(Succeed())
			g.Expect(statesOf(run, "fan")).To(Equal("RRPP"))
		}).Should(Succeed())
		Expect(k8sClient.Patch(ctx, run, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"suspend":true}}`)))).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(run), run)).To(Succeed())
			g.Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSuspended))
		}).Should(Succeed())

		By("letting the two running instances finish while no other starts")
		close(release)
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(run), run)).To(Succeed())
			g.Expect(statesOf(run, "fan")).To(Equal("SSPP"))
		}).Should(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(run), run)).To(Succeed())
			g.Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSuspended))
			g.Expect(statesOf(run, "fan")).To(Equal("SSPP"))
			g.Expect(instancePods(ctx, g, ns, "fan")).NotTo(ContainElements("2", "3"))
		}).WithTimeout(2 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
		Expect(seen.of("fan-1")).To(HaveLen(2), "only the two instances started before the suspend have pods")

		Expect(k8sClient.Patch(ctx, run, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"suspend":false}}`)))).To(Succeed())
		run = finished(ctx, ns, "fan-1")
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded), succeededMessage(run))
		Expect(stepStatus(run, "fan").Instances.States).To(Equal("SSSS"))
		Expect(stepStatus(run, "join").Output.Preview).To(Equal(`["item 0","item 1","item 2","item 3"]`))
		Expect(seen.of("fan-1")).To(HaveLen(5), "one pod per instance and the join, none twice")
	})

	It("runs a failure branch after a fan-out step when one of its instances fails, and only then", func(ctx SpecContext) {
		ns := newNamespace(ctx, func(pod *corev1.Pod) outcome {
			if pod.Labels[ergonv1alpha1.LabelStep] == "fan" && pod.Labels[ergonv1alpha1.LabelInstance] == "1" {
				return outcome{ExitCode: 1}
			}
			return echoLastArg(pod)
		})
		fix := echo("fix", "fixed {{ .steps.fan.phase }}")
		fix.After = []ergonv1alpha1.OutcomeDependency{{Step: "fan", Outcomes: []ergonv1alpha1.StepOutcome{"Failed"}, Handles: true}}
		createScene(ctx, ns, "ci",
			fanOut(container("fan", "item {{ .item }}"), 3, 0, 1, 2),
			fix, container("deploy", "x", "fan"))
		createRun(ctx, ns, "ci-1", "ci", nil)

		run := finished(ctx, ns, "ci-1")
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded), succeededMessage(run))
		fan := stepStatus(run, "fan")
		Expect(fan.Phase).To(Equal(ergonv1alpha1.StepFailed))
		Expect(fan.Instances.States).To(Equal("SFS"))
		Expect(fan.Instances.Failures).To(ContainElement(HaveField("Index", BeEquivalentTo(1))))
		Expect(stepStatus(run, "fix").Output.Preview).To(Equal("fixed Failed"))
		Expect(stepStatus(run, "deploy").Phase).To(Equal(ergonv1alpha1.StepSkipped))

		By("skipping the branch when every instance succeeds")
		testKubelet.use(ns, echoLastArg)
		createRun(ctx, ns, "ci-2", "ci", nil)
		run = finished(ctx, ns, "ci-2")
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded), succeededMessage(run))
		Expect(stepStatus(run, "fan").Instances.States).To(Equal("SSS"))
		Expect(stepStatus(run, "fix")).To(And(HaveField("Phase", ergonv1alpha1.StepSkipped), HaveField("Reason", "OutcomeNotMet")))
		Expect(stepStatus(run, "deploy").Phase).To(Equal(ergonv1alpha1.StepSucceeded))
	})
})
