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

package kubectlergon

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"os"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/agent"
)

// apply creates the objects of a YAML text in a namespace.
func apply(ctx context.Context, ns, text string) {
	docs, err := readDocuments(strings.NewReader(text), []string{"-"})
	Expect(err).NotTo(HaveOccurred())
	for _, d := range docs {
		var tm metav1.TypeMeta
		Expect(yaml.Unmarshal(d.Data, &tm)).To(Succeed())
		obj, err := Scheme.New(ergonv1alpha1.GroupVersion.WithKind(tm.Kind))
		Expect(err).NotTo(HaveOccurred())
		Expect(yaml.Unmarshal(d.Data, obj)).To(Succeed())
		co := obj.(client.Object)
		co.SetNamespace(ns)
		Expect(k8sClient.Create(ctx, co)).To(Succeed(), d.Source)
	}
}

// createdRun is the name of the Run a plugin command printed it created.
func createdRun(r result) string {
	for line := range strings.SplitSeq(r.out, "\n") {
		if name, ok := strings.CutPrefix(line, "run.ergon.dev/"); ok && strings.HasSuffix(name, " created") {
			return strings.TrimSuffix(name, " created")
		}
	}
	Fail("the plugin printed no Run it created:\n" + r.out + r.err)
	return ""
}

func getRun(ctx context.Context, ns, name string) *ergonv1alpha1.Run {
	run := &ergonv1alpha1.Run{}
	Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, run)).To(Succeed())
	return run
}

// background runs the plugin in a goroutine; the channel yields its result.
func background(ctx context.Context, ns string, args ...string) <-chan result {
	ch := make(chan result, 1)
	go func() {
		defer GinkgoRecover()
		ch <- plugin(ctx, ns, args...)
	}()
	return ch
}

// runOf waits until a Run of the Scene exists and returns its name.
func runOf(ctx context.Context, ns, scene string) string {
	var name string
	Eventually(func(g Gomega) {
		runs := &ergonv1alpha1.RunList{}
		g.Expect(k8sClient.List(ctx, runs, client.InNamespace(ns))).To(Succeed())
		for _, r := range runs.Items {
			if r.Spec.SceneRef.Name == scene && r.Labels[ergonv1alpha1.LabelParentRun] == "" {
				name = r.Name
			}
		}
		g.Expect(name).NotTo(BeEmpty())
	}).WithTimeout(10 * time.Second).Should(Succeed()) // the plugin's create goes through admission
	return name
}

const greet = `
apiVersion: ergon.dev/v1alpha1
kind: Scene
metadata: {name: greet}
spec:
  params: [{name: who}, {name: greeting, default: hello}]
  steps:
  - {name: hello, container: {image: x, command: [echo, '{{ .params.greeting }} {{ .params.who }}']}}
  - {name: shout, dependsOn: [hello], container: {image: x, command: [echo, '{{ .steps.hello.output }}!']}}
`

func echo(step string) outcome {
	return outcome{Log: "working on " + step + "\n", Output: "out of " + step}
}

