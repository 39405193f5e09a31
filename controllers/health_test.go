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
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/naming"
	"github.com/ergon-dev/ergon/test/argocd"
)

// gitopsHealth is how a GitOps tool sees an object: kstatus (Flux, kubectl-based tools) and the
// Argo CD health check of docs/gitops.
type gitopsHealth struct {
	kstatus status.Status
	argo    string
}

// healthOf reads an object as stored, through the API server, and computes both.
func healthOf(ctx context.Context, g Gomega, kind, ns, name string) gitopsHealth {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(ergonv1alpha1.GroupVersion.WithKind(kind))
	g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, u)).To(Succeed())
	res, err := status.Compute(u)
	g.Expect(err).NotTo(HaveOccurred())
	script, err := argocd.Script(map[string]string{"Scene": "scene", "Run": "run", "Gate": "gate",
		"Trigger": "trigger", "Workspace": "workspace", "WorkspacePool": "workspacepool"}[kind])
	g.Expect(err).NotTo(HaveOccurred())
	argo, err := argocd.Run(script, u.Object)
	g.Expect(err).NotTo(HaveOccurred())
	return gitopsHealth{kstatus: res.Status, argo: argo.Status}
}

// expectHealth waits until an object shows the health wanted, then checks it stays so.
func expectHealth(ctx context.Context, kind, ns, name string, want gitopsHealth) {
	GinkgoHelper()
	Eventually(func(g Gomega) gitopsHealth { return healthOf(ctx, g, kind, ns, name) }).
		WithTimeout(20*time.Second).Should(Equal(want), "%s %s", kind, name)
	Consistently(func(g Gomega) gitopsHealth { return healthOf(ctx, g, kind, ns, name) }, "300ms").
		Should(Equal(want), "%s %s", kind, name)
}

func newWorkspace(ns, name string) *ergonv1alpha1.Workspace {
	return &ergonv1alpha1.Workspace{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: ergonv1alpha1.WorkspaceSpec{User: "alice", Image: "busybox:test",
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}},
			Storage: ergonv1alpha1.WorkspaceStorage{Size: resource.MustParse("1Gi")}}}
}

var (
	current     = gitopsHealth{status.CurrentStatus, "Healthy"}
	progressing = gitopsHealth{status.InProgressStatus, "Progressing"}
	failed      = gitopsHealth{status.FailedStatus, "Degraded"}
)

