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

package v1alpha1

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

var _ = Describe("The Scene webhook, walking a Scene's whole closure", func() {
	var ns string
	var sam client.Client

	BeforeEach(func(ctx SpecContext) {
		ns = newNamespace(ctx)
		// sam may write Scenes, and read no Secret or ConfigMap.
		Expect(client.IgnoreAlreadyExists(k8sClient.Create(ctx, &rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: "scene-author"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{ergonv1alpha1.GroupVersion.Group}, Resources: []string{"scenes"},
				Verbs: []string{"create", "get", "update"}}},
		}))).To(Succeed())
		bind(ctx, ns, "sam", "scene-author")
		sam = clientAs("sam")
	})

	readsSecret := func(name string) ergonv1alpha1.Step {
		s := container(name, "true")
		s.Container.Env = []corev1.EnvVar{{Name: "TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "tracker"}, Key: "token"}}}}
		return s
	}

	It("refuses a Secret read by a container step in spec.finally, there and through a Scene that calls it", func(ctx SpecContext) {
		cleanup := scene("cleanup", container("a", "true"))
		cleanup.Namespace = ns
		cleanup.Spec.Finally = []ergonv1alpha1.Step{readsSecret("notify")}
		refused(sam.Create(ctx, cleanup.DeepCopy()),
			"spec.finally[0].container.env[0].valueFrom.secretKeyRef", `sam may not get Secret "tracker"`)
		Expect(k8sClient.Create(ctx, cleanup.DeepCopy())).To(Succeed(), "whoever may read the Secret may use it")

		caller := scene("caller", container("a", "true"))
		caller.Namespace = ns
		caller.Spec.Finally = []ergonv1alpha1.Step{callStep("clean", "cleanup")}
		refused(sam.Create(ctx, &caller), "spec.finally[0].scene.name", `sam may not get Secret "tracker"`,
			"through Scene cleanup's spec.finally[0].container.env[0].valueFrom.secretKeyRef")
	})

	It("refuses a ConfigMap read by a finally step, and a Secret read by the env of the Workspace a Scene binds", func(ctx SpecContext) {
		settings := scene("settings", container("a", "true"))
		settings.Namespace = ns
		notify := container("notify", "true")
		notify.Container.EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "team-settings"}}}}
		settings.Spec.Finally = []ergonv1alpha1.Step{notify}
		refused(sam.Create(ctx, &settings), "spec.finally[0].container.envFrom[0].configMapRef", `sam may not get ConfigMap "team-settings"`)

		ws := &ergonv1alpha1.Workspace{ObjectMeta: metav1.ObjectMeta{Name: "sams", Namespace: ns}, Spec: ergonv1alpha1.WorkspaceSpec{
			User: "sam", Image: "busybox:1.36", Storage: ergonv1alpha1.WorkspaceStorage{Size: resource.MustParse("1Gi")},
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}},
			Env: readsSecret("x").Container.Env}}
		Expect(k8sClient.Create(ctx, ws)).To(Succeed())
		bound := scene("bound", container("a", "true"))
		bound.Namespace = ns
		bound.Spec.Workspace = &corev1.LocalObjectReference{Name: "sams"}
		refused(sam.Create(ctx, &bound), "spec.workspace.name", `sam may not get Secret "tracker"`,
			"through Workspace sams's spec.env[0].valueFrom.secretKeyRef")
	})
})
