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
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/hooks"
)

// floodSenders is how many 1 MiB posts arrive at once: curl's --parallel-max allows 300.
const floodSenders = 300

// memoryCgroup finds the manager pod's memory cgroup on the local cluster's node (this
// machine): the directory named after the pod's UID, in cgroup v1's memory hierarchy or v2's.
func memoryCgroup(pod *corev1.Pod) (dir string, v1 bool) {
	uid := string(pod.UID)
	for _, root := range []string{"/sys/fs/cgroup/memory", "/sys/fs/cgroup"} {
		_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || dir != "" {
				return fs.SkipDir
			}
			if d.IsDir() && (strings.Contains(d.Name(), uid) || strings.Contains(d.Name(), strings.ReplaceAll(uid, "-", "_"))) {
				dir = path
				return fs.SkipAll
			}
			return nil
		})
		if dir != "" {
			return dir, root == "/sys/fs/cgroup/memory"
		}
	}
	return "", false
}

func readBytes(path string) int64 {
	data, err := os.ReadFile(path)
	Expect(err).NotTo(HaveOccurred())
	n, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	Expect(err).NotTo(HaveOccurred(), "%s: %q", path, data)
	return n
}

var _ = Describe("The hooks endpoint under a flood", Label("load"), func() {
	It("keeps the manager within its memory limit, and admission answering, under 300 unsigned 1 MiB bodies at once", func(ctx SpecContext) {
		if !localCluster() {
			Skip("the flood is sent from inside the local cluster's network, and the memory read from its node")
		}
		ns := newNamespace(ctx)
		Expect(k8sClient.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "hook", Namespace: ns},
			Data: map[string][]byte{"key": []byte("e2e-flood-key")}})).To(Succeed())
		scene := &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: "on-push", Namespace: ns}}
		scene.Spec.Params = []ergonv1alpha1.ParamSpec{{Name: "pr"}}
		scene.Spec.Steps = []ergonv1alpha1.Step{busyboxStep("echo", `true`)}
		Expect(k8sClient.Create(ctx, scene)).To(Succeed())
		// Triggers that map params keep a body that looks signed until it is checked: the worst case.
		for _, name := range []string{"push", "build", "deploy"} {
			Expect(k8sClient.Create(ctx, &ergonv1alpha1.Trigger{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
				Spec: ergonv1alpha1.TriggerSpec{SceneRef: corev1.LocalObjectReference{Name: "on-push"},
					Webhook: &ergonv1alpha1.WebhookSource{
						SecretRef: corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "hook"}, Key: "key"},
						Params:    map[string]string{"pr": "string(body.pr)"},
					}}})).To(Succeed())
		}

		pods := &corev1.PodList{}
		Expect(k8sClient.List(ctx, pods, client.InNamespace(managerNamespace),
			client.MatchingLabels{"app.kubernetes.io/component": "manager"})).To(Succeed())
		Expect(pods.Items).To(HaveLen(1))
		manager := &pods.Items[0]
		limit := manager.Spec.Containers[0].Resources.Limits.Memory().Value()
		Expect(limit).To(BeNumerically(">", 0), "the chart sets the manager's memory limit")
		cgroup, v1 := memoryCgroup(manager)
		Expect(cgroup).NotTo(BeEmpty(), "the manager pod's memory cgroup on the node")
		usage, peakFile := filepath.Join(cgroup, "memory.current"), filepath.Join(cgroup, "memory.peak")
		if v1 {
			usage, peakFile = filepath.Join(cgroup, "memory.usage_in_bytes"), filepath.Join(cgroup, "memory.max_usage_in_bytes")
			// cgroup v1's peak can be reset, so it measures the flood alone.
			Expect(os.WriteFile(peakFile, []byte("0"), 0o644)).To(Succeed())
		}
		before := readBytes(usage)
		restarts := manager.Status.ContainerStatuses[0].RestartCount

		// One body file, and two groups of curl transfers sharing it: half carry a well-formed
		// signature made with no key, half none; spread over the Triggers and paths with none.
		file := filepath.Join(GinkgoT().TempDir(), "body.json")
		flood := bytes.Repeat([]byte(`{"pr":"`+strings.Repeat("x", 1000)+`"}`), hooks.MaxBodyBytes/1012)
		Expect(os.WriteFile(file, flood, 0o600)).To(Succeed())
		svc := &corev1.Service{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: managerNamespace, Name: "ergon-hooks"}, svc)).To(Succeed())
		base := "http://" + net.JoinHostPort(svc.Spec.ClusterIP, strconv.Itoa(int(svc.Spec.Ports[0].Port))) + "/hooks/" + ns + "/"
		paths := []string{"push", "build", "deploy", "nobody", "nothing", "nowhere"}
		args := []string{"curl", "-sS", "-Z", "--parallel-immediate", "--parallel-max", strconv.Itoa(floodSenders)}
		for group := range 2 {
			if group == 1 {
				args = append(args, "--next")
			}
			args = append(args, "--max-time", "60", "-o", "/dev/null", "-w", "\nstatus=%{http_code}\n", "-X", "POST",
				"-H", "Content-Type: application/json", "--data-binary", "@"+file)
			if group == 0 {
				args = append(args, "-H", hooks.HeaderSignature+": sha256="+strings.Repeat("0", 64),
					"-H", hooks.HeaderTimestamp+": "+strconv.FormatInt(time.Now().Unix(), 10))
			}
			for i := range floodSenders / 2 {
				args = append(args, base+paths[(2*i+group)%len(paths)])
			}
		}

		var samples []int64
		stop := make(chan struct{})
		sampled := make(chan struct{})
		go func() {
			defer close(sampled)
			for {
				samples = append(samples, readBytes(usage))
				select {
				case <-stop:
					return
				case <-time.After(50 * time.Millisecond):
				}
			}
		}()
		curl := exec.CommandContext(ctx, "hack/local-cluster.sh", append([]string{"exec"}, args...)...)
		curl.Dir = repoRoot
		var out, stderr bytes.Buffer
		curl.Stdout, curl.Stderr = &out, &stderr
		started := time.Now()
		Expect(curl.Start()).To(Succeed())
		var curlDone sync.WaitGroup
		curlDone.Go(func() { _ = curl.Wait() })

		// Admission answers while the flood arrives: the same manager serves the webhooks.
		time.Sleep(200 * time.Millisecond)
		var admission []time.Duration
		for i := range 5 {
			s := &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("during-flood-%d", i), Namespace: ns}}
			s.Spec.Steps = []ergonv1alpha1.Step{busyboxStep("echo", `true`)}
			t0 := time.Now()
			Expect(k8sClient.Create(ctx, s)).To(Succeed(), "admission during the flood")
			admission = append(admission, time.Since(t0).Round(time.Millisecond))
		}
		curlDone.Wait()
		took := time.Since(started)
		close(stop)
		<-sampled

		statuses := map[string]int{}
		// -o names one transfer's output only: the others' answers reach stdout too, so only
		// the write-out lines count.
		for line := range strings.FieldsSeq(out.String()) {
			if code, ok := strings.CutPrefix(line, "status="); ok {
				statuses[code]++
			}
		}
		peak := readBytes(peakFile)
		sampledPeak := slices.Max(samples)
		report := fmt.Sprintf("manager memory limit %d MiB; usage before %d MiB, sampled peak %d MiB, cgroup peak %d MiB%s; "+
			"answers %v in %s; Scene admission during the flood %v",
			limit>>20, before>>20, sampledPeak>>20, peak>>20, map[bool]string{true: " (since reset)", false: " (since the pod started)"}[v1],
			statuses, took.Round(time.Millisecond), admission)
		AddReportEntry("hooks flood on the local cluster", report)
		GinkgoWriter.Println(report)

		Expect(sampledPeak).To(BeNumerically("<", limit))
		Expect(peak).To(BeNumerically("<", limit))
		// A post refused for the caps is answered without its body being read and the
		// connection closed, so curl, still sending, may see the reset first (000, with error
		// 55 or 56); it must see nothing else go wrong, such as a timeout.
		for line := range strings.Lines(stderr.String()) {
			GinkgoWriter.Print(line)
			if code, ok := strings.CutPrefix(line, "curl: ("); ok {
				Expect(code).To(Or(HavePrefix("55)"), HavePrefix("56)")), "curl: (%s", code)
			}
		}
		total := 0
		for status, n := range statuses {
			Expect(status).To(BeElementOf("401", "429", "503", "000"), "every post is refused, unauthenticated or for the caps")
			total += n
		}
		Expect(statuses["401"] + statuses["429"] + statuses["503"]).To(BeNumerically(">", statuses["000"]))
		Expect(total).To(Equal(floodSenders))
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(manager), manager)).To(Succeed())
		Expect(manager.Status.ContainerStatuses[0].RestartCount).To(Equal(restarts), "the manager was not restarted (OOM)")
		Expect(runsOfTrigger(ctx, ns, "push")).To(BeEmpty())
	})
})
