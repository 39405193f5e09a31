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
	"fmt"
	"os"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

// fakeLLMImage is the fake OpenAI-compatible server (test/fakellm), built by
// `make image-fakellm` and imported by `make load-image`.
func fakeLLMImage() string {
	if img := os.Getenv("E2E_FAKELLM_IMAGE"); img != "" {
		return img
	}
	return "ergon/fakellm:dev"
}

// fakeLLMScript plays a model that fetches the sprint from the tracker Service with
// http_fetch, then answers with JSON built from what it read; the same server plays the
// tracker through a fixed route.
func fakeLLMScript(ns string) string {
	return fmt.Sprintf(`rules:
- match: {lastRole: tool, lastContains: "payments"}
  reply: {content: '{"title": "Sprint 43", "done": ["payments", "search"]}'}
- match: {lastRole: tool}
  reply: {content: 'the tracker did not answer as expected'}
- match: {lastRole: user}
  reply:
    toolCalls:
    - {name: http_fetch, arguments: '{"url": "http://tracker.%s.svc:8080/sprint/43"}'}
routes:
  /sprint/43: {contentType: application/json, body: '{"sprint": 43, "done": ["payments", "search"]}'}
`, ns)
}

// deployFakeLLM runs the fake server in ns behind two Services, llm (the model) and tracker
// (the data the agent fetches), hardened like every pod of the namespace.
func deployFakeLLM(ctx SpecContext, ns string) {
	deployFakeLLMScript(ctx, ns, fakeLLMScript(ns))
}

// hardenedDeployment is one replica of c (named name, its image pulled only when missing),
// hardened as Pod Security "restricted" asks: no ServiceAccount token, a non-root user, the
// runtime's seccomp profile, no privilege escalation, a read-only root and no capabilities. Its
// pods are labelled app=name.
func hardenedDeployment(ns, name string, c corev1.Container, volumes ...corev1.Volume) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	c.Name, c.ImagePullPolicy = name, corev1.PullIfNotPresent
	c.SecurityContext = &corev1.SecurityContext{AllowPrivilegeEscalation: new(false),
		ReadOnlyRootFilesystem: new(true), Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					AutomountServiceAccountToken: new(false),
					SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: new(true), RunAsUser: new(int64(65532)),
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
					Containers: []corev1.Container{c},
					Volumes:    volumes,
				},
			},
		},
	}
}

// deployFakeLLMScript deploys the fake model with a script, as the Services llm (port 80) and
// tracker (port 8080).
func deployFakeLLMScript(ctx SpecContext, ns, script string) {
	Expect(k8sClient.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "fakellm", Namespace: ns},
		Data: map[string]string{"script.yaml": script}})).To(Succeed())
	deploy := hardenedDeployment(ns, "fakellm", corev1.Container{
		Image: fakeLLMImage(),
		Args:  []string{"--script", "/etc/fakellm/script.yaml", "--listen", ":8080"},
		Ports: []corev1.ContainerPort{{ContainerPort: 8080}},
		ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
			HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080)}}},
		VolumeMounts: []corev1.VolumeMount{{Name: "script", MountPath: "/etc/fakellm", ReadOnly: true}},
	}, corev1.Volume{Name: "script", VolumeSource: corev1.VolumeSource{
		ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "fakellm"}}}})
	Expect(k8sClient.Create(ctx, deploy)).To(Succeed())
	for name, port := range map[string]int32{"llm": 80, "tracker": 8080} {
		Expect(k8sClient.Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: corev1.ServiceSpec{Selector: deploy.Spec.Selector.MatchLabels,
				Ports: []corev1.ServicePort{{Port: port, TargetPort: intstr.FromInt32(8080)}}}})).To(Succeed())
	}
	Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(deploy), deploy)).To(Succeed())
		g.Expect(deploy.Status.ReadyReplicas).To(BeEquivalentTo(1))
		// A ready pod is not yet a Service that answers: each Service's endpoints must list it
		// before a step calls it (on a busy node the endpoints follow the pod by seconds).
		for _, name := range []string{"llm", "tracker"} {
			slices := &discoveryv1.EndpointSliceList{}
			g.Expect(k8sClient.List(ctx, slices, client.InNamespace(ns),
				client.MatchingLabels{discoveryv1.LabelServiceName: name})).To(Succeed())
			ready := 0
			for _, slice := range slices.Items {
				for _, e := range slice.Endpoints {
					if e.Conditions.Ready != nil && *e.Conditions.Ready {
						ready++
					}
				}
			}
			g.Expect(ready).To(BeNumerically(">", 0), "ready endpoints of Service %s", name)
		}
	}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
}

