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

package security

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

// Issue 13: a Workspace holds one person's files. A tenant who may edit Scenes and create Runs
// in the namespace must still not run programs on them.

func workspaceOf(ns, name, user string) *ergonv1alpha1.Workspace {
	return &ergonv1alpha1.Workspace{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: ergonv1alpha1.WorkspaceSpec{
			User: user, Image: "busybox:1.36",
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}},
			Storage: ergonv1alpha1.WorkspaceStorage{Size: resource.MustParse("1Gi")},
		}}
}

//nolint:unparam // specs of other Workspaces pass them
func boundTo(ns, name, workspace string, steps ...ergonv1alpha1.Step) *ergonv1alpha1.Scene {
	scene := newScene(ns, name, steps...)
	scene.Spec.Workspace = &corev1.LocalObjectReference{Name: workspace}
	return scene
}

var _ = Describe("Attack: a tenant with edit runs steps in another person's Workspace", func() {
	var ns string
	var owner, mallory client.Client
	BeforeEach(func() {
		ns = newNamespace()
		owner = userClient(ns, "ws-alice", roleEdit)
		mallory = userClient(ns, "ws-mallory", roleEdit)
		Expect(admin.Create(ctx, workspaceOf(ns, "dev", "ws-alice"))).To(Succeed())
	})

	It("refuses binding a Scene to it, naming the field and the Workspace", func() {
		refusedNaming(mallory.Create(ctx, boundTo(ns, "steal", "dev", shStep("cat", "cat /workspace/*"))),
			"spec.workspace.name", `Workspace "dev"`, "ws-mallory", "verb use")
		Expect(owner.Create(ctx, boundTo(ns, "mine", "dev", shStep("ls", "ls /workspace")))).To(Succeed(),
			"the Workspace's user binds a Scene to it")
	})

	It("refuses a Run of the user's bound Scene, a change to it, and a Scene or Trigger that runs it", func() {
		Expect(owner.Create(ctx, boundTo(ns, "mine", "dev", shStep("ls", "ls /workspace")))).To(Succeed())
		Expect(owner.Create(ctx, newRun(ns, "alice-run", "mine", nil))).To(Succeed(), "the user runs it")

		refusedNaming(mallory.Create(ctx, newRun(ns, "r1", "mine", nil)), "spec.sceneRef.name", `Workspace "dev"`)

		scene := &ergonv1alpha1.Scene{}
		Expect(mallory.Get(ctx, client.ObjectKey{Namespace: ns, Name: "mine"}, scene)).To(Succeed())
		scene.Spec.Steps[0].Container.Command = []string{"sh", "-c", "rm -rf /workspace/*"}
		refusedNaming(mallory.Update(ctx, scene), "spec.workspace.name", `Workspace "dev"`)

		wrapper := newScene(ns, "wrapper", ergonv1alpha1.Step{Name: "call", Scene: &ergonv1alpha1.SceneCall{Name: "mine"}})
		refusedNaming(mallory.Create(ctx, wrapper), "spec.steps[0].scene.name", `Workspace "dev"`, "Scene mine's spec.workspace")

		trigger := &ergonv1alpha1.Trigger{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nightly"},
			Spec: ergonv1alpha1.TriggerSpec{SceneRef: corev1.LocalObjectReference{Name: "mine"},
				Schedule: &ergonv1alpha1.ScheduleSource{Cron: "0 3 * * *"}}}
		refusedNaming(mallory.Create(ctx, trigger), "spec.sceneRef.name", `Workspace "dev"`)

		refusedNaming(mallory.Create(ctx, newRun(ns, "r2", "not-yet", nil)), "spec.sceneRef.name", `Scene "not-yet" does not exist yet`)
	})

	It("lets someone granted the verb use on it run its Scenes", func() {
		Expect(owner.Create(ctx, boundTo(ns, "mine", "dev", shStep("ls", "ls /workspace")))).To(Succeed())
		guest := userClient(ns, "ws-guest", roleEdit)
		bindRole(ns, "ws-guest", "ergon-workspace-user")
		Expect(guest.Create(ctx, newRun(ns, "guest-run", "mine", nil))).To(Succeed())
		Expect(guest.Create(ctx, boundTo(ns, "guest-scene", "dev", shStep("ls", "ls /workspace")))).To(Succeed())
	})
})
