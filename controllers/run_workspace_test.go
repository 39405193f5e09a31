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
	"slices"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	runcontroller "github.com/ergon-dev/ergon/controllers/run"
	"github.com/ergon-dev/ergon/internal/naming"
	"github.com/ergon-dev/ergon/internal/workspace"
)

// workspaceFor creates a Workspace of user in ns.
func workspaceFor(ctx context.Context, ns, name, user string, runtimeClass *string) *ergonv1alpha1.Workspace {
	ws := &ergonv1alpha1.Workspace{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: ergonv1alpha1.WorkspaceSpec{
			User: user, Image: "dev-image:test", RuntimeClassName: runtimeClass,
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}},
			Storage: ergonv1alpha1.WorkspaceStorage{Size: resource.MustParse("1Gi")},
		}}
	Expect(k8sClient.Create(ctx, ws)).To(Succeed())
	return ws
}

// boundScene creates a Scene bound to the Workspace ws, with the given steps.
func boundScene(ctx context.Context, ns, name, ws string, steps ...ergonv1alpha1.Step) {
	scene := &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	scene.Spec.Models = map[string]ergonv1alpha1.ModelSpec{"default": {BaseURL: "http://llm.models.svc/v1", Model: "small"}}
	scene.Spec.Workspace = &corev1.LocalObjectReference{Name: ws}
	scene.Spec.Steps = steps
	Expect(k8sClient.Create(ctx, scene)).To(Succeed())
}

func agentWith(name string, tools ...string) ergonv1alpha1.Step {
	return ergonv1alpha1.Step{Name: name,
		Agent: &ergonv1alpha1.AgentStep{Prompt: "Work in the workspace.", Tools: builtins(tools...)}}
}

func runNow(ctx context.Context, g Gomega, ns, name string) *ergonv1alpha1.Run {
	run := &ergonv1alpha1.Run{}
	g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, run)).To(Succeed())
	return run
}

// stepNow is a step's status, for an Eventually: a Run that has none yet is not a failure.
//
//nolint:unparam // a spec of another step passes its name
func stepNow(g Gomega, run *ergonv1alpha1.Run, name string) ergonv1alpha1.StepStatus {
	i := slices.IndexFunc(run.Status.Steps, func(s ergonv1alpha1.StepStatus) bool { return s.Name == name })
	g.Expect(i).NotTo(Equal(-1), "no status of step %s yet", name)
	return run.Status.Steps[max(i, 0)]
}

