//go:build e2e && traces

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
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/tracing"
)

// jaegerNamespace is where the traces spec runs Jaeger.
const jaegerNamespace = "ergon-jaeger"

// jaegerImage is Jaeger built from the module proxy (hack/jaeger), imported by make test-traces.
func jaegerImage() string {
	if img := os.Getenv("E2E_JAEGER_IMAGE"); img != "" {
		return img
	}
	return "ergon/jaeger:dev"
}

// deployJaeger runs Jaeger all in one (OTLP receiver, memory store, query API) as the
// Service jaeger: OTLP over HTTP on 4318, the query API on 16686.
func deployJaeger(ctx SpecContext) {
	Expect(client.IgnoreAlreadyExists(k8sClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name: jaegerNamespace, Labels: map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}}}))).To(Succeed())
	deploy := hardenedDeployment(jaegerNamespace, "jaeger", corev1.Container{
		Image: jaegerImage(),
		// Its receivers listen on the pod's address, not only on loopback.
		Env:   []corev1.EnvVar{{Name: "JAEGER_LISTEN_HOST", Value: "0.0.0.0"}},
		Ports: []corev1.ContainerPort{{ContainerPort: 4318}, {ContainerPort: 16686}},
		ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
			HTTPGet: &corev1.HTTPGetAction{Path: "/api/services", Port: intstr.FromInt32(16686)}}},
		VolumeMounts: []corev1.VolumeMount{{Name: "tmp", MountPath: "/tmp"}},
	}, corev1.Volume{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	Expect(k8sClient.Create(ctx, deploy)).To(Succeed())
	Expect(k8sClient.Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "jaeger", Namespace: jaegerNamespace},
		Spec: corev1.ServiceSpec{Selector: deploy.Spec.Selector.MatchLabels, Ports: []corev1.ServicePort{
			{Name: "otlp-http", Port: 4318, TargetPort: intstr.FromInt32(4318)},
			{Name: "query", Port: 16686, TargetPort: intstr.FromInt32(16686)}}}})).To(Succeed())
	Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(deploy), deploy)).To(Succeed())
		g.Expect(deploy.Status.ReadyReplicas).To(BeEquivalentTo(1))
	}).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
}

// jaegerSpan is a span as Jaeger's query API (/api/traces/ID) returns it.
type jaegerSpan struct {
	SpanID        string `json:"spanID"`
	OperationName string `json:"operationName"`
	References    []struct {
		RefType string `json:"refType"`
		TraceID string `json:"traceID"`
		SpanID  string `json:"spanID"`
	} `json:"references"`
	StartTime int64 `json:"startTime"`
	Duration  int64 `json:"duration"`
	Tags      []struct {
		Key   string `json:"key"`
		Value any    `json:"value"`
	} `json:"tags"`
}

func (s *jaegerSpan) tag(key string) string {
	for _, t := range s.Tags {
		if t.Key == key {
			return fmt.Sprint(t.Value)
		}
	}
	return ""
}

// readTrace reads a trace back from Jaeger's query API, through the API server's Service proxy.
func readTrace(ctx SpecContext, traceID string) []jaegerSpan {
	raw, err := clientset.CoreV1().Services(jaegerNamespace).ProxyGet("http", "jaeger", "16686", "/api/traces/"+traceID, nil).DoRaw(ctx)
	if err != nil {
		return nil // not there yet: Jaeger answers 404
	}
	var got struct {
		Data []struct {
			Spans []jaegerSpan `json:"spans"`
		} `json:"data"`
	}
	Expect(json.Unmarshal(raw, &got)).To(Succeed(), string(raw))
	if len(got.Data) != 1 {
		return nil
	}
	return got.Data[0].Spans
}

