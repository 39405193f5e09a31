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

package console_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/chromedp/chromedp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/console"
	"github.com/ergon-dev/ergon/test/chromium"
)

// openChromium starts headless Chromium for the spec and logs in with token.
func openChromium(token string) context.Context {
	bctx, stop, err := chromium.Start()
	if errors.Is(err, chromium.ErrMissing) {
		Skip(err.Error())
	}
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(stop)
	DeferCleanup(func() {
		if !CurrentSpecReport().Failed() {
			return
		}
		tctx, cancel := context.WithTimeout(bctx, 10*time.Second)
		defer cancel()
		state, err := chromedp.Run(tctx, chromedp.Evaluate[string](`JSON.stringify({location: location.href,
			live: (document.querySelector("#live") || {}).className, drawn: (document.querySelector("#graph") || {dataset: {}}).dataset.drawn,
			main: ((document.querySelector("main") || document.body || {}).innerText || "").slice(0, 2000)})`))
		GinkgoWriter.Printf("### the browser when the spec failed (err: %v)\n%s\n", err, state)
	})
	Expect(chromedp.Do(bctx, chromedp.Navigate(consoleTS.URL+"/"), chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SetValue(chromedp.CSS("#token"), token), chromedp.Click(chromedp.CSS("#login")),
		chromedp.WaitVisible(chromedp.CSS("#top")))).To(Succeed())
	return bctx
}

func within(bctx context.Context, d time.Duration, actions ...chromedp.Action[chromedp.Void]) error {
	tctx, cancel := context.WithTimeout(bctx, d)
	defer cancel()
	return chromedp.Do(tctx, actions...)
}

func evalJS[T any](bctx context.Context, js string) T {
	v, err := chromedp.Run(bctx, chromedp.Evaluate[T](js))
	Expect(err).NotTo(HaveOccurred(), js)
	return v
}

// largeRun makes a Run of a fan-out of width steps between a first and a last step, and a
// forEach step of instances beside them, its snapshot in a ConfigMap, every step Running.
func largeRun(ns string, width, instances int) *ergonv1alpha1.Run {
	step := func(name string, deps ...string) ergonv1alpha1.Step {
		return ergonv1alpha1.Step{Name: name, DependsOn: deps, Container: &ergonv1alpha1.ContainerStep{Image: "busybox"}}
	}
	now := metav1.Now()
	running := func(name string) ergonv1alpha1.StepStatus {
		return ergonv1alpha1.StepStatus{Name: name, Phase: ergonv1alpha1.StepRunning, StartedAt: &now, Attempts: 1}
	}
	spec := ergonv1alpha1.SceneSpec{Steps: []ergonv1alpha1.Step{step("first")}}
	steps := []ergonv1alpha1.StepStatus{running("first")}
	var branches []string
	for i := range width {
		name := fmt.Sprintf("b%03d", i)
		spec.Steps = append(spec.Steps, step(name, "first"))
		steps = append(steps, running(name))
		branches = append(branches, name)
	}
	items, _ := json.Marshal(make([]int, instances))
	each := step("each")
	each.ForEach = &ergonv1alpha1.ForEach{Items: &apiextensionsv1.JSON{Raw: items}}
	spec.Steps = append(spec.Steps, step("last", branches...), each)
	eachStatus := running("each")
	eachStatus.Instances = &ergonv1alpha1.InstancesStatus{Total: int32(instances), Succeeded: 1, Failed: 1,
		States: "SF" + strings.Repeat("P", instances-2), Failures: []ergonv1alpha1.InstanceFailure{{Index: 1, Reason: "Error", Message: "exit 1"}}}
	steps = append(steps, eachStatus)

	b, err := json.Marshal(spec)
	Expect(err).NotTo(HaveOccurred())
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "large-snapshot"}, Data: map[string]string{"spec": string(b)}}
	Expect(admin.Create(ctx, cm)).To(Succeed())
	run := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "large"},
		Spec: ergonv1alpha1.RunSpec{SceneRef: corev1.LocalObjectReference{Name: "large"}}}
	Expect(admin.Create(ctx, run)).To(Succeed())
	sum := sha256.Sum256(b)
	run.Status = ergonv1alpha1.RunStatus{Phase: ergonv1alpha1.RunRunning, StartedAt: &now, Progress: fmt.Sprintf("0/%d", len(spec.Steps)),
		SceneSnapshotRef: &ergonv1alpha1.OutputRef{ConfigMap: cm.Name, Key: "spec"}, SceneSnapshotSHA256: hex.EncodeToString(sum[:]), Steps: steps}
	Expect(admin.Status().Update(ctx, run)).To(Succeed())
	return run
}