var _ = Describe("Agent steps on a real cluster", func() {
	It("runs an agent that fetches from an allow-listed in-cluster Service and returns schema-valid JSON the next step consumes",
		func(ctx SpecContext) {
			ns := newNamespace(ctx)
			deployFakeLLM(ctx, ns)
			const apiKey = "e2e-api-key-never-shown"
			Expect(k8sClient.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "llm", Namespace: ns},
				StringData: map[string]string{"apiKey": apiKey}})).To(Succeed())

			scene := &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: "sprint", Namespace: ns}}
			scene.Spec.Models = map[string]ergonv1alpha1.ModelSpec{"default": {
				BaseURL: ergonv1alpha1.URL(fmt.Sprintf("http://llm.%s.svc/v1", ns)), Model: "fake", Temperature: new("0"), Seed: new(int64(1)),
				APIKeySecretRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "llm"}, Key: "apiKey"},
			}}
			scene.Spec.Steps = []ergonv1alpha1.Step{
				{Name: "draft", Timeout: &metav1.Duration{Duration: 2 * time.Minute}, Agent: &ergonv1alpha1.AgentStep{
					System:     "You write sprint reports.",
					Prompt:     "Fetch sprint 43 from the tracker and report what was done.",
					Tools:      []ergonv1alpha1.AgentTool{{Name: ergonv1alpha1.ToolHTTPFetch}},
					AllowHosts: []ergonv1alpha1.Host{ergonv1alpha1.Host(fmt.Sprintf("tracker.%s.svc:8080", ns))},
					Output: &ergonv1alpha1.OutputContract{Format: "json", Schema: &apiextensionsv1.JSON{Raw: []byte(
						`{"type":"object","required":["title","done"],"properties":{"title":{"type":"string"},` +
							`"done":{"type":"array","items":{"type":"string"}}}}`)}},
					MaxTurns: new(int32(5)),
				}},
				busyboxStep("publish",
					`echo -n "published "{{ .steps.draft.outputs.title | shquote }}": $(cat "$ERGON_INPUTS/draft")" > "$ERGON_OUTPUT"`, "draft"),
			}
			Expect(k8sClient.Create(ctx, scene)).To(Succeed())
			run := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: "sprint-1", Namespace: ns},
				Spec: ergonv1alpha1.RunSpec{SceneRef: corev1.LocalObjectReference{Name: "sprint"}}}
			Expect(k8sClient.Create(ctx, run)).To(Succeed())

			run = finished(ctx, run)
			Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded), "%+v", run.Status)
			draft := stepOf(run, "draft")
			Expect(draft.Output.Preview).To(Equal(`{"title":"Sprint 43","done":["payments","search"]}`))
			Expect(draft.Usage).NotTo(BeNil())
			Expect(draft.Usage.Turns).To(BeEquivalentTo(2))
			Expect(draft.Usage.TotalTokens).To(BeNumerically(">", 0))
			Expect(stepOf(run, "publish").Output.Preview).To(Equal(
				`published Sprint 43: {"title":"Sprint 43","done":["payments","search"]}`))

			By("keeping the transcript in the step's output ConfigMap")
			Expect(draft.Transcript).NotTo(BeNil())
			cm := &corev1.ConfigMap{}
			Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: draft.Transcript.Ref.ConfigMap}, cm)).To(Succeed())
			transcript := cm.Data["transcript"]
			Expect(transcript).To(ContainSubstring(`"name":"http_fetch"`))
			Expect(transcript).To(ContainSubstring(`HTTP 200`))
			Expect(transcript).To(ContainSubstring(`"outcome":"Succeeded"`))
			Expect(transcript).NotTo(ContainSubstring(apiKey))
			GinkgoWriter.Printf("transcript of sprint-1/draft:\n%s\n", transcript)
			Expect(strings.Count(transcript, `"role":"assistant"`)).To(Equal(2))
		})
})
