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
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	runcontroller "github.com/ergon-dev/ergon/controllers/run"
	"github.com/ergon-dev/ergon/internal/agentspec"
	"github.com/ergon-dev/ergon/internal/cost"
	"github.com/ergon-dev/ergon/internal/naming"
	"github.com/ergon-dev/ergon/internal/stepcontract"
)

const (
	apiKeyValue = "sk-live-do-not-leak-4711"
	tokenValue  = "tracker-token-do-not-leak"
)

// agentScene is a Scene whose agent step reads a container step's output and feeds another.
func agentScene(ctx context.Context, ns string, agent *ergonv1alpha1.AgentStep) {
	for name, kv := range map[string][2]string{"llm": {"apiKey", apiKeyValue}, "tracker": {"token", tokenValue},
		"llm-backup": {"key", "sk-backup-key"}} {
		Expect(k8sClient.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			StringData: map[string]string{kv[0]: kv[1]}})).To(Succeed())
	}
	scene := &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: "report", Namespace: ns}}
	scene.Spec.Params = []ergonv1alpha1.ParamSpec{
		{Name: "sprint", Default: new("42")},
		{Name: "token", ValueFrom: &ergonv1alpha1.ParamValueSource{SecretKeyRef: corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "tracker"}, Key: "token"}}},
	}
	scene.Spec.AllowHosts = []ergonv1alpha1.Host{"docs.tools.svc", "tracker.tools.svc"}
	scene.Spec.Models = map[string]ergonv1alpha1.ModelSpec{"default": {
		BaseURL: "http://llm.models.svc/v1", Model: "small", Temperature: new("0.2"), Seed: new(int64(7)),
		ContextBudget:   &ergonv1alpha1.ContextBudget{Tokens: new(int64(8000))},
		APIKeySecretRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "llm"}, Key: "apiKey"},
		Fallback:        []string{"backup"},
		Pricing:         &ergonv1alpha1.ModelPricing{InputPerMillion: "3.00", OutputPerMillion: "15.00"},
	}, "backup": {
		BaseURL: "http://backup.models.svc/v1", Model: "large",
		APIKeySecretRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "llm-backup"}, Key: "key"},
	}}
	draft := ergonv1alpha1.Step{Name: "draft", DependsOn: []string{"fetch"}, Agent: agent,
		Timeout: &metav1.Duration{Duration: 5 * time.Minute}}
	scene.Spec.Steps = []ergonv1alpha1.Step{
		container("fetch", "sprint {{ .params.sprint }}"),
		draft,
		container("publish", "publishing {{ .steps.draft.outputs.title }}", "draft"),
	}
	Expect(k8sClient.Create(ctx, scene)).To(Succeed())
}

func isAgentPod(pod *corev1.Pod) bool {
	args := pod.Spec.Containers[0].Args
	return len(args) == 3 && args[2] == runcontroller.AgentInImage
}