var _ = Describe("The console in a real browser", func() {
	It("draws a large Run in groups, opens a group a page at a time, and follows its steps' changes live", func() {
		ns := newNamespace()
		_, token := userToken(ns, "viewer", "ergon-viewer")
		// Reading the snapshot's ConfigMap, as the aggregated view role lets a viewer.
		Expect(admin.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "configmaps"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}}}})).To(Succeed())
		Expect(admin.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "configmaps"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "configmaps"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "viewer", Namespace: ns}}})).To(Succeed())
		run := largeRun(ns, 120, 300)
		bctx := openChromium(token)

		// first, last and each on their own, the 120 branches one group.
		Expect(within(bctx, time.Minute, chromedp.Navigate(consoleTS.URL+"/#/ns/"+ns+"/runs/"+run.Name),
			chromedp.WaitVisible(chromedp.CSS(`#graph[data-drawn="4"]`)), chromedp.WaitVisible(chromedp.CSS(`#live.on`)))).To(Succeed())
		Expect(evalJS[int](bctx, `document.querySelectorAll('#graph g.node').length`)).To(Equal(4))
		group := `#graph g.node.group[data-group="1"]`
		Expect(evalJS[string](bctx, `document.querySelector('`+group+`').getAttribute("class")`)).To(ContainSubstring("phase-Running"))
		Expect(evalJS[string](bctx, `document.querySelector('`+group+` .kind').textContent`)).To(Equal("fan-out · 120 steps · 120 running"))
		Expect(evalJS[string](bctx, `document.querySelector('`+group+` text').textContent`)).To(Equal("b000 … b119"))
		Expect(evalJS[string](bctx, `document.querySelector('#graph g.node[data-step="each"] .kind').textContent`)).To(Equal("container · 2/300"),
			"a fan-out step counts its finished instances")
		Expect(evalJS[int](bctx, `document.querySelectorAll('#steps details.step').length`)).To(Equal(4), "a closed group draws no member")

		// Clicking the group opens its panel with the first page of its members; scrolling to
		// the end of them draws the next.
		Expect(within(bctx, 30*time.Second, chromedp.Click(chromedp.CSS(group+` a`)),
			chromedp.WaitVisible(chromedp.CSS(`#steps details.group[open] .members details.step[data-step="b049"]`)))).To(Succeed())
		Expect(evalJS[int](bctx, `document.querySelectorAll('#steps details.group .members details.step').length`)).To(Equal(50))
		Expect(within(bctx, 30*time.Second, chromedp.ScrollIntoView(chromedp.CSS(`#steps details.group p.more`)),
			chromedp.WaitVisible(chromedp.CSS(`#steps details.group .members details.step[data-step="b099"]`)))).To(Succeed())

		// A fan-out step's panel shows its instances.
		Expect(evalJS[string](bctx, `document.querySelector('#steps details.step[data-step="each"] canvas.instances').getAttribute("aria-label")`)).
			To(Equal("300 instances: 1 succeeded, 1 failed, 298 not started"))
		Expect(evalJS[string](bctx, `document.querySelector('#steps details.step[data-step="each"] .instances-box').textContent`)).
			To(ContainSubstring("Instance 1: Error exit 1"))

		// A member's change arrives on the Run's stream and changes the group's count.
		patch := client.MergeFrom(run.DeepCopy())
		run.Status.Steps[1].Phase = ergonv1alpha1.StepSucceeded
		run.Status.Steps[2].Phase = ergonv1alpha1.StepFailed
		Expect(admin.Status().Patch(ctx, run, patch)).To(Succeed())
		Eventually(func() string {
			return evalJS[string](bctx, `document.querySelector('`+group+` .kind').textContent`)
		}).Should(Equal("fan-out · 120 steps · 1 succeeded · 118 running · 1 failed"))
		Eventually(func() string {
			return evalJS[string](bctx, `document.querySelector('#steps details.step[data-step="b001"] .phase').textContent`)
		}).Should(Equal("Failed"))

		// A viewer who may not read the snapshot's ConfigMap still gets the Run, without its graph.
		_, blind := userToken(ns, "blind", "ergon-viewer")
		b := newBrowser()
		Expect(b.login(blind).code).To(Equal(http.StatusOK))
		detail := b.get("/api/namespaces/" + ns + "/runs/" + run.Name)
		Expect(detail.code).To(Equal(http.StatusOK), detail.body)
		var d struct {
			Run        ergonv1alpha1.Run `json:"run"`
			Graph      console.Graph     `json:"graph"`
			GraphError string            `json:"graphError"`
		}
		Expect(json.Unmarshal([]byte(detail.body), &d)).To(Succeed())
		Expect(d.Graph.Nodes).To(BeEmpty())
		Expect(d.GraphError).To(ContainSubstring(`cannot get resource "configmaps"`))
		Expect(d.Run.Status.Steps).To(HaveLen(len(run.Status.Steps)))
	})
})