// restartManager deletes the manager's pod and waits for its replacement to serve admission.
func restartManager(ctx SpecContext) {
	selector := client.MatchingLabels{"app.kubernetes.io/name": "ergon", "app.kubernetes.io/component": "manager"}
	pods := &corev1.PodList{}
	Expect(k8sClient.List(ctx, pods, client.InNamespace(managerNamespace), selector)).To(Succeed())
	Expect(pods.Items).To(HaveLen(1))
	old := pods.Items[0].UID
	Expect(k8sClient.Delete(ctx, &pods.Items[0])).To(Succeed())
	Eventually(func(g Gomega) {
		g.Expect(k8sClient.List(ctx, pods, client.InNamespace(managerNamespace), selector)).To(Succeed())
		g.Expect(pods.Items).To(HaveLen(1))
		g.Expect(pods.Items[0].UID).NotTo(Equal(old))
		ready := false
		for _, c := range pods.Items[0].Status.Conditions {
			ready = ready || c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue
		}
		g.Expect(ready).To(BeTrue())
	}).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
	wait := exec.Command("hack/wait-webhooks.sh", managerNamespace)
	wait.Dir = repoRoot
	out, err := wait.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "hack/wait-webhooks.sh: %s", out)
}

// tree prints a trace's spans as a tree, each with its start (from the root's) and duration.
func tree(spans []jaegerSpan) string {
	children := map[string][]*jaegerSpan{}
	var root *jaegerSpan
	for i := range spans {
		s := &spans[i]
		parent := ""
		for _, ref := range s.References {
			if ref.RefType == "CHILD_OF" {
				parent = ref.SpanID
			}
		}
		if parent == "" {
			root = s
		}
		children[parent] = append(children[parent], s)
	}
	var b strings.Builder
	var walk func(s *jaegerSpan, depth int)
	walk = func(s *jaegerSpan, depth int) {
		fmt.Fprintf(&b, "%-48s %9s %9s\n", strings.Repeat("  ", depth)+s.OperationName,
			(time.Duration(s.StartTime-root.StartTime) * time.Microsecond).Round(time.Millisecond),
			(time.Duration(s.Duration) * time.Microsecond).Round(time.Millisecond))
		kids := children[s.SpanID]
		slices.SortStableFunc(kids, func(a, b *jaegerSpan) int {
			return cmp.Or(cmp.Compare(a.StartTime, b.StartTime), cmp.Compare(a.StartTime+a.Duration, b.StartTime+b.Duration))
		})
		for _, k := range kids {
			walk(k, depth+1)
		}
	}
	if root != nil {
		walk(root, 0)
	}
	return b.String()
}

