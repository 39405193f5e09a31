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
	"strconv"
	"strings"
	"time"

	"github.com/chromedp/chromedp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

var _ = Describe("The console's Run history in a real browser", func() {
	It("lists an archived and a live Run together, filters them, compares them, and reruns the archived one from a step",
		func(ctx SpecContext) {
			ns := newNamespace(ctx)
			url := startConsole()
			_, token := person(ctx, ns, "historian", "ergon-editor")
			scene := &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Name: "brief", Namespace: ns},
				Spec: ergonv1alpha1.SceneSpec{
					Params: []ergonv1alpha1.ParamSpec{{Name: "tone", Default: new("dry")}},
					Steps: []ergonv1alpha1.Step{
						busyboxStep("fetch", `echo -n "facts $(cat /proc/sys/kernel/random/uuid)" > "$ERGON_OUTPUT"`),
						busyboxStep("write", `echo -n "$ERGON_PARAM_tone brief of $(cat "$ERGON_INPUTS/fetch")" > "$ERGON_OUTPUT"`, "fetch"),
					}}}
			Expect(k8sClient.Create(ctx, scene)).To(Succeed())
			start := func(name, tone string, ttl *int32) *ergonv1alpha1.Run {
				run := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
					Spec: ergonv1alpha1.RunSpec{SceneRef: corev1.LocalObjectReference{Name: "brief"},
						Params: map[string]string{"tone": tone}, TTLSecondsAfterFinished: ttl}}
				Expect(k8sClient.Create(ctx, run)).To(Succeed())
				return run
			}
			old := finished(ctx, start("brief-1", "dry", new(int32(5))))
			Expect(old.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded))
			oldFacts := old.Status.Steps[0].Output.Preview
			Expect(finished(ctx, start("brief-2", "warm", nil)).Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded))
			Eventually(func() error {
				return k8sClient.Get(ctx, client.ObjectKeyFromObject(old), &ergonv1alpha1.Run{})
			}).WithTimeout(2*time.Minute).Should(Satisfy(apierrors.IsNotFound), "brief-1 is archived, then deleted by its TTL")

			bctx := openBrowser(url, token)
			By("listing the archived Run and the live one together")
			Expect(within(bctx, 30*time.Second, chromedp.Navigate(url+"/#/ns/"+ns+"/runs"),
				chromedp.WaitVisible(chromedp.CSS(`#runs tr[data-run="brief-1"][data-archived="true"]`)),
				chromedp.WaitVisible(chromedp.CSS(`#runs tr[data-run="brief-2"]`)))).To(Succeed())
			Expect(evalJS[bool](bctx, `!!document.querySelector('#runs tr[data-run="brief-2"]').hasAttribute("data-archived")`)).
				To(BeFalse(), "a Run still in the cluster is shown live")
			screenshot(bctx, "history.png")

			By("finding one by text in its params and outputs")
			rows := func() string {
				return evalJS[string](bctx, `[...document.querySelectorAll("#runs tbody tr[data-run]")].map((r) => r.dataset.run).join(",")`)
			}
			// The view's inputs are set by script: the page may redraw between a query and a set.
			search := func(text string) {
				Expect(evalJS[bool](bctx, `document.getElementById("filter-text").value = `+strconv.Quote(text)+
					`; document.getElementById("search").click(); true`)).To(BeTrue())
			}
			search("warm brief")
			Eventually(rows).WithTimeout(20 * time.Second).Should(Equal("brief-2"))
			search("dry brief")
			Eventually(rows).WithTimeout(20*time.Second).Should(Equal("brief-1"), "the archive searches the whole outputs")
			search("")
			Eventually(rows).WithTimeout(20 * time.Second).Should(Equal("brief-2,brief-1"))

			By("comparing the two side by side")
			Expect(within(bctx, 30*time.Second,
				chromedp.Click(chromedp.CSS(`#runs tr[data-run="brief-1"] input.pick`)),
				chromedp.Click(chromedp.CSS(`#runs tr[data-run="brief-2"] input.pick`)),
				chromedp.Click(chromedp.CSS("#compare")),
				chromedp.WaitVisible(chromedp.CSS("#compare-view")))).To(Succeed())
			tone := evalJS[string](bctx, `document.querySelector('#compare-params tr.differs[data-param="tone"]').textContent`)
			Expect(tone).To(ContainSubstring("dry"))
			Expect(tone).To(ContainSubstring("warm"))
			Expect(evalJS[string](bctx, `document.querySelector('#compare-steps tr[data-step="write"] td.output').textContent`)).To(Equal("differs"))
			diff := evalJS[string](bctx, `document.querySelector('details.diff[data-step="write"] pre').textContent`)
			Expect(diff).To(ContainSubstring("- dry brief of " + oldFacts))
			Expect(diff).To(ContainSubstring("+ warm brief of facts"))
			Expect(evalJS[string](bctx, `document.querySelector('#compare-head thead').textContent`)).To(ContainSubstring("archived"))
			screenshot(bctx, "compare.png")

			By("opening the archived Run and rerunning it from its write step with another tone")
			Expect(within(bctx, 30*time.Second,
				chromedp.Click(chromedp.CSS(`#compare-head thead th:nth-child(2) a`)),
				chromedp.WaitVisible(chromedp.CSS("#archived")),
				chromedp.WaitVisible(chromedp.CSS(`#graph [data-step="write"]`)),
				chromedp.Click(chromedp.CSS("#rerun")),
				chromedp.WaitVisible(chromedp.CSS("#rerun-form")))).To(Succeed())
			Expect(evalJS[bool](bctx, `document.getElementById("rerun-from").value = "write";
			document.getElementById("rerun-param-tone").value = "bold";
			document.getElementById("rerun-start").click(); true`)).To(BeTrue())
			var again *ergonv1alpha1.Run
			Eventually(func(g Gomega) {
				var list ergonv1alpha1.RunList
				g.Expect(k8sClient.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
				for i := range list.Items {
					if r := &list.Items[i]; r.Spec.RetryOf != nil {
						again = r
					}
				}
				g.Expect(again).NotTo(BeNil())
			}).WithTimeout(30 * time.Second).Should(Succeed())
			Expect(again.Spec.RetryOf).To(Equal(&ergonv1alpha1.RetryReference{Name: "brief-1", From: "write"}))
			Expect(again.Annotations[ergonv1alpha1.AnnotationCreatedBy]).To(HaveSuffix(":historian"))
			Expect(within(bctx, 30*time.Second, chromedp.WaitVisible(chromedp.CSS(`#graph [data-step="write"]`)))).To(Succeed())
			Expect(evalJS[string](bctx, `location.hash`)).To(HaveSuffix("/runs/" + again.Name))
			again = finished(ctx, again)
			Expect(again.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded))
			fetch, write := again.Status.Steps[0], again.Status.Steps[1]
			if fetch.Name != "fetch" {
				fetch, write = write, fetch
			}
			Expect(fetch.Reason).To(Equal(ergonv1alpha1.ReasonReused), "the upstream step is not run again")
			Expect(fetch.PodName).To(BeEmpty())
			Expect(strings.TrimSpace(write.Output.Preview)).To(Equal("bold brief of " + oldFacts))
			screenshot(bctx, "rerun.png")
		})
})
