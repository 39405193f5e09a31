//go:build e2e && chaos

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
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

// The chaos suite (make test-chaos, build tags e2e and chaos, only on the local cluster):
// 30 Runs of a diamond with a Gate are active, a cron Trigger fires every minute and a
// webhook sender delivers every 30 s, while in turn the manager's process is killed (kill -9
// on the node), its pod is force-deleted, the API server, etcd, the kubelet and containerd
// are killed with SIGKILL and started again, and running step pods are killed on the node.
// The 30 Runs first reach their Gates; the Gates are then approved in waves, one before each
// disruption, so that each disruption hits Runs waiting on a Gate, Gates being decided and
// join steps' pods at work. After each disruption it measures when the disrupted part was back and when a new
// one-step Run succeeded (the recovery time). At the end every Run must have succeeded with
// a whole status; every attempt must have had exactly one pod (pods counted by a watch of
// their own, one pod UID per attempt name) and the only failed attempts must be the killed
// ones; every Gate decided once; every cron minute started exactly one Run and every webhook
// delivery exactly one. It prints the figures (docs/chaos.md keeps them), and writes them to
// the file $CHAOS_REPORT names.

const (
	chaosRuns     = 30
	hookInterval  = 30 * time.Second
	recoveryLimit = 3 * time.Minute
)

// recovery is the figure of one disruption.
type recovery struct {
	name        string
	back, probe time.Duration
	activeRuns  int
	runningPods int
}

// probe runs a one-step Run and returns how long after since it succeeded: the recovery time.
func probe(ctx SpecContext, ns, name string, since time.Time) time.Duration {
	run := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: "probe-" + name, Namespace: ns},
		Spec: ergonv1alpha1.RunSpec{SceneRef: corev1.LocalObjectReference{Name: "probe"}}}
	Eventually(func() error { return client.IgnoreAlreadyExists(k8sClient.Create(ctx, run)) }).
		WithTimeout(recoveryLimit).WithPolling(250 * time.Millisecond).Should(Succeed())
	Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(run), run)).To(Succeed())
		g.Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded))
	}).WithTimeout(recoveryLimit).WithPolling(250*time.Millisecond).Should(Succeed(), func() string { return describe(ctx, run) })
	return time.Since(since)
}

// describe tells what a Run and the pods of its namespace are doing, for a failure message.
func describe(ctx SpecContext, run *ergonv1alpha1.Run) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Run %s: %s %s, conditions %+v\n", run.Name, run.Status.Phase, run.Status.Progress, run.Status.Conditions)
	for _, s := range run.Status.Steps {
		fmt.Fprintf(&b, "  step %s: %s %s %s attempts %d pod %s\n", s.Name, s.Phase, s.Reason, s.Message, s.Attempts, s.PodName)
	}
	pods := &corev1.PodList{}
	if k8sClient.List(ctx, pods, client.InNamespace(run.Namespace)) == nil {
		phases := map[corev1.PodPhase]int{}
		for _, p := range pods.Items {
			phases[p.Status.Phase]++
			if p.Labels[ergonv1alpha1.LabelRun] == run.Name {
				fmt.Fprintf(&b, "  pod %s: %s %+v\n", p.Name, p.Status.Phase, p.Status.ContainerStatuses)
			}
		}
		fmt.Fprintf(&b, "pods of the namespace by phase: %v\n", phases)
	}
	return b.String()
}

// load counts the diamond Runs not yet finished and the pods running in the namespace.
func load(ctx SpecContext, ns string) (active, running int) {
	runs := &ergonv1alpha1.RunList{}
	if k8sClient.List(ctx, runs, client.InNamespace(ns)) == nil {
		for _, r := range runs.Items {
			if r.Spec.SceneRef.Name == "diamond" && !r.Status.Phase.Finished() {
				active++
			}
		}
	}
	pods := &corev1.PodList{}
	if k8sClient.List(ctx, pods, client.InNamespace(ns)) == nil {
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
	}
	return active, running
}

func phaseOf(run *ergonv1alpha1.Run, step string) ergonv1alpha1.StepPhase {
	for _, s := range run.Status.Steps {
		if s.Name == step {
			return s.Phase
		}
	}
	return ""
}

func allRuns(ctx SpecContext, ns string) []ergonv1alpha1.Run {
	list := &ergonv1alpha1.RunList{}
	Expect(k8sClient.List(ctx, list, client.InNamespace(ns))).To(Succeed())
	return list.Items
}

