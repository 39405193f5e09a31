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
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/hooks"
)

// hooksURL is the manager's hooks endpoint. The test process runs in the cluster's network
// namespace, so it reaches the pod directly; the Service is checked to point at it.
// deliverHook posts a signed delivery to the manager's hooks Service and returns the HTTP
// status and the JSON answer. On the local cluster it runs curl inside the cluster's network
// namespace, against the Service's ClusterIP, as a sender in the cluster would; on another
// cluster it goes through the API server's service proxy. Nothing leaves the machine.
func deliverHook(ctx SpecContext, path string, headers map[string]string, body []byte) (int, map[string]string, error) {
	svc := &corev1.Service{}
	if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: managerNamespace, Name: "ergon-hooks"}, svc); err != nil {
		return 0, nil, err
	}
	var status int
	var raw []byte
	if localCluster() {
		url := "http://" + net.JoinHostPort(svc.Spec.ClusterIP, strconv.Itoa(int(svc.Spec.Ports[0].Port))) + path
		args := []string{"exec", "curl", "-sS", "--max-time", "10", "-o", "-", "-w", "\n%{http_code}", "-X", "POST",
			"--data-binary", "@-", url}
		for k, v := range headers {
			args = append(args, "-H", k+": "+v)
		}
		cmd := exec.CommandContext(ctx, "hack/local-cluster.sh", args...)
		cmd.Dir = repoRoot
		cmd.Stdin = bytes.NewReader(body)
		cmd.Stderr = GinkgoWriter
		out, err := cmd.Output()
		if err != nil {
			return 0, nil, fmt.Errorf("curl in the cluster's network namespace: %w", err)
		}
		cut := bytes.LastIndexByte(out, '\n')
		if cut < 0 {
			return 0, nil, fmt.Errorf("curl printed no status: %q", out)
		}
		raw = out[:cut]
		if status, err = strconv.Atoi(string(out[cut+1:])); err != nil {
			return 0, nil, fmt.Errorf("curl printed no status: %q", out)
		}
	} else {
		req := clientset.CoreV1().RESTClient().Post().
			AbsPath("/api/v1/namespaces", managerNamespace, "services", svc.Name+":http", "proxy").Suffix(path).Body(body)
		for k, v := range headers {
			req.SetHeader(k, v)
		}
		result := req.Do(ctx)
		result.StatusCode(&status)
		raw, _ = result.Raw()
	}
	answer := map[string]string{}
	if err := json.Unmarshal(raw, &answer); err != nil {
		return status, nil, fmt.Errorf("the answer (HTTP %d) is not JSON: %q", status, raw)
	}
	return status, answer, nil
}

// localCluster reports whether the suite runs on the local cluster of hack/local-cluster.sh.
func localCluster() bool {
	cmd := exec.Command("hack/local-cluster.sh", "kubeconfig")
	cmd.Dir = repoRoot
	out, err := cmd.Output()
	return err == nil && strings.TrimSpace(string(out)) == os.Getenv("KUBECONFIG")
}

func runsOfTrigger(ctx SpecContext, ns, trigger string) []ergonv1alpha1.Run {
	list := &ergonv1alpha1.RunList{}
	Expect(k8sClient.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{ergonv1alpha1.LabelTrigger: trigger})).To(Succeed())
	return list.Items
}

