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
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/naming"
	"github.com/ergon-dev/ergon/internal/tracing"
	"github.com/ergon-dev/ergon/internal/tracing/otlp"
)

// collector is an OTLP endpoint in memory: it keeps every span any manager sends it.
type collector struct {
	mu    sync.Mutex
	spans []sdktrace.ReadOnlySpan
}

func (c *collector) ExportSpans(_ context.Context, spans []sdktrace.ReadOnlySpan) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.spans = append(c.spans, spans...)
	return nil
}

func (c *collector) Shutdown(context.Context) error { return nil }

func (c *collector) get() []sdktrace.ReadOnlySpan {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]sdktrace.ReadOnlySpan(nil), c.spans...)
}

// tracedManager starts a manager that exports traces to c, until the returned function is
// called.
func tracedManager(c *collector, tune ...func(*ctrl.Options)) func() {
	exporter, err := otlp.New(context.Background(), c, otlp.Options{Version: "test"})
	Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- exporter.Start(ctx) }()
	config := suiteConfig()
	config.Traces = exporter
	stop := startManager(config, tune...)
	return func() {
		stop()
		cancel()
		Expect(<-done).To(Succeed())
	}
}

var _ = Describe("The trace of a Run", Serial, func() {
	It("is one tree from the Run to the agent's tool calls, emitted once, across a manager restart while its Gate waits",
		func(ctx SpecContext) {
			kctx, cancel := context.WithCancel(context.Background())
			DeferCleanup(cancel)
			go testKubelet.run(kctx)
			transcript := `{"model":"small","outcome":"Succeeded","startedAt":"2026-12-06T10:00:00Z",` +
				`"finishedAt":"2026-12-06T10:00:09Z","usage":{"turns":2,"promptTokens":300,"completionTokens":40},` +
				`"entries":[{"turn":1,"role":"assistant","durationMs":2000,"usage":{"promptTokens":100,"completionTokens":10},` +
				`"toolCalls":[{"id":"c1","name":"http_fetch","arguments":"{}"}]},` +
				`{"turn":1,"role":"tool","toolCallID":"c1","tool":"http_fetch","content":"page","durationMs":1000},` +
				`{"turn":2,"role":"assistant","content":"done","durationMs":3000,"usage":{"promptTokens":200,"completionTokens":30}}]}`
			ns := newNamespace(ctx, func(pod *corev1.Pod) outcome {
				if isAgentPod(pod) {
					return outcome{Output: "done", Transcript: transcript}
				}
				return echoLastArg(pod)
			})
			scene := &ergonv1alpha1.Scene{}
			scene.Name, scene.Namespace = "traced", ns
			scene.Spec.Models = map[string]ergonv1alpha1.ModelSpec{"default": {BaseURL: "http://llm.models.svc/v1", Model: "small"}}
			scene.Spec.Steps = []ergonv1alpha1.Step{
				container("fetch", "fetched"),
				{Name: "review", DependsOn: []string{"fetch"}, Gate: &ergonv1alpha1.GateStep{Message: "Go?"}},
				{Name: "draft", DependsOn: []string{"review"}, Agent: &ergonv1alpha1.AgentStep{Prompt: "Write it."}},
			}
			Expect(k8sClient.Create(ctx, scene)).To(Succeed())

			spans := &collector{}
			stopMgr()
			DeferCleanup(func() { stopMgr = startManager(suiteConfig()) })
			first := tracedManager(spans)
			run := createRun(ctx, ns, "t-1", "traced", nil)
			pod := &corev1.Pod{}
			Eventually(func() error {
				return k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: naming.StepPodName("t-1", "fetch", 1)}, pod)
			}).Should(Succeed())
			gate := &ergonv1alpha1.Gate{}
			Eventually(func() error {
				return k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: naming.GateName("t-1", "review")}, gate)
			}).WithTimeout(20 * time.Second).Should(Succeed())

			By("restarting the manager while the Gate waits")
			first()
			DeferCleanup(tracedManager(spans))
			patch := client.MergeFrom(gate.DeepCopy())
			gate.Spec.Decision = &ergonv1alpha1.GateDecision{Option: "approve", User: "alice"}
			Expect(k8sClient.Patch(ctx, gate, patch)).To(Succeed())
			Expect(finished(ctx, ns, "t-1").Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded))

			Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(run), run)).To(Succeed())
			traceID := tracing.RunContext(run).TraceID()
			var mine []sdktrace.ReadOnlySpan
			Eventually(func() []string {
				mine = nil
				var names []string
				for _, s := range spans.get() {
					if s.SpanContext().TraceID() == traceID {
						mine = append(mine, s)
						names = append(names, s.Name())
					}
				}
				return names
			}).WithTimeout(10 * time.Second).Should(ContainElements("run traced", "step fetch", "attempt fetch", "step review",
				"step draft", "invoke_agent draft", "chat small", "execute_tool http_fetch"))

			ids := map[string]sdktrace.ReadOnlySpan{}
			for _, s := range mine {
				id := s.SpanContext().SpanID().String()
				Expect(ids).NotTo(HaveKey(id), "span %s emitted twice", s.Name())
				ids[id] = s
			}
			for _, s := range mine {
				if s.Name() == "run traced" {
					Expect(s.Parent().IsValid()).To(BeFalse(), "the Run is the trace's root")
					continue
				}
				Expect(ids).To(HaveKey(s.Parent().SpanID().String()), "span %s hangs from a span of the trace", s.Name())
			}
			attrs := func(name string) map[string]string {
				out := map[string]string{}
				for _, s := range mine {
					if s.Name() == name {
						for _, kv := range s.Attributes() {
							out[string(kv.Key)] = kv.Value.String()
						}
					}
				}
				return out
			}
			Expect(attrs("step review")).To(HaveKeyWithValue("ergon.gate.decided_by", "alice"))
			Expect(attrs("invoke_agent draft")).To(And(HaveKeyWithValue("gen_ai.operation.name", "invoke_agent"),
				HaveKeyWithValue("gen_ai.usage.input_tokens", "300")))
			Expect(attrs("execute_tool http_fetch")).NotTo(HaveKey("gen_ai.tool.call.result"), "contents only when asked")

			By("the step's pod carrying its attempt's span")
			var traceparent string
			for _, e := range pod.Spec.Containers[0].Env {
				if e.Name == "TRACEPARENT" {
					traceparent = e.Value
				}
			}
			Expect(strings.Split(traceparent, "-")).To(HaveLen(4))
			Expect(ids).To(HaveKey(strings.Split(traceparent, "-")[2]))
			Expect(ids[strings.Split(traceparent, "-")[2]].Name()).To(Equal("attempt fetch"))
		}, SpecTimeout(120*time.Second))

	It("keeps what a status write ended when the write's answer is lost", func(ctx SpecContext) {
		kctx, cancel := context.WithCancel(context.Background())
		DeferCleanup(cancel)
		go testKubelet.run(kctx)
		ns := newNamespace(ctx, echoLastArg)
		createScene(ctx, ns, "pair", container("fetch", "fetched"), container("after", "done", "fetch"))

		fetchEnded := func(run *ergonv1alpha1.Run) bool {
			for _, s := range run.Status.Steps {
				if s.Name == "fetch" {
					return s.Phase == ergonv1alpha1.StepSucceeded
				}
			}
			return false
		}
		// The API server applies the write that records fetch's end; its answer never comes
		// back (a manager that stops cancels the pass, a connection breaks).
		var lost atomic.Bool
		loseAnswer := func(o *ctrl.Options) {
			o.NewClient = func(config *rest.Config, options client.Options) (client.Client, error) {
				c, err := client.NewWithWatch(config, options)
				if err != nil {
					return nil, err
				}
				return interceptor.NewClient(c, interceptor.Funcs{SubResourcePatch: func(ctx context.Context, c client.Client,
					sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
					if err := c.SubResource(sub).Patch(ctx, obj, patch, opts...); err != nil {
						return err
					}
					run, ok := obj.(*ergonv1alpha1.Run)
					if ok && run.Namespace == ns && fetchEnded(run) && lost.CompareAndSwap(false, true) {
						return &url.Error{Op: "Patch", URL: "https://apiserver/status", Err: context.Canceled}
					}
					return nil
				}}), nil
			}
		}
		spans := &collector{}
		stopMgr()
		DeferCleanup(func() { stopMgr = startManager(suiteConfig()) })
		DeferCleanup(tracedManager(spans, loseAnswer))

		run := createRun(ctx, ns, "lost-1", "pair", nil)
		Expect(finished(ctx, ns, "lost-1").Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded))
		Expect(lost.Load()).To(BeTrue(), "the answer of the write that ended fetch was lost")
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(run), run)).To(Succeed())
		traceID := tracing.RunContext(run).TraceID()
		count := func() map[string]int {
			n := map[string]int{}
			for _, s := range spans.get() {
				if s.SpanContext().TraceID() == traceID {
					n[s.Name()]++
				}
			}
			return n
		}
		Eventually(count).WithTimeout(10 * time.Second).Should(HaveKeyWithValue("run pair", 1))
		Expect(count()).To(And(HaveKeyWithValue("step fetch", 1), HaveKeyWithValue("attempt fetch", 1),
			HaveKeyWithValue("step after", 1)), "each span once")
	}, SpecTimeout(60*time.Second))
})
