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
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/naming"
)

// stepNow reads a Run and the status of one of its steps.
func stepNow(ctx SpecContext, run *ergonv1alpha1.Run, name string) (*ergonv1alpha1.Run, ergonv1alpha1.StepStatus) {
	Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(run), run)).To(Succeed())
	for _, s := range run.Status.Steps {
		if s.Name == name {
			return run, s
		}
	}
	return run, ergonv1alpha1.StepStatus{}
}

func succeededCondition(run *ergonv1alpha1.Run) string {
	for _, c := range run.Status.Conditions {
		if c.Type == ergonv1alpha1.ConditionSucceeded {
			return c.Message
		}
	}
	return ""
}

var _ = Describe("Pods that do not run, on a real cluster", func() {
	It("names an image that cannot be pulled, within seconds, and fails the step after its pendingTimeout", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		// A registry on loopback that does not listen: the pull fails at once, nothing leaves
		// the machine.
		bad := busyboxStep("build", "true")
		bad.Container.Image = "127.0.0.1:9/ergon/no-such-image:e2e"
		bad.PendingTimeout = &metav1.Duration{Duration: 25 * time.Second}
		run := runScene(ctx, ns, "pull", bad)
		start := time.Now()
		Eventually(func(g Gomega) {
			run, s := stepNow(ctx, run, "build")
			g.Expect(s.Phase).To(Equal(ergonv1alpha1.StepPending))
			g.Expect(s.Reason).To(BeElementOf("ErrImagePull", "ImagePullBackOff"))
			g.Expect(s.Message).To(ContainSubstring(`the image "127.0.0.1:9/ergon/no-such-image:e2e"`))
			g.Expect(succeededCondition(run)).To(ContainSubstring("step build cannot start"))
		}).WithTimeout(20 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())
		GinkgoWriter.Printf("bad image: step Pending with the pull error after %s\n", time.Since(start).Round(100*time.Millisecond))
		run = finished(ctx, run)
		GinkgoWriter.Printf("bad image: Run Failed after %s (pendingTimeout 25s)\n", time.Since(start).Round(100*time.Millisecond))
		s := stepOf(run, "build")
		Expect(s.Phase).To(Equal(ergonv1alpha1.StepFailed))
		Expect(s.Reason).To(BeElementOf("ErrImagePull", "ImagePullBackOff"))
		Expect(s.Message).To(HavePrefix("the pod did not start within the pendingTimeout of 25s"))
	})

	It("names a missing Secret within seconds", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		scene := &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: "secret", Namespace: ns}}
		scene.Spec.Params = []ergonv1alpha1.ParamSpec{{Name: "password", ValueFrom: &ergonv1alpha1.ParamValueSource{
			SecretKeyRef: corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "db-creds"}, Key: "password"}}}}
		scene.Spec.Steps = []ergonv1alpha1.Step{busyboxStep("query", `test -n "$ERGON_PARAM_password"`)}
		Expect(k8sClient.Create(ctx, scene)).To(Succeed())
		run := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: "secret-1", Namespace: ns},
			Spec: ergonv1alpha1.RunSpec{SceneRef: corev1.LocalObjectReference{Name: "secret"}}}
		Expect(k8sClient.Create(ctx, run)).To(Succeed())
		start := time.Now()
		Eventually(func(g Gomega) {
			_, s := stepNow(ctx, run, "query")
			g.Expect(s.Phase).To(Equal(ergonv1alpha1.StepPending))
			g.Expect(s.Reason).To(Equal("CreateContainerConfigError"))
			g.Expect(s.Message).To(ContainSubstring(`secret "db-creds" not found`))
		}).WithTimeout(30 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())
		GinkgoWriter.Printf("missing Secret: step Pending with the kubelet's message after %s\n", time.Since(start).Round(100*time.Millisecond))

		By("creating the Secret, after which the step runs")
		Expect(k8sClient.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db-creds", Namespace: ns},
			StringData: map[string]string{"password": "hunter2-but-longer"}})).To(Succeed())
		run = finished(ctx, run)
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded), "%+v", run.Status)
	})

	It("says that a step ran out of memory, and at what limit", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		hog := busyboxStep("hog", "dd if=/dev/zero of=/dev/null bs=96M count=1")
		hog.Container.Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("24Mi")}
		run := finished(ctx, runScene(ctx, ns, "oom", hog))
		s := stepOf(run, "hog")
		Expect(s.Phase).To(Equal(ergonv1alpha1.StepFailed))
		Expect(s.Reason).To(Equal("OOMKilled"), "%+v", s)
		Expect(s.Message).To(ContainSubstring("memory limit of 24Mi"))
	})

	It("retries a step whose pod was deleted, only once the deleted pod's containers have ended", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		w, err := clientset.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{})
		Expect(err).NotTo(HaveOccurred())
		defer w.Stop()
		var mu sync.Mutex
		var seen []string // ADDED, ENDED (a terminal phase: every container stopped) or DELETED, and the pod's name
		go func() {
			defer GinkgoRecover()
			for e := range w.ResultChan() {
				pod, ok := e.Object.(*corev1.Pod)
				if !ok {
					continue
				}
				what := string(e.Type)
				if e.Type == watch.Modified {
					if pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed {
						continue
					}
					what = "ENDED"
				}
				mu.Lock()
				seen = append(seen, what+" "+pod.Name)
				mu.Unlock()
			}
		}()
		work := busyboxStep("work", `[ "$ERGON_ATTEMPT" -ge 2 ] || sleep 300; echo -n "attempt $ERGON_ATTEMPT" > "$ERGON_OUTPUT"`)
		work.Retry = &ergonv1alpha1.RetryPolicy{Limit: 1}
		run := runScene(ctx, ns, "vanish", work)
		first, second := naming.StepPodName(run.Name, "work", 1), naming.StepPodName(run.Name, "work", 2)
		pod := &corev1.Pod{}
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: first}, pod)).To(Succeed())
			g.Expect(pod.Status.Phase).To(Equal(corev1.PodRunning))
		}).WithTimeout(2 * time.Minute).Should(Succeed())
		start := time.Now()
		Expect(k8sClient.Delete(ctx, pod)).To(Succeed())
		Eventually(func(g Gomega) {
			_, s := stepNow(ctx, run, "work")
			g.Expect(s.History).To(ConsistOf(HaveField("Reason", "PodDeleted")))
		}).WithTimeout(10 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
		GinkgoWriter.Printf("deleted pod: attempt recorded PodDeleted after %s\n", time.Since(start).Round(100*time.Millisecond))
		run = finished(ctx, run)
		GinkgoWriter.Printf("deleted pod: Run Succeeded after %s\n", time.Since(start).Round(100*time.Millisecond))
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded), "%+v", run.Status)
		Expect(stepOf(run, "work").Output.Preview).To(Equal("attempt 2"))
		mu.Lock()
		defer mu.Unlock()
		Expect(seen).To(ContainElements("ADDED "+first, "ADDED "+second))
		ended, added := -1, -1
		for i, e := range seen {
			switch {
			case ended < 0 && (e == "ENDED "+first || e == "DELETED "+first):
				ended = i
			case e == "ADDED "+second:
				added = i
			}
		}
		Expect(ended).To(BeNumerically(">=", 0), "attempt 1's pod never ended: %v", seen)
		Expect(added).To(BeNumerically(">", ended), "attempt 2 started while attempt 1's pod still ran: %v", seen)
	})
})