var _ = Describe("An agent step", func() {
	BeforeEach(func() {
		ctx, cancel := context.WithCancel(context.Background())
		go testKubelet.run(ctx)
		DeferCleanup(cancel)
	})

	It("runs the agent runtime in a restricted pod with its spec and its key by reference, and keeps its transcript", func(ctx SpecContext) {
		transcript := `{"model":"small","outcome":"Succeeded",` +
			`"usage":{"turns":3,"promptTokens":900,"completionTokens":120,"totalTokens":1020},"entries":[]}`
		ns := newNamespace(ctx, func(pod *corev1.Pod) outcome {
			if isAgentPod(pod) {
				return outcome{Output: `{"title":"Sprint 42 went well"}`, Transcript: transcript}
			}
			return echoLastArg(pod)
		})
		agentScene(ctx, ns, &ergonv1alpha1.AgentStep{
			System: "You write for {{ .params.sprint }}.", Prompt: "Summarise sprint {{ .params.sprint }}.",
			Tools:      []ergonv1alpha1.AgentTool{{Name: ergonv1alpha1.ToolHTTPFetch}},
			AllowHosts: []ergonv1alpha1.Host{"tracker.tools.svc", "tracker.tools.svc:8080"},
			Output: &ergonv1alpha1.OutputContract{Format: "json",
				Schema: &apiextensionsv1.JSON{Raw: []byte(`{"type":"object","required":["title"]}`)}},
			MaxTurns: new(int32(8)), MaxTokens: new(int64(5000)),
		})
		createRun(ctx, ns, "report-1", "report", nil)

		// Catch the agent pod before the kubelet finishes it.
		pod := &corev1.Pod{}
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns,
				Name: naming.StepPodName("report-1", "draft", 1)}, pod)).To(Succeed())
		}).WithTimeout(20 * time.Second).Should(Succeed())

		c := pod.Spec.Containers[0]
		Expect(c.Image).To(Equal("ergon/manager:test"))
		Expect(c.Command).To(Equal([]string{runcontroller.EntrypointInImage}))
		Expect(c.Args).To(Equal([]string{"run", "--", runcontroller.AgentInImage}))
		Expect(pod.Spec.InitContainers).To(BeEmpty())
		Expect(*pod.Spec.AutomountServiceAccountToken).To(BeFalse())
		Expect(*pod.Spec.SecurityContext.RunAsNonRoot).To(BeTrue())
		Expect(pod.Spec.SecurityContext.SeccompProfile.Type).To(Equal(corev1.SeccompProfileTypeRuntimeDefault))
		Expect(*c.SecurityContext.ReadOnlyRootFilesystem).To(BeTrue())
		Expect(*c.SecurityContext.AllowPrivilegeEscalation).To(BeFalse())
		Expect(c.SecurityContext.Capabilities.Drop).To(ConsistOf(corev1.Capability("ALL")))
		Expect(*pod.Spec.ActiveDeadlineSeconds).To(Equal(int64(300)))

		env := map[string]corev1.EnvVar{}
		for _, e := range c.Env {
			env[e.Name] = e
		}
		Expect(env).To(HaveKey(stepcontract.EnvAgentAPIKey))
		Expect(env[stepcontract.EnvAgentAPIKey].Value).To(BeEmpty())
		Expect(env[stepcontract.EnvAgentAPIKey].ValueFrom.SecretKeyRef.Name).To(Equal("llm"))
		Expect(env[stepcontract.EnvAgentAPIKey].ValueFrom.SecretKeyRef.Key).To(Equal("apiKey"))
		// Each fallback model's key is its own variable, by reference too.
		Expect(env).To(HaveKey("ERGON_AGENT_API_KEY_FALLBACK_1"))
		Expect(env["ERGON_AGENT_API_KEY_FALLBACK_1"].Value).To(BeEmpty())
		Expect(env["ERGON_AGENT_API_KEY_FALLBACK_1"].ValueFrom.SecretKeyRef.Name).To(Equal("llm-backup"))
		Expect(env["ERGON_AGENT_API_KEY_FALLBACK_1"].ValueFrom.SecretKeyRef.Key).To(Equal("key"))
		Expect(env).NotTo(HaveKey("ERGON_PARAM_token"), "an agent step has no use for secret params")
		Expect(env[stepcontract.EnvAgentSpec].Value).To(Equal("/ergon/agent/spec.json"))
		Expect(env[stepcontract.EnvTranscript].Value).To(HavePrefix(stepcontract.OutputDir))
		Expect(env["ERGON_INPUTS"].Value).To(Equal(stepcontract.InputsDir))

		var spec agentspec.Spec
		Expect(json.Unmarshal([]byte(pod.Annotations[annotationAgentSpec]), &spec)).To(Succeed())
		Expect(spec.Model.BaseURL).To(Equal("http://llm.models.svc/v1"))
		Expect(*spec.Model.Temperature).To(Equal(0.2))
		Expect(*spec.Model.Seed).To(Equal(int64(7)))
		Expect(spec.Model.ContextBudget).To(Equal(int64(32000)), "a token budget goes to the runtime as four characters a token")
		Expect(spec.System).To(Equal("You write for 42."))
		Expect(spec.Prompt).To(Equal("Summarise sprint 42."))
		Expect(spec.Tools).To(Equal([]string{"http_fetch"}))
		// The Scene's allow-list and the step's, each host once.
		Expect(spec.HTTP.AllowHosts).To(Equal([]string{"docs.tools.svc", "tracker.tools.svc", "tracker.tools.svc:8080"}))
		Expect(spec.MaxTurns).To(Equal(8))
		Expect(spec.MaxTokens).To(Equal(int64(5000)))
		Expect(spec.Timeout.Duration).To(Equal(5*time.Minute - 10*time.Second))
		Expect(spec.Output.Format).To(Equal("json"))
		Expect(spec.Output.MaxRepairs).To(Equal(2))
		Expect(string(spec.Output.Schema)).To(MatchJSON(`{"type":"object","required":["title"]}`))
		Expect(spec.ContextDir).To(Equal(stepcontract.InputsDir))
		Expect(spec.SecretEnv).To(BeEmpty())
		Expect(spec.APIKeyEnv).To(Equal(stepcontract.EnvAgentAPIKey))
		Expect(spec.Model.Name).To(Equal("default"))
		Expect(spec.Model.Pricing).To(Equal(&cost.Pricing{InputPerMillion: "3.00", OutputPerMillion: "15.00"}))
		Expect(spec.Fallbacks).To(Equal([]agentspec.ModelConfig{{Name: "backup", BaseURL: "http://backup.models.svc/v1",
			Model: "large", APIKeyEnv: "ERGON_AGENT_API_KEY_FALLBACK_1"}}))
		Expect(spec.Workspace).To(BeEmpty())

		var specVolume *corev1.Volume
		for i := range pod.Spec.Volumes {
			if pod.Spec.Volumes[i].Name == "ergon-agent" {
				specVolume = &pod.Spec.Volumes[i]
			}
		}
		Expect(specVolume).NotTo(BeNil())
		Expect(specVolume.DownwardAPI.Items[0].FieldRef.FieldPath).To(Equal("metadata.annotations['agent.ergon.dev/spec']"))
		raw, err := json.Marshal(pod)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(raw)).NotTo(ContainSubstring(apiKeyValue))
		Expect(string(raw)).NotTo(ContainSubstring(tokenValue))

		run := finished(ctx, ns, "report-1")
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded))
		draft := stepStatus(run, "draft")
		Expect(draft.Output.Preview).To(Equal(`{"title":"Sprint 42 went well"}`))
		Expect(draft.Usage).To(Equal(&ergonv1alpha1.AgentUsage{Turns: 3, PromptTokens: 900, CompletionTokens: 120, TotalTokens: 1020}))
		// The usage counts once, under the model the Scene names to the provider.
		tokens := func(kind string) float64 {
			return counter(Default, "ergon_agent_tokens_total", map[string]string{"namespace": ns, "model": "small", "kind": kind})
		}
		Expect(tokens("prompt")).To(Equal(900.0))
		Expect(tokens("completion")).To(Equal(120.0))
		Expect(draft.Transcript).NotTo(BeNil())
		Expect(draft.Transcript.Size).To(Equal(int64(len(transcript))))
		Expect(draft.Transcript.Ref.Key).To(Equal("transcript"))
		Expect(stepStatus(run, "publish").Output.Preview).To(Equal("publishing Sprint 42 went well"))

		cm := &corev1.ConfigMap{}
		Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: draft.Transcript.Ref.ConfigMap}, cm)).To(Succeed())
		Expect(cm.Data).To(HaveKeyWithValue("transcript", transcript))
		rawRun, err := json.Marshal(run)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(rawRun)).NotTo(ContainSubstring(apiKeyValue))
	})

	It("fails with the reason the runtime names, such as an exhausted budget, and keeps the transcript that says why", func(ctx SpecContext) {
		transcript := `{"model":"small","outcome":"MaxTurnsExceeded","entries":[{"role":"tool","content":"connection refused"}]}`
		ns := newNamespace(ctx, func(pod *corev1.Pod) outcome {
			if isAgentPod(pod) {
				return outcome{ExitCode: 3, FailReason: "MaxTurnsExceeded", Transcript: transcript,
					FailMessage: "the agent used all 2 turns of its maxTurns budget without a valid answer"}
			}
			return echoLastArg(pod)
		})
		agentScene(ctx, ns, &ergonv1alpha1.AgentStep{Prompt: "Summarise.", MaxTurns: new(int32(2))})
		createRun(ctx, ns, "report-2", "report", nil)
		run := finished(ctx, ns, "report-2")
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunFailed))
		draft := stepStatus(run, "draft")
		Expect(draft.Phase).To(Equal(ergonv1alpha1.StepFailed))
		Expect(draft.Reason).To(Equal("MaxTurnsExceeded"))
		Expect(draft.Message).To(ContainSubstring("maxTurns budget"))
		Expect(stepStatus(run, "publish").Phase).To(Equal(ergonv1alpha1.StepSkipped))
		Expect(draft.Output).To(BeNil())
		Expect(draft.Transcript).NotTo(BeNil(), "the last attempt's transcript is kept")
		cm := &corev1.ConfigMap{}
		Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: draft.Transcript.Ref.ConfigMap}, cm)).To(Succeed())
		Expect(cm.Data).To(HaveKeyWithValue("transcript", transcript))
	})

	It("succeeds without a transcript when the log lost it: the output is what later steps need", func(ctx SpecContext) {
		ns := newNamespace(ctx, func(pod *corev1.Pod) outcome {
			if isAgentPod(pod) {
				return outcome{Output: `{"title":"kept"}`, Transcript: `{"usage":{"turns":1}}`, LoseLog: true}
			}
			return echoLastArg(pod)
		})
		agentScene(ctx, ns, &ergonv1alpha1.AgentStep{Prompt: "Summarise."})
		createRun(ctx, ns, "report-3", "report", nil)
		run := finished(ctx, ns, "report-3")
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded))
		draft := stepStatus(run, "draft")
		Expect(draft.Transcript).To(BeNil())
		Expect(draft.Usage).To(BeNil())
		Expect(stepStatus(run, "publish").Output.Preview).To(Equal("publishing kept"))
	})
})