var _ = Describe("Health as Flux (kstatus) and Argo CD (docs/gitops) see it", func() {
	BeforeEach(func() {
		ctx, cancel := context.WithCancel(context.Background())
		go testKubelet.run(ctx)
		DeferCleanup(cancel)
	})

	It("of Scenes: compiled, calling a missing Scene, naming a missing Workspace, not compiling", func(ctx SpecContext) {
		ns := newNamespace(ctx, nil)
		createScene(ctx, ns, "good", container("a", "a"))
		createScene(ctx, ns, "caller", callStep("child", "missing"))
		createScene(ctx, ns, "broken", container("a", "{{ .steps.nowhere.output }}"))
		scene := &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: "in-workspace", Namespace: ns}}
		scene.Spec.Steps = []ergonv1alpha1.Step{container("a", "a")}
		scene.Spec.Workspace = &corev1.LocalObjectReference{Name: "desk"}
		Expect(k8sClient.Create(ctx, scene)).To(Succeed())

		expectHealth(ctx, "Scene", ns, "good", current)
		expectHealth(ctx, "Scene", ns, "caller", progressing)
		expectHealth(ctx, "Scene", ns, "in-workspace", progressing)
		expectHealth(ctx, "Scene", ns, "broken", failed)
	})

	It("of Runs: waiting for the Scene, running, waiting on a Gate, suspended, succeeded, failed, cancelled", func(ctx SpecContext) {
		ns := newNamespace(ctx, func(pod *corev1.Pod) outcome {
			switch args := stepArgs(pod); args[len(args)-1] {
			case "stay":
				return outcome{Stay: true}
			case "fail":
				return outcome{ExitCode: 1}
			default:
				return outcome{Output: "ok"}
			}
		})
		createRun(ctx, ns, "early", "later", nil)
		expectHealth(ctx, "Run", ns, "early", progressing)

		createScene(ctx, ns, "ok", container("a", "done"))
		createScene(ctx, ns, "bad", container("a", "fail"))
		createScene(ctx, ns, "slow", container("a", "stay"))
		createScene(ctx, ns, "gated", ergonv1alpha1.Step{Name: "review", Gate: &ergonv1alpha1.GateStep{Message: "Go?"}})
		createRun(ctx, ns, "ok-1", "ok", nil)
		createRun(ctx, ns, "bad-1", "bad", nil)
		createRun(ctx, ns, "slow-1", "slow", nil)
		createRun(ctx, ns, "slow-2", "slow", nil)
		suspended := createRun(ctx, ns, "slow-3", "slow", nil)
		createRun(ctx, ns, "gated-1", "gated", nil)

		expectHealth(ctx, "Run", ns, "ok-1", current)
		expectHealth(ctx, "Run", ns, "bad-1", failed)
		expectHealth(ctx, "Run", ns, "slow-1", progressing)
		expectHealth(ctx, "Run", ns, "gated-1", gitopsHealth{status.InProgressStatus, "Suspended"})
		cancelRun(ctx, ns, "slow-2")
		Expect(k8sClient.Patch(ctx, suspended, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"suspend":true}}`)))).To(Succeed())
		expectHealth(ctx, "Run", ns, "slow-3", gitopsHealth{status.InProgressStatus, "Suspended"})
		expectHealth(ctx, "Run", ns, "slow-2", failed)

		By("and of the Gate the Run waits on: pending, then decided")
		expectHealth(ctx, "Gate", ns, naming.GateName("gated-1", "review"), gitopsHealth{status.InProgressStatus, "Suspended"})
		gate := &ergonv1alpha1.Gate{}
		Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: naming.GateName("gated-1", "review")}, gate)).To(Succeed())
		patch := client.MergeFrom(gate.DeepCopy())
		gate.Spec.Decision = &ergonv1alpha1.GateDecision{Option: "reject", User: "alice"}
		Expect(k8sClient.Patch(ctx, gate, patch)).To(Succeed())
		expectHealth(ctx, "Gate", ns, naming.GateName("gated-1", "review"), current)
		// A rejection is a decision the Scene's steps branch on, not a failure of the Run.
		expectHealth(ctx, "Run", ns, "gated-1", current)
	})

	It("of Triggers: scheduled, suspended, watching, with a schedule that does not parse, waiting for their Secret", func(ctx SpecContext) {
		ns := newNamespace(ctx, nil)
		scheduleTrigger(ctx, ns, "nightly", cron("0 3 * * *"))
		scheduleTrigger(ctx, ns, "paused", cron("0 3 * * *"), func(t *ergonv1alpha1.Trigger) { t.Spec.Suspend = new(true) })
		scheduleTrigger(ctx, ns, "nonsense", cron("every day at noon"))
		webhookTrigger(ctx, ns, "hook", nil)
		chain := &ergonv1alpha1.Trigger{ObjectMeta: metav1.ObjectMeta{Name: "after-ingest", Namespace: ns},
			Spec: ergonv1alpha1.TriggerSpec{SceneRef: corev1.LocalObjectReference{Name: "nightly"},
				RunCompleted: &ergonv1alpha1.RunCompletedSource{SceneRef: corev1.LocalObjectReference{Name: "ingest"}}}}
		Expect(k8sClient.Create(ctx, chain)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, chain))).To(Succeed()) })

		expectHealth(ctx, "Trigger", ns, "nightly", current)
		expectHealth(ctx, "Trigger", ns, "paused", gitopsHealth{status.CurrentStatus, "Suspended"})
		expectHealth(ctx, "Trigger", ns, "after-ingest", current)
		expectHealth(ctx, "Trigger", ns, "nonsense", failed)
		expectHealth(ctx, "Trigger", ns, "hook", progressing)
		createKeySecret(ctx, ns)
		// The Trigger looks for its Secret again on its next reconcile; a change to it is one.
		t := getTrigger(ctx, ns, "hook")
		patch := client.MergeFrom(t.DeepCopy())
		t.Spec.Params = map[string]string{"fixed": "again"}
		Expect(k8sClient.Patch(ctx, t, patch)).To(Succeed())
		expectHealth(ctx, "Trigger", ns, "hook", current)
	})

	It("of Workspaces: starting, running, idle and failed, as the Workspace controller specs show", func(ctx SpecContext) {
		ns := newNamespace(ctx, nil)
		Expect(k8sClient.Create(ctx, newWorkspace(ns, "desk"))).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { _ = k8sClient.Delete(ctx, newWorkspace(ns, "desk")) })
		expectHealth(ctx, "Workspace", ns, "desk", progressing)
	})
})

// cron sets a Trigger's schedule.
func cron(spec string) func(*ergonv1alpha1.Trigger) {
	return func(t *ergonv1alpha1.Trigger) { t.Spec.Schedule.Cron = spec }
}