var _ = Describe("A Run's trace in Jaeger", func() {
	It("is one tree from the Run to the agent's tool call, read back from Jaeger, across a manager restart while its Gate waits",
		func(ctx SpecContext) {
			deployJaeger(ctx)
			DeferCleanup(func(ctx SpecContext) {
				Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: jaegerNamespace}}))).
					To(Succeed())
			})
			By("exporting the manager's traces to Jaeger")
			helm("upgrade", "ergon", "charts/ergon", "--reuse-values",
				"--set", "tracing.endpoint=http://jaeger."+jaegerNamespace+".svc:4318")
			DeferCleanup(func() { helm("upgrade", "ergon", "charts/ergon", "--reuse-values", "--set", "tracing.endpoint=") })

			ns := newNamespace(ctx)
			deployFakeLLM(ctx, ns)
			scene := &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: "traced", Namespace: ns}}
			scene.Spec.Models = map[string]ergonv1alpha1.ModelSpec{"default": {
				BaseURL: ergonv1alpha1.URL(fmt.Sprintf("http://llm.%s.svc/v1", ns)), Model: "fake"}}
			scene.Spec.Steps = []ergonv1alpha1.Step{
				// The step's own program sees the span of its attempt.
				busyboxStep("fetch", `echo -n "$TRACEPARENT" > "$ERGON_OUTPUT"`),
				{Name: "review", DependsOn: []string{"fetch"}, Gate: &ergonv1alpha1.GateStep{Message: "Draft the report?"}},
				{Name: "draft", DependsOn: []string{"review"}, Timeout: &metav1.Duration{Duration: 2 * time.Minute},
					Agent: &ergonv1alpha1.AgentStep{
						Prompt:     "Fetch sprint 43 from the tracker and report what was done.",
						Tools:      []ergonv1alpha1.AgentTool{{Name: ergonv1alpha1.ToolHTTPFetch}},
						AllowHosts: []ergonv1alpha1.Host{ergonv1alpha1.Host(fmt.Sprintf("tracker.%s.svc:8080", ns))},
						MaxTurns:   new(int32(5)),
					}},
			}
			Expect(k8sClient.Create(ctx, scene)).To(Succeed())
			run := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: "traced-1", Namespace: ns},
				Spec: ergonv1alpha1.RunSpec{SceneRef: corev1.LocalObjectReference{Name: "traced"}}}
			Expect(k8sClient.Create(ctx, run)).To(Succeed())
			gate := gateOfRun(ctx, ns, run.Name)

			By("restarting the manager while the Gate waits, then approving it")
			restartManager(ctx)
			carol := as(ctx, ns, "carol", "ergon-gate-approver")
			Expect(patchAs(ctx, carol, gate, types.MergePatchType, `{"spec":{"decision":{"option":"approve"}}}`)).To(Succeed())
			run = finished(ctx, run)
			Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded), "%+v", run.Status)

			By("reading the trace back from Jaeger's query API")
			traceID := tracing.RunContext(run).TraceID().String()
			want := []string{"run traced", "step fetch", "attempt fetch", "step review", "step draft",
				"invoke_agent draft", "chat fake", "execute_tool http_fetch"}
			var spans []jaegerSpan
			Eventually(func(g Gomega) {
				spans = readTrace(ctx, traceID)
				var names []string
				for _, s := range spans {
					names = append(names, s.OperationName)
				}
				g.Expect(names).To(ContainElements(want))
			}).WithTimeout(time.Minute).WithPolling(2 * time.Second).Should(Succeed())

			byID := map[string]*jaegerSpan{}
			for i := range spans {
				s := &spans[i]
				Expect(byID).NotTo(HaveKey(s.SpanID), "span %s emitted twice", s.OperationName)
				byID[s.SpanID] = s
			}
			roots := 0
			for _, s := range spans {
				parents := 0
				for _, ref := range s.References {
					if ref.RefType == "CHILD_OF" {
						parents++
						Expect(ref.TraceID).To(Equal(traceID))
						Expect(byID).To(HaveKey(ref.SpanID), "span %s hangs from a span of the trace", s.OperationName)
					}
				}
				if parents == 0 {
					roots++
					Expect(s.OperationName).To(Equal("run traced"), "the Run is the trace's only root")
				}
			}
			Expect(roots).To(Equal(1))
			GinkgoWriter.Printf("trace %s, %d spans, as Jaeger returns it:\n%s", traceID, len(spans), tree(spans))

			named := func(name string) *jaegerSpan {
				for i := range spans {
					if spans[i].OperationName == name {
						return &spans[i]
					}
				}
				Fail("no span " + name)
				return nil
			}
			Expect(named("step review").tag("ergon.gate.decided_by")).To(Equal("carol"))
			agent := named("invoke_agent draft")
			Expect(agent.tag("gen_ai.operation.name")).To(Equal("invoke_agent"))
			Expect(agent.tag("gen_ai.usage.input_tokens")).NotTo(BeEmpty())
			Expect(named("chat fake").tag("gen_ai.request.model")).To(Equal("fake"))
			tool := named("execute_tool http_fetch")
			Expect(tool.tag("gen_ai.tool.name")).To(Equal("http_fetch"))
			Expect(tool.tag("gen_ai.tool.call.result")).To(BeEmpty(), "contents only when asked")
			Expect(byID[tool.References[0].SpanID].OperationName).To(Equal("invoke_agent draft"))
			// The attempt's span holds its stages and its calls.
			for _, s := range spans {
				if len(s.References) > 0 && s.References[0].SpanID == agent.SpanID {
					Expect(s.StartTime).To(BeNumerically(">=", agent.StartTime), s.OperationName)
					Expect(s.StartTime+s.Duration).To(BeNumerically("<=", agent.StartTime+agent.Duration), s.OperationName)
				}
			}

			By("the step's program having seen its attempt's span in TRACEPARENT")
			parts := strings.Split(stepOf(run, "fetch").Output.Preview, "-")
			Expect(parts).To(HaveLen(4))
			Expect(parts[1]).To(Equal(traceID))
			Expect(byID).To(HaveKey(parts[2]))
			Expect(byID[parts[2]].OperationName).To(Equal("attempt fetch"))
		}, SpecTimeout(10*time.Minute))
})