var _ = Describe("Triggers on a real cluster", func() {
	It("starts a Run of a * * * * * schedule within its minute", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		scene := &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: "tick", Namespace: ns}}
		scene.Spec.Steps = []ergonv1alpha1.Step{busyboxStep("tick", `echo -n tick > "$ERGON_OUTPUT"`)}
		Expect(k8sClient.Create(ctx, scene)).To(Succeed())
		trigger := &ergonv1alpha1.Trigger{ObjectMeta: metav1.ObjectMeta{Name: "every-minute", Namespace: ns},
			Spec: ergonv1alpha1.TriggerSpec{SceneRef: corev1.LocalObjectReference{Name: "tick"},
				Schedule: &ergonv1alpha1.ScheduleSource{Cron: "* * * * *", ConcurrencyPolicy: ergonv1alpha1.ForbidConcurrent}}}
		Expect(k8sClient.Create(ctx, trigger)).To(Succeed())

		var next time.Time
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(trigger), trigger)).To(Succeed())
			g.Expect(trigger.Status.NextScheduleTime).NotTo(BeNil())
			next = trigger.Status.NextScheduleTime.Time
		}).WithTimeout(30 * time.Second).Should(Succeed())

		// The Run is created at its minute; a few seconds allow for the API round trips.
		var run ergonv1alpha1.Run
		Eventually(func(g Gomega) {
			runs := runsOfTrigger(ctx, ns, "every-minute")
			g.Expect(runs).NotTo(BeEmpty())
			run = runs[0]
		}).WithTimeout(time.Until(next) + 15*time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())
		Expect(run.CreationTimestamp.Time).To(BeTemporally("~", next, 15*time.Second))
		Expect(finished(ctx, &run).Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded))
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(trigger), trigger)).To(Succeed())
		Expect(trigger.Status.LastScheduleTime).NotTo(BeNil())
		Expect(trigger.Status.LastScheduleTime.Time).To(BeTemporally("==", next))
		// Stop it before the next minute adds Runs the namespace deletion has to wait for.
		Expect(k8sClient.Delete(ctx, trigger)).To(Succeed())
	})

	It("starts a Run for a signed delivery to the hooks Service, and the same one for its retry", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		key := []byte("e2e-signing-key")
		Expect(k8sClient.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "hook", Namespace: ns},
			Data: map[string][]byte{"key": key}})).To(Succeed())
		scene := &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: "on-push", Namespace: ns}}
		scene.Spec.Params = []ergonv1alpha1.ParamSpec{{Name: "pr"}}
		scene.Spec.Steps = []ergonv1alpha1.Step{busyboxStep("echo", `echo -n "pr $ERGON_PARAM_pr" > "$ERGON_OUTPUT"`)}
		Expect(k8sClient.Create(ctx, scene)).To(Succeed())
		trigger := &ergonv1alpha1.Trigger{ObjectMeta: metav1.ObjectMeta{Name: "push", Namespace: ns},
			Spec: ergonv1alpha1.TriggerSpec{SceneRef: corev1.LocalObjectReference{Name: "on-push"},
				Webhook: &ergonv1alpha1.WebhookSource{
					SecretRef: corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "hook"}, Key: "key"},
					Params:    map[string]string{"pr": "body.pull_request.number"},
				}}}
		Expect(k8sClient.Create(ctx, trigger)).To(Succeed())
		path := "/hooks/" + ns + "/push"

		body := []byte(`{"pull_request":{"number":7}}`)
		// A retry is signed again, at its own time, with the same delivery id: the same request
		// sent twice is refused as a replay.
		deliver := func(g Gomega, at time.Time) (int, map[string]string) {
			ts := strconv.FormatInt(at.Unix(), 10)
			status, answer, err := deliverHook(ctx, path, map[string]string{
				hooks.HeaderSignature: hooks.Sign(key, ts, "e2e-1", body),
				hooks.HeaderTimestamp: ts,
				hooks.HeaderDelivery:  "e2e-1",
			}, body)
			g.Expect(err).NotTo(HaveOccurred())
			return status, answer
		}
		var first map[string]string
		// The manager's cache sees the new Trigger within moments.
		Eventually(func(g Gomega) {
			status, answer := deliver(g, time.Now())
			g.Expect(status).To(Equal(http.StatusAccepted), fmt.Sprint(answer))
			first = answer
		}).WithTimeout(30 * time.Second).Should(Succeed())
		Expect(first).To(HaveKeyWithValue("namespace", ns))
		status, again := deliver(Default, time.Now().Add(time.Second))
		Expect(status).To(Equal(http.StatusAccepted), fmt.Sprint(again))
		Expect(again["run"]).To(Equal(first["run"]))

		run := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: first["run"], Namespace: ns}}
		Expect(finished(ctx, run).Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded))
		Expect(run.Spec.Params).To(HaveKeyWithValue("pr", "7"))
		Expect(runsOfTrigger(ctx, ns, "push")).To(HaveLen(1))
	})
})