var _ = Describe("A step bound to a Workspace", func() {
	BeforeEach(func() {
		ctx, cancel := context.WithCancel(context.Background())
		go testKubelet.run(ctx)
		DeferCleanup(cancel)
	})

	It("runs in the Workspace's image on its volume, hardened as the Workspace, holding its lease", func(ctx SpecContext) {
		var release atomic.Bool
		ns := newNamespace(ctx, func(pod *corev1.Pod) outcome {
			if !release.Load() {
				return outcome{Stay: true}
			}
			return outcome{Output: "done"}
		})
		sandbox := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{GenerateName: "sandbox-"}, Handler: "runsc"}
		Expect(k8sClient.Create(ctx, sandbox)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(k8sClient.Delete(ctx, sandbox)).To(Succeed()) })
		ws := workspaceFor(ctx, ns, "dev", "alice@example.org", &sandbox.Name)
		boundScene(ctx, ns, "edit", "dev",
			agentWith("edit", ergonv1alpha1.ToolWriteFile, ergonv1alpha1.ToolShell),
			agentWith("look", ergonv1alpha1.ToolReadFile),
			container("build", "make"))
		createRun(ctx, ns, "edit-1", "edit", nil)

		pod := &corev1.Pod{}
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: naming.StepPodName("edit-1", "edit", 1)}, pod)).To(Succeed())
		}).WithTimeout(20 * time.Second).Should(Succeed())

		claim := workspace.ObjectName(ws)
		c := pod.Spec.Containers[0]
		Expect(c.Image).To(Equal("dev-image:test"))
		Expect(c.Command).To(Equal([]string{entrypointPath}))
		Expect(c.Args).To(Equal([]string{"run", "--", agentPath}))
		Expect(c.Resources.Limits.Memory().String()).To(Equal("1Gi"))
		Expect(pod.Spec.InitContainers).To(HaveLen(1))
		Expect(pod.Spec.InitContainers[0].Image).To(Equal("ergon/manager:test"))
		Expect(pod.Spec.InitContainers[0].Command).To(Equal([]string{
			runcontroller.EntrypointInImage, "copy", entrypointPath, runcontroller.AgentInImage + "=" + agentPath}))
		Expect(pod.Labels).To(HaveKeyWithValue(ergonv1alpha1.LabelWorkspace, ws.Name))
		Expect(pod.Labels).To(HaveKeyWithValue(ergonv1alpha1.LabelWorkspaceUID, string(ws.UID)))
		Expect(*pod.Spec.AutomountServiceAccountToken).To(BeFalse())
		Expect(pod.Spec.RuntimeClassName).To(Equal(&sandbox.Name))
		psc := pod.Spec.SecurityContext
		Expect(*psc.RunAsUser).To(Equal(int64(1000)))
		Expect(*psc.RunAsGroup).To(Equal(int64(1000)))
		Expect(*psc.FSGroup).To(Equal(int64(1000)))
		Expect(*psc.RunAsNonRoot).To(BeTrue())
		Expect(*c.SecurityContext.ReadOnlyRootFilesystem).To(BeTrue())
		Expect(c.SecurityContext.Capabilities.Drop).To(ConsistOf(corev1.Capability("ALL")))
		volumes := map[string]corev1.Volume{}
		for _, v := range pod.Spec.Volumes {
			volumes[v.Name] = v
		}
		Expect(volumes[workspaceVolume].PersistentVolumeClaim).NotTo(BeNil())
		Expect(volumes[workspaceVolume].PersistentVolumeClaim.ClaimName).To(Equal(claim))
		Expect(volumes["tmp"].EmptyDir.SizeLimit).NotTo(BeNil())
		Expect(c.VolumeMounts).To(ContainElement(corev1.VolumeMount{Name: workspaceVolume, MountPath: "/workspace"}))

		By("taking the Workspace's lease, named for it, before its pod")
		lease := &coordinationv1.Lease{}
		Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: claim}, lease)).To(Succeed())
		Expect(*lease.Spec.HolderIdentity).To(Equal(pod.Name))
		Expect(metav1.GetControllerOf(lease)).To(HaveField("UID", ws.UID))

		By("letting a reading step start beside it, on the volume read-only, and keeping the container step waiting")
		look := &corev1.Pod{}
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: naming.StepPodName("edit-1", "look", 1)}, look)).To(Succeed())
		}).Should(Succeed())
		Expect(look.Spec.Containers[0].VolumeMounts).To(ContainElement(
			corev1.VolumeMount{Name: workspaceVolume, MountPath: "/workspace", ReadOnly: true}))
		Eventually(func(g Gomega) {
			build := stepNow(g, runNow(ctx, g, ns, "edit-1"), "build")
			g.Expect(build.Phase).To(Equal(ergonv1alpha1.StepWaiting))
			g.Expect(build.Reason).To(Equal(ergonv1alpha1.ReasonWorkspaceBusy))
		}).Should(Succeed())

		By("running the container step with /workspace mounted once the agent step ends")
		release.Store(true)
		run := finished(ctx, ns, "edit-1")
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded))
		edit, build := stepStatus(run, "edit"), stepStatus(run, "build")
		Expect(build.StartedAt.Time).NotTo(BeTemporally("<", edit.FinishedAt.Time))
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: claim}, lease)).To(Succeed())
			g.Expect(lease.Spec.HolderIdentity).To(BeNil())
		}).Should(Succeed())
	})

	It("makes a second Run's writing step wait, WorkspaceBusy, and start when the first ends", func(ctx SpecContext) {
		var release atomic.Bool
		ns := newNamespace(ctx, func(pod *corev1.Pod) outcome {
			if pod.Labels[ergonv1alpha1.LabelRun] == "first" && !release.Load() {
				return outcome{Stay: true}
			}
			return outcome{Output: "done"}
		})
		workspaceFor(ctx, ns, "dev", "bob", nil)
		boundScene(ctx, ns, "build", "dev", container("build", "make"))
		createRun(ctx, ns, "first", "build", nil)
		Eventually(func(g Gomega) {
			g.Expect(stepNow(g, runNow(ctx, g, ns, "first"), "build").Phase).To(Equal(ergonv1alpha1.StepRunning))
		}).Should(Succeed())
		createRun(ctx, ns, "second", "build", nil)
		createRun(ctx, ns, "third", "build", nil)
		for _, name := range []string{"second", "third"} {
			Eventually(func(g Gomega) {
				s := stepNow(g, runNow(ctx, g, ns, name), "build")
				g.Expect(s.Phase).To(Equal(ergonv1alpha1.StepWaiting))
				g.Expect(s.Reason).To(Equal(ergonv1alpha1.ReasonWorkspaceBusy))
				g.Expect(s.StartedAt).To(BeNil())
				g.Expect(runNow(ctx, g, ns, name).Status.Phase).To(Equal(ergonv1alpha1.RunWaiting))
			}).Should(Succeed())
		}
		Consistently(func(g Gomega) {
			err := k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: naming.StepPodName("second", "build", 1)}, &corev1.Pod{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue())
		}).WithTimeout(time.Second).Should(Succeed())

		release.Store(true)
		var steps []ergonv1alpha1.StepStatus
		for _, name := range []string{"first", "second", "third"} {
			run := finished(ctx, ns, name)
			Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded), name)
			steps = append(steps, stepStatus(run, "build"))
		}
		slices.SortFunc(steps, func(a, b ergonv1alpha1.StepStatus) int { return a.StartedAt.Compare(b.StartedAt.Time) })
		for i := 1; i < len(steps); i++ {
			Expect(steps[i].StartedAt.Time).NotTo(BeTemporally("<", steps[i-1].FinishedAt.Time),
				"a writing step started before the one before it finished")
		}
		Expect(stepStatus(finished(ctx, ns, "second"), "build").StartedAt.Time).To(
			BeTemporally("<=", stepStatus(finished(ctx, ns, "third"), "build").StartedAt.Time), "the second Run asked first")
	})

	It("waits, WorkspaceNotFound, for a Workspace that does not exist, and starts when it does", func(ctx SpecContext) {
		ns := newNamespace(ctx, echoLastArg)
		boundScene(ctx, ns, "build", "later", container("build", "make"))
		createRun(ctx, ns, "early", "build", nil)
		Eventually(func(g Gomega) {
			s := stepNow(g, runNow(ctx, g, ns, "early"), "build")
			g.Expect(s.Phase).To(Equal(ergonv1alpha1.StepWaiting))
			g.Expect(s.Reason).To(Equal(ergonv1alpha1.ReasonWorkspaceNotFound))
			g.Expect(s.Message).To(ContainSubstring("Workspace later does not exist"))
		}).Should(Succeed())
		later := workspaceFor(ctx, ns, "later", "carol", nil)
		run := finished(ctx, ns, "early")
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded))
		Expect(run.Status.Workspace).To(Equal(&ergonv1alpha1.PinnedWorkspace{Name: "later", UID: later.UID}),
			"the first Workspace the Run saw is pinned")
	})

	It("pins the Workspace when the Run starts: once it is created again, the next step fails, WorkspaceReplaced, "+
		"and makes no pod; a new Run uses the new one", func(ctx SpecContext) {
		var release atomic.Bool
		ns := newNamespace(ctx, func(pod *corev1.Pod) outcome {
			if pod.Labels[ergonv1alpha1.LabelRun] == "r1" && !release.Load() {
				return outcome{Stay: true}
			}
			return outcome{Output: "done"}
		})
		first := workspaceFor(ctx, ns, "dev", "dana", nil)
		boundScene(ctx, ns, "ci", "dev", container("build", "make"), container("test", "make test", "build"))
		createRun(ctx, ns, "r1", "ci", nil)
		Eventually(func(g Gomega) {
			g.Expect(stepNow(g, runNow(ctx, g, ns, "r1"), "build").Phase).To(Equal(ergonv1alpha1.StepRunning))
		}).WithTimeout(20 * time.Second).Should(Succeed())
		Expect(runNow(ctx, Default, ns, "r1").Status.Workspace).To(Equal(&ergonv1alpha1.PinnedWorkspace{Name: "dev", UID: first.UID}))

		By("the Workspace is deleted and created again under the same name while the first step runs")
		Expect(k8sClient.Delete(ctx, first)).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "dev"}, &ergonv1alpha1.Workspace{}))
		}).WithTimeout(20 * time.Second).Should(BeTrue())
		second := workspaceFor(ctx, ns, "dev", "dana", nil)
		Eventually(func(g Gomega) {
			g.Expect(getWorkspace(ctx, g, ns, "dev").Status.ClaimUID).NotTo(BeEmpty())
		}).WithTimeout(20 * time.Second).Should(Succeed())
		release.Store(true)

		run := finished(ctx, ns, "r1")
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunFailed))
		test := stepStatus(run, "test")
		Expect(test.Phase).To(Equal(ergonv1alpha1.StepFailed))
		Expect(test.Reason).To(Equal(ergonv1alpha1.ReasonWorkspaceReplaced))
		Expect(test.Message).To(And(ContainSubstring("Workspace dev"), ContainSubstring(string(first.UID)),
			ContainSubstring(string(second.UID))))
		err := k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: naming.StepPodName("r1", "test", 1)}, &corev1.Pod{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "no pod of the step was made: %v", err)

		By("a new Run pins the new Workspace and runs in it")
		createRun(ctx, ns, "r2", "ci", nil)
		again := finished(ctx, ns, "r2")
		Expect(again.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded))
		Expect(again.Status.Workspace).To(Equal(&ergonv1alpha1.PinnedWorkspace{Name: "dev", UID: second.UID}))
	})
})

// builtins are the AgentTools of built-in tools, by name.
func builtins(names ...string) []ergonv1alpha1.AgentTool {
	tools := make([]ergonv1alpha1.AgentTool, 0, len(names))
	for _, n := range names {
		tools = append(tools, ergonv1alpha1.AgentTool{Name: n})
	}
	return tools
}
