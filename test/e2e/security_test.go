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
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

// tenant is a client that acts as user, as kubectl --as sends it, bound to clusterRole in ns.
func tenant(ctx SpecContext, ns, user, clusterRole string) client.Client {
	Expect(k8sClient.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user + "-" + clusterRole, Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
	})).To(Succeed())
	as := rest.CopyConfig(cfg)
	as.Impersonate = rest.ImpersonationConfig{UserName: user}
	c, err := client.New(as, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
	return c
}

var _ = Describe("A hostile tenant on a real cluster", func() {
	It("cannot get a Secret's value through a step: a Scene or a Run that would read it is refused", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		Expect(k8sClient.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "tracker", Namespace: ns},
			StringData: map[string]string{"token": "s3cr3t"}})).To(Succeed())
		mallory := tenant(ctx, ns, "mallory", "ergon-editor")

		leak := busyboxStep("leak", `echo -n "$T" > "$ERGON_OUTPUT"`)
		leak.Container.Env = []corev1.EnvVar{{Name: "T", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "tracker"}, Key: "token"}}}}
		scene := &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: "leak", Namespace: ns},
			Spec: ergonv1alpha1.SceneSpec{Steps: []ergonv1alpha1.Step{leak}}}
		err := mallory.Create(ctx, scene.DeepCopy())
		Expect(err).To(MatchError(ContainSubstring(`mallory may not get Secret "tracker"`)))
		Expect(err).To(MatchError(ContainSubstring("spec.steps[0].container.env[0].valueFrom.secretKeyRef")))

		// The namespace's admin wrote the Scene; mallory may create Runs, but not of it.
		Expect(k8sClient.Create(ctx, scene)).To(Succeed())
		run := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: "leak-1", Namespace: ns},
			Spec: ergonv1alpha1.RunSpec{SceneRef: corev1.LocalObjectReference{Name: "leak"}}}
		Expect(mallory.Create(ctx, run)).To(MatchError(ContainSubstring(`mallory may not get Secret "tracker"`)))
	})

	It("cannot change a step's program with a param: the value arrives as data", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		mallory := tenant(ctx, ns, "mallory", "ergon-editor")
		scene := &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: "greet", Namespace: ns},
			Spec: ergonv1alpha1.SceneSpec{
				Params: []ergonv1alpha1.ParamSpec{{Name: "who"}},
				Steps: []ergonv1alpha1.Step{
					busyboxStep("env", `echo -n "$ERGON_PARAM_who" > "$ERGON_OUTPUT"`),
					busyboxStep("quoted", `echo -n {{ .params.who | shquote }} > "$ERGON_OUTPUT"`),
				}}}
		Expect(k8sClient.Create(ctx, scene)).To(Succeed())

		unsafe := scene.DeepCopy()
		unsafe.Name = "unsafe"
		unsafe.Spec.Steps[1].Container.Command[2] = `echo -n "{{ .params.who }}" > "$ERGON_OUTPUT"`
		Expect(mallory.Create(ctx, unsafe)).To(MatchError(ContainSubstring("shquote")))

		attack := `"; printenv; echo '$(ERGON_RUN)`
		run := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: "greet-1", Namespace: ns},
			Spec: ergonv1alpha1.RunSpec{SceneRef: corev1.LocalObjectReference{Name: "greet"},
				Params: map[string]string{"who": attack}}}
		Expect(mallory.Create(ctx, run)).To(Succeed())
		run = finished(ctx, run)
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded), "%+v", run.Status)
		Expect(stepOf(run, "env").Output.Preview).To(Equal(attack), "the shell and the kubelet left the value alone")
		Expect(stepOf(run, "quoted").Output.Preview).To(Equal(attack))
	})
})