var _ = Describe("kubectl ergon run", func() {
	It("checks params against the Scene with admission's messages, then follows a Run to Succeeded and exits 0", func(ctx SpecContext) {
		ns := newNamespace(ctx, echo)
		apply(ctx, ns, greet)

		r := plugin(ctx, ns, "run", "greet", "-p", "whom=you")
		Expect(r.code).To(Equal(1))
		run := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "refused"},
			Spec: ergonv1alpha1.RunSpec{SceneRef: corev1.LocalObjectReference{Name: "greet"}, Params: map[string]string{"whom": "you"}}}
		admission := k8sClient.Create(ctx, run)
		Expect(admission).To(HaveOccurred())
		for _, line := range strings.Split(strings.TrimSpace(r.err), "\n")[1:] {
			Expect(admission.Error()).To(ContainSubstring(strings.TrimSpace(line)), "admission words it the same")
		}
		Expect(r.err).To(ContainSubstring(`spec.params[who]: Required value: the Scene requires this param; set it`))
		runs := &ergonv1alpha1.RunList{}
		Expect(k8sClient.List(ctx, runs, client.InNamespace(ns))).To(Succeed())
		Expect(runs.Items).To(BeEmpty(), "nothing was sent")

		paramFile := GinkgoT().TempDir() + "/params.yaml"
		Expect(writeFile(paramFile, "who: world\ngreeting: hi\n")).To(Succeed())
		r = plugin(ctx, ns, "run", "greet", "--param-file", paramFile, "-p", "greeting=hey", "--follow")
		Expect(r.code).To(Equal(0), r.err)
		name := createdRun(r)
		Expect(r.out).To(ContainSubstring("step hello Running"))
		Expect(r.out).To(ContainSubstring("step shout Succeeded"))
		Expect(r.out).To(ContainSubstring("Run " + name + " Succeeded (2/2 steps)"))
		Expect(getRun(ctx, ns, name).Spec.Params).To(Equal(map[string]string{"who": "world", "greeting": "hey"}))

		r = plugin(ctx, ns, "output", name, "hello")
		Expect(r.code).To(Equal(0))
		Expect(r.out).To(Equal("out of hello"), "byte for byte, no newline added")

		r = plugin(ctx, ns, "rerun", name, "--follow")
		Expect(r.code).To(Equal(0), r.err)
		again := createdRun(r)
		Expect(again).NotTo(Equal(name))
		Expect(getRun(ctx, ns, again).Spec.Params).To(Equal(map[string]string{"who": "world", "greeting": "hey"}))
		Expect(getRun(ctx, ns, again).Spec.RetryOf).To(Equal(&ergonv1alpha1.RetryReference{Name: name, Replay: true}),
			"a rerun replays the original's snapshot, not today's Scene")

		r = plugin(ctx, ns, "rerun", name, "--from", "shout", "--set", "greeting=yo", "--follow")
		Expect(r.code).To(Equal(0), r.err)
		fromShout := getRun(ctx, ns, createdRun(r))
		Expect(fromShout.Spec.RetryOf).To(Equal(&ergonv1alpha1.RetryReference{Name: name, From: "shout"}))
		Expect(fromShout.Spec.Params).To(Equal(map[string]string{"who": "world", "greeting": "yo"}))

		r = plugin(ctx, ns, "rerun", name, "--from", "nope")
		Expect(r.code).To(Equal(1))
		Expect(r.err).To(ContainSubstring("spec.retryOf.from"), "admission names the field")
	})

	It("exits 1 on a failed Run, printing the failed step's reason and the end of its log", func(ctx SpecContext) {
		broken := func(step string) outcome {
			if step == "shout" {
				return outcome{ExitCode: 3, Log: strings.Repeat("noise\n", 50) + "compiling\nerror: the build is broken\n"}
			}
			return echo(step)
		}
		ns := newNamespace(ctx, broken)
		endOnceFollowed(ns, broken, "shout")
		apply(ctx, ns, greet)
		r := plugin(ctx, ns, "run", "greet", "-p", "who=you", "--follow", "--tail", "2")
		Expect(r.code).To(Equal(1))
		Expect(r.out).To(MatchRegexp(`step shout failed: \w+: .*exit.*3`))
		Expect(r.out).To(ContainSubstring("last 2 lines of the log of pod "))
		Expect(r.out).To(ContainSubstring("  compiling\n  error: the build is broken\n"))
		Expect(r.out).NotTo(ContainSubstring("noise"))
	})

	It("exits 2 when --timeout passes first, and when the Run is cancelled", func(ctx SpecContext) {
		ns := newNamespace(ctx, func(string) outcome { return outcome{Stay: true} })
		apply(ctx, ns, greet)
		r := plugin(ctx, ns, "run", "greet", "-p", "who=you", "--follow", "--timeout", "2s")
		Expect(r.code).To(Equal(2))
		Expect(r.err).To(ContainSubstring("gave up waiting after 2s: Run " + createdRun(r) + " is Running and goes on"))

		followed := background(ctx, ns, "run", "greet", "-p", "who=me", "--name", "to-cancel", "--follow")
		Eventually(func(g Gomega) {
			run := &ergonv1alpha1.Run{}
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "to-cancel"}, run)).To(Succeed())
			g.Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunRunning))
		}).Should(Succeed())
		Expect(plugin(ctx, ns, "cancel", "to-cancel").out).To(Equal("run.ergon.dev/to-cancel cancelled\n"))
		var res result
		Eventually(followed, 30*time.Second).Should(Receive(&res))
		Expect(res.code).To(Equal(2))
		Expect(res.out).To(ContainSubstring("Run to-cancel Cancelled"))
	})
})