var _ = Describe("Chaos", Ordered, func() {
	It("finishes every Run, attempt, Gate and Trigger fire exactly once while the cluster's parts are killed in turn", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		DeferCleanup(ensureClusterHealthy) // before the namespace goes: every component back
		ledger := watchPodLedger(ctx, ns)

		step := func(name, sleep string, deps ...string) ergonv1alpha1.Step {
			s := busyboxStep(name, `sleep `+sleep+`; echo -n "$ERGON_STEP of $ERGON_RUN" > "$ERGON_OUTPUT"`, deps...)
			s.Retry = &ergonv1alpha1.RetryPolicy{Limit: 3, Backoff: &ergonv1alpha1.Backoff{Duration: &metav1.Duration{Duration: 2 * time.Second}}}
			return s
		}
		gate := ergonv1alpha1.Step{Name: "review", DependsOn: []string{"fetch"}, Gate: &ergonv1alpha1.GateStep{Message: "go on?"}}
		scenes := map[string][]ergonv1alpha1.Step{
			"diamond": {step("fetch", "1"), step("left", "1", "fetch"), gate, step("join", "8", "left", "review")},
			"probe":   {busyboxStep("ping", `echo -n pong > "$ERGON_OUTPUT"`)},
			"tick":    {step("tick", "1")},
			"on-push": {step("echo", "1")},
		}
		for name, steps := range scenes {
			scene := &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
			scene.Spec.Steps = steps
			Expect(k8sClient.Create(ctx, scene)).To(Succeed())
		}
		var figures []recovery
		start := time.Now()
		figures = append(figures, recovery{name: "none (baseline, idle)", probe: probe(ctx, ns, "baseline", start)})

		By("30 Runs of a diamond, each up to its Gate")
		var runNames []string
		for i := range chaosRuns {
			run := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("diamond-%02d", i), Namespace: ns},
				Spec: ergonv1alpha1.RunSpec{SceneRef: corev1.LocalObjectReference{Name: "diamond"}}}
			Expect(k8sClient.Create(ctx, run)).To(Succeed())
			runNames = append(runNames, run.Name)
		}
		Eventually(func(g Gomega) {
			waiting := 0
			for _, r := range allRuns(ctx, ns) {
				if r.Spec.SceneRef.Name == "diamond" && phaseOf(&r, "left") == ergonv1alpha1.StepSucceeded &&
					phaseOf(&r, "review") == ergonv1alpha1.StepWaiting {
					waiting++
				}
			}
			g.Expect(waiting).To(Equal(chaosRuns), "Runs waiting on their Gate")
		}).WithTimeout(8 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
		GinkgoWriter.Printf("chaos: 30 Runs at their Gates after %s\n", time.Since(start).Round(time.Second))
		gateCtx, stopGates := context.WithCancel(ctx)
		defer stopGates()
		approver := approveReleasedGates(gateCtx, ns, runNames)

		By("a cron Trigger firing every minute and a webhook sender delivering every 15 s")
		history := int32(100)
		cron := &ergonv1alpha1.Trigger{ObjectMeta: metav1.ObjectMeta{Name: "every-minute", Namespace: ns},
			Spec: ergonv1alpha1.TriggerSpec{SceneRef: corev1.LocalObjectReference{Name: "tick"},
				SuccessfulRunsHistoryLimit: &history, FailedRunsHistoryLimit: &history,
				Schedule: &ergonv1alpha1.ScheduleSource{Cron: "* * * * *", ConcurrencyPolicy: ergonv1alpha1.AllowConcurrent}}}
		Expect(k8sClient.Create(ctx, cron)).To(Succeed())
		key := []byte("chaos-signing-key")
		Expect(k8sClient.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "hook", Namespace: ns},
			Data: map[string][]byte{"key": key}})).To(Succeed())
		push := &ergonv1alpha1.Trigger{ObjectMeta: metav1.ObjectMeta{Name: "push", Namespace: ns},
			Spec: ergonv1alpha1.TriggerSpec{SceneRef: corev1.LocalObjectReference{Name: "on-push"},
				SuccessfulRunsHistoryLimit: &history, FailedRunsHistoryLimit: &history,
				Webhook: &ergonv1alpha1.WebhookSource{
					SecretRef: corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "hook"}, Key: "key"}}}}
		Expect(k8sClient.Create(ctx, push)).To(Succeed())
		hookCtx, stopHooks := context.WithCancel(ctx)
		defer stopHooks()
		sender := sendHooks(ctx, hookCtx, "/hooks/"+ns+"/push", key, hookInterval)

		figures = append(figures, recovery{name: "none (under load)", probe: probe(ctx, ns, "loaded", time.Now())})

		var killed []string
		var killedAt time.Time // the step pods' disruption starts at its first kill, not its search
		disruptions := []struct {
			name string
			do   func() func(Gomega)
		}{
			{"manager process kill -9", func() func(Gomega) { return killManagerProcess(ctx) }},
			{"manager pod force-deleted", func() func(Gomega) { return deleteManagerPod(ctx) }},
			{"kube-apiserver kill -9", func() func(Gomega) { restartComponent("kube-apiserver"); return apiReady(ctx) }},
			{"etcd kill -9", func() func(Gomega) { restartComponent("etcd"); return apiReady(ctx) }},
			{"kubelet kill -9", func() func(Gomega) {
				at := time.Now()
				restartComponent("kubelet")
				return nodeReadySince(ctx, at)
			}},
			{"containerd kill -9", func() func(Gomega) {
				at := time.Now()
				restartComponent("containerd")
				return nodeReadySince(ctx, at)
			}},
			{"step pods kill -9 on the node", func() func(Gomega) {
				killed, killedAt = killStepPods(ctx, ns, "join", 4)
				return func(Gomega) {}
			}},
		}
		for i, d := range disruptions {
			By("disrupting: " + d.name)
			// Release the next wave of Gates: their joins start now and are at work when it hits.
			approver.release((i + 1) * chaosRuns / (len(disruptions) + 1))
			time.Sleep(5 * time.Second)
			rec := recovery{name: d.name}
			rec.activeRuns, rec.runningPods = load(ctx, ns)
			at := time.Now()
			back := d.do()
			Eventually(back).WithTimeout(recoveryLimit).WithPolling(250*time.Millisecond).Should(Succeed(), d.name)
			rec.back = time.Since(at)
			if !killedAt.IsZero() {
				at, rec.back = killedAt, 0 // nothing to come back: only the Runs recover
			}
			rec.probe = probe(ctx, ns, strconv.Itoa(i), at)
			figures = append(figures, rec)
			GinkgoWriter.Printf("chaos: %-30s back after %6s, a new Run succeeded after %6s (%d Runs active, %d pods running)\n",
				d.name, rec.back.Round(100*time.Millisecond), rec.probe.Round(100*time.Millisecond), rec.activeRuns, rec.runningPods)
		}
		approver.release(chaosRuns)
		stopHooks()
		sender.wg.Wait()

		By("waiting for every Run to finish, then stopping the cron Trigger")
		Eventually(func(g Gomega) {
			for _, r := range allRuns(ctx, ns) {
				if r.Spec.SceneRef.Name == "diamond" {
					g.Expect(r.Status.Phase.Finished()).To(BeTrue(), "%s is %s", r.Name, r.Status.Phase)
				}
			}
		}).WithTimeout(10 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
		stopGates()
		suspendedAt := time.Now()
		Expect(k8sClient.Patch(ctx, cron, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"suspend":true}}`)))).To(Succeed())
		var runs []ergonv1alpha1.Run
		Eventually(func(g Gomega) {
			runs = allRuns(ctx, ns)
			for _, r := range runs {
				g.Expect(r.Status.Phase.Finished()).To(BeTrue(), "%s is %s", r.Name, r.Status.Phase)
			}
		}).WithTimeout(3 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
		chaosTime := time.Since(start)

		By("every Run succeeded with a whole status")
		diamonds := 0
		for _, r := range runs {
			Expect(r.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded), "%s: %+v", r.Name, r.Status)
			for _, s := range r.Status.Steps {
				Expect(s.Phase).To(Equal(ergonv1alpha1.StepSucceeded), "%s/%s", r.Name, s.Name)
			}
			if r.Spec.SceneRef.Name != "diamond" {
				continue
			}
			diamonds++
			Expect(r.Status.Progress).To(Equal("4/4"), r.Name)
			Expect(r.Status.Outputs).To(HaveKeyWithValue("join", HaveField("Preview", "join of "+r.Name)), r.Name)
			Expect(stepOf(&r, "review").Decision).To(Equal("approve"), r.Name)
		}
		Expect(diamonds).To(Equal(chaosRuns))

		By("every attempt had exactly one pod, and only the killed attempts failed")
		Expect(ledger.reused()).To(BeEmpty(), "pod names created more than once (an attempt ran twice)")
		seen := ledger.attempts()
		pods, retried := 0, 0
		for _, r := range runs {
			for _, s := range r.Status.Steps {
				key := r.Name + "/" + s.Name
				if s.Gate != "" {
					Expect(seen).NotTo(HaveKey(key), "a gate step had a pod")
					continue
				}
				var want []string
				for a := int32(1); a <= s.Attempts; a++ {
					want = append(want, strconv.Itoa(int(a)))
				}
				Expect(seen[key]).To(ConsistOf(want), "%s: pods of attempts %v, status says %d attempts", key, seen[key], s.Attempts)
				pods += len(seen[key])
				delete(seen, key)
				for _, h := range s.History {
					Expect(killed).To(ContainElement(h.PodName), "%s: attempt %d failed (%s: %s) but was not killed", key, h.Attempt, h.Reason, h.Message)
					retried++
				}
			}
		}
		Expect(seen).To(BeEmpty(), "pods of no step of any Run")
		Expect(retried).To(Equal(len(killed)), "every killed attempt failed and was retried: killed %v", killed)

		By("every Gate was decided once")
		gates := &ergonv1alpha1.GateList{}
		Expect(k8sClient.List(ctx, gates, client.InNamespace(ns))).To(Succeed())
		Expect(gates.Items).To(HaveLen(chaosRuns), "one Gate per Run")
		for _, g := range gates.Items {
			Expect(g.Status.Option).To(Equal("approve"), "Gate %s: %+v", g.Name, g.Status)
			Expect(approver.decided).To(HaveKeyWithValue(g.Name, 1), "Gate %s decided once", g.Name)
		}

		By("every cron minute started exactly one Run")
		minutes := map[int64]int{}
		var late time.Duration
		for _, r := range runsOfTrigger(ctx, ns, cron.Name) {
			m, err := strconv.ParseInt(r.Name[strings.LastIndexByte(r.Name, '-')+1:], 10, 64)
			Expect(err).NotTo(HaveOccurred(), r.Name)
			minutes[m]++
			late = max(late, r.CreationTimestamp.Sub(time.Unix(m*60, 0)))
		}
		first := cron.CreationTimestamp.Unix()/60 + 1
		last := suspendedAt.Add(-20*time.Second).Unix() / 60 // a fire just before the suspension may be left
		for m := first; m <= last; m++ {
			Expect(minutes).To(HaveKeyWithValue(m, 1), "the fire of %s", time.Unix(m*60, 0).UTC().Format(time.TimeOnly))
		}
		for m, n := range minutes {
			Expect(m).To(BeNumerically(">=", first), "a Run for %d, before the Trigger existed", m)
			Expect(n).To(Equal(1))
		}

		By("every webhook delivery started exactly one Run")
		Expect(sender.failed).To(BeEmpty(), "deliveries never accepted")
		Expect(sender.accepted).To(HaveLen(sender.sent))
		hookRuns := map[string]bool{}
		for _, r := range runsOfTrigger(ctx, ns, push.Name) {
			hookRuns[r.Name] = true
		}
		named := map[string]bool{}
		for _, run := range sender.accepted {
			named[run] = true
		}
		Expect(named).To(HaveLen(len(sender.accepted)), "two deliveries named the same Run")
		Expect(hookRuns).To(Equal(named), "the Runs of the webhook Trigger are the ones its deliveries named")

		report := chaosReport(figures, chaosTime, pods, len(killed), len(minutes), late, sender, ledger.gaps)
		GinkgoWriter.Print(report)
		AddReportEntry("chaos figures", report, ReportEntryVisibilityAlways)
		if path := os.Getenv("CHAOS_REPORT"); path != "" {
			Expect(os.WriteFile(path, []byte(report), 0o644)).To(Succeed())
		}
	})
})

// chaosReport renders the figures as the table docs/chaos.md keeps.
func chaosReport(figures []recovery, total time.Duration, pods, killed, fires int, late time.Duration, s *hookSender, gaps int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\nchaos figures (%s, %d CPUs, %d diamond Runs, cron every minute, a webhook delivery every %s)\n",
		time.Now().UTC().Format(time.DateTime), runtime.NumCPU(), chaosRuns, hookInterval)
	fmt.Fprintf(&b, "| %-30s | %-9s | %-17s | %-11s | %-12s |\n",
		"disruption", "part back", "new Run succeeded", "Runs active", "pods running")
	fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", strings.Repeat("-", 30), strings.Repeat("-", 9),
		strings.Repeat("-", 17), strings.Repeat("-", 11), strings.Repeat("-", 12))
	for _, f := range figures {
		back := "-"
		if f.back > 0 {
			back = f.back.Round(100 * time.Millisecond).String()
		}
		fmt.Fprintf(&b, "| %-30s | %9s | %17s | %11d | %12d |\n", f.name, back, f.probe.Round(100*time.Millisecond), f.activeRuns, f.runningPods)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	fmt.Fprintf(&b, "all Runs succeeded in %s; %d step pods for %d attempts, one pod per attempt; "+
		"%d killed attempts, each retried once; watch gaps %d\n", total.Round(time.Second), pods, pods, killed, gaps)
	fmt.Fprintf(&b, "cron: %d minutes fired, each exactly once, at most %s late; "+
		"webhook: %d deliveries, each accepted and one Run, after %d requests\n",
		fires, late.Round(100*time.Millisecond), len(s.accepted), s.tries)
	return b.String()
}