var _ = Describe("kubectl ergon output and logs", func() {
	It("prints a 900 KiB output byte for byte, and logs without its frame", func(ctx SpecContext) {
		big := make([]byte, 900*1024)
		_, _ = rand.Read(big)
		ns := newNamespace(ctx, func(string) outcome { return outcome{Log: "made it\n", Output: string(big)} })
		apply(ctx, ns, `{apiVersion: ergon.dev/v1alpha1, kind: Scene, metadata: {name: big},
  spec: {steps: [{name: make, container: {image: x, command: ['true']}}]}}`)
		r := plugin(ctx, ns, "run", "big", "--follow")
		Expect(r.code).To(Equal(0), r.err)
		name := createdRun(r)
		out := plugin(ctx, ns, "output", name, "make")
		Expect(out.code).To(Equal(0), out.err)
		Expect(bytes.Equal([]byte(out.out), big)).To(BeTrue(), "%d bytes, not the %d written", len(out.out), len(big))

		// Ergon deletes a step's pod once the step ended, and its log with it.
		pod := getRun(ctx, ns, name).Status.Steps[0].PodName
		Eventually(func() string { return plugin(ctx, ns, "logs", name, "make").err }).Should(
			ContainSubstring(`pod ` + pod + ` is gone: Ergon deletes a step's pod once the Run's status records its end`))
		Expect(plugin(ctx, ns, "logs", name, "make", "--attempt", "2").err).To(ContainSubstring("attempt 2 has no pod"))
		all := plugin(ctx, ns, "logs", name)
		Expect(all.code).NotTo(Equal(0), "no log could be read")
		Expect(all.err).To(And(ContainSubstring("[make] pod "+pod+" is gone"), ContainSubstring("no log of Run "+name+" could be read")))
	})

	It("follows with -f the log of a step whose pod has not started yet", func(ctx SpecContext) {
		compile := func(string) outcome { return outcome{Log: "compiling\ncompiled\n"} }
		ns := newNamespace(ctx, compile)
		endOnceFollowed(ns, compile, "make")
		sim.Hold(ns, func(*corev1.Pod) *corev1.PodStatus {
			return &corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{Name: "step",
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}}}}
		})
		DeferCleanup(func() { sim.Hold(ns, nil) })
		apply(ctx, ns, `{apiVersion: ergon.dev/v1alpha1, kind: Scene, metadata: {name: slow},
  spec: {steps: [{name: make, container: {image: x, command: ['true']}}]}}`)
		name := createdRun(plugin(ctx, ns, "run", "slow"))
		Eventually(func(g Gomega) {
			steps := getRun(ctx, ns, name).Status.Steps
			g.Expect(steps).To(HaveLen(1))
			g.Expect(steps[0].PodName).NotTo(BeEmpty())
		}).Should(Succeed())

		followed := background(ctx, ns, "logs", name, "make", "-f")
		Consistently(followed, 2*time.Second).ShouldNot(Receive(), "-f waits for the container to start")
		sim.Hold(ns, nil)
		var res result
		Eventually(followed, 30*time.Second).Should(Receive(&res))
		Expect(res.code).To(Equal(0), res.err)
		Expect(res.out).To(Equal("compiling\ncompiled\n"))
		Expect(res.err).To(MatchRegexp(`pod \S+ has not started its container yet: waiting for it\n`))
	})

	It("prints an agent step's transcript readably", func(ctx SpecContext) {
		transcript, err := json.Marshal(agent.Transcript{Model: "small-model", Outcome: "Succeeded",
			StartedAt: time.Unix(0, 0), FinishedAt: time.Unix(2, 0),
			Usage: agent.Usage{Turns: 2, PromptTokens: 100, CompletionTokens: 20, TotalTokens: 120},
			Entries: []agent.Entry{
				{Turn: 0, Role: agent.RoleUser, Content: "Summarise the sprint"},
				{Turn: 1, Role: agent.RoleAssistant, ToolCalls: []agent.ToolCallRecord{{ID: "c1", Name: "http_fetch", Arguments: `{"url":"http://tracker/43"}`}},
					Usage: &agent.Usage{TotalTokens: 60}, DurationMS: 300},
				{Turn: 1, Role: agent.RoleTool, Tool: "http_fetch", ToolCallID: "c1", Content: "12 issues closed"},
				{Turn: 2, Role: agent.RoleAssistant, Content: "Sprint 43 closed 12 issues.", Usage: &agent.Usage{TotalTokens: 60}},
			}})
		Expect(err).NotTo(HaveOccurred())
		ns := newNamespace(ctx, func(string) outcome {
			return outcome{Output: "Sprint 43 closed 12 issues.", Transcript: string(transcript)}
		})
		apply(ctx, ns, `{apiVersion: ergon.dev/v1alpha1, kind: Scene, metadata: {name: agentic},
  spec: {models: {default: {baseURL: 'http://llm/v1', model: small-model}},
    steps: [{name: draft, agent: {prompt: Summarise the sprint}}]}}`)
		r := plugin(ctx, ns, "run", "agentic", "--follow")
		Expect(r.code).To(Equal(0), r.err)
		t := plugin(ctx, ns, "logs", createdRun(r), "draft", "--transcript")
		Expect(t.code).To(Equal(0), t.err)
		Expect(t.out).To(ContainSubstring("model small-model, Succeeded\n2 turns, 120 tokens (100 prompt, 20 completion), 2s\n"))
		Expect(t.out).To(ContainSubstring("--- turn 1 ---\nassistant calls http_fetch({\"url\":\"http://tracker/43\"}) [c1]\n"))
		Expect(t.out).To(ContainSubstring("tool http_fetch result (c1):\n  12 issues closed\n"))
		Expect(t.out).To(ContainSubstring("--- turn 2 ---\nassistant:\n  Sprint 43 closed 12 issues.\n"))
		Expect(plugin(ctx, ns, "tree", createdRun(r)).out).To(ContainSubstring("[2 turns, 120 tokens]"))
	})
})

func writeFile(path, content string) error { return os.WriteFile(path, []byte(content), 0o600) }
