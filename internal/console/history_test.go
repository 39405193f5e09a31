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
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/kubectlergon"
)

// endedRun makes a Run of the Scene brief (fetch -> approve -> write) that ended at the given
// time, with the write step's output and the approve Gate decided by who.
func endedRun(ns, name string, params map[string]string, labels map[string]string, wrote, who string, ended time.Time) {
	scene := &ergonv1alpha1.Scene{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "brief"},
		Spec: ergonv1alpha1.SceneSpec{
			Params: []ergonv1alpha1.ParamSpec{{Name: "tone", Default: new("dry")}},
			Steps: []ergonv1alpha1.Step{
				{Name: "fetch", Container: &ergonv1alpha1.ContainerStep{Image: "busybox:1.36", Command: []string{"true"}}},
				{Name: "approve", DependsOn: []string{"fetch"}, Gate: &ergonv1alpha1.GateStep{Message: "Go?"}},
				{Name: "write", DependsOn: []string{"approve"}, Container: &ergonv1alpha1.ContainerStep{Image: "busybox:1.36", Command: []string{"true"}}},
			}}}
	if err := admin.Create(ctx, scene); err != nil {
		Expect(admin.Get(ctx, client.ObjectKeyFromObject(scene), scene)).To(Succeed())
	}
	run := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: ergonv1alpha1.RunSpec{SceneRef: corev1.LocalObjectReference{Name: "brief"}, Params: params}}
	Expect(admin.Create(ctx, run)).To(Succeed())
	start, end := metav1.NewTime(ended.Add(-time.Minute)), metav1.NewTime(ended)
	out := func(s string) *ergonv1alpha1.OutputValue {
		return &ergonv1alpha1.OutputValue{Preview: s, Size: int64(len(s)), SHA256: sha256Hex(s)}
	}
	gate := name + "-approve"
	run.Status = ergonv1alpha1.RunStatus{Phase: ergonv1alpha1.RunSucceeded, Progress: "3/3", StartedAt: &start, FinishedAt: &end,
		SceneSnapshot: scene.Spec.DeepCopy(),
		Steps: []ergonv1alpha1.StepStatus{
			{Name: "fetch", Phase: ergonv1alpha1.StepSucceeded, Attempts: 1, StartedAt: &start, FinishedAt: &start, Output: out("facts")},
			{Name: "approve", Phase: ergonv1alpha1.StepSucceeded, Gate: gate, Decision: "approve", StartedAt: &start, FinishedAt: &start},
			{Name: "write", Phase: ergonv1alpha1.StepSucceeded, Attempts: 1, StartedAt: &start, FinishedAt: &end, Output: out(wrote)},
		}}
	Expect(admin.Status().Update(ctx, run)).To(Succeed())
	g := &ergonv1alpha1.Gate{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: gate, Labels: map[string]string{ergonv1alpha1.LabelRun: name}},
		Spec: ergonv1alpha1.GateSpec{RunRef: corev1.LocalObjectReference{Name: name}, Step: "approve", Message: "Go?"}}
	Expect(admin.Create(ctx, g)).To(Succeed())
	g.Status = ergonv1alpha1.GateStatus{Phase: ergonv1alpha1.GateApproved, Option: "approve", DecidedBy: who}
	Expect(admin.Status().Update(ctx, g)).To(Succeed())
}

var _ = Describe("The console's Runs history, compare and rerun", func() {
	It("lists Runs with the archive's filters and says why the archive is not read, as the viewer", func() {
		ns := newNamespace()
		_, token := userToken(ns, "val", "ergon-viewer")
		now := time.Now().Truncate(time.Second)
		endedRun(ns, "brief-1", map[string]string{"tone": "dry"}, map[string]string{"team": "a"}, "a dry brief", "alice", now.Add(-2*time.Hour))
		endedRun(ns, "brief-2", map[string]string{"tone": "warm"}, nil, "a warm brief", "bob", now.Add(-time.Hour))
		b := newBrowser()
		Expect(b.login(token).code).To(Equal(http.StatusOK))
		type page struct {
			Items []struct {
				Name, Phase, StartedBy string
				Archived               bool
			}
			ArchiveError string
		}
		search := func(q string) page {
			a := b.get("/api/history?namespace=" + ns + "&home=" + ns + q)
			Expect(a.code).To(Equal(http.StatusOK), a.body)
			var p page
			Expect(json.Unmarshal([]byte(a.body), &p)).To(Succeed())
			return p
		}
		names := func(p page) []string {
			var out []string
			for _, it := range p.Items {
				out = append(out, it.Name)
			}
			return out
		}
		all := search("")
		Expect(names(all)).To(Equal([]string{"brief-2", "brief-1"}), "newest first")
		// envtest's API server has no aggregator for the archive: the page says so and still lists.
		Expect(all.ArchiveError).To(ContainSubstring("not reachable"))
		Expect(names(search("&text=WARM"))).To(Equal([]string{"brief-2"}))
		Expect(names(search("&label=team%3Da"))).To(Equal([]string{"brief-1"}))
		Expect(names(search("&since=90m"))).To(Equal([]string{"brief-2"}))
		Expect(names(search("&until=90m"))).To(Equal([]string{"brief-1"}))
		Expect(search("&phase=Failed").Items).To(BeEmpty())
		Expect(search("&startedBy=nobody").Items).To(BeEmpty())
		bad := b.get("/api/history?namespace=" + ns + "&since=yesterday")
		Expect(bad.code).To(Equal(http.StatusBadRequest))
		Expect(bad.body).To(ContainSubstring("since"))

		By("refusing a stranger to the namespace with RBAC's answer")
		other := newNamespace()
		_, strangerToken := userToken(other, "mallory", "ergon-viewer")
		s := newBrowser()
		Expect(s.login(strangerToken).code).To(Equal(http.StatusOK))
		refused := s.get("/api/history?namespace=" + ns)
		Expect(refused.code).To(Equal(http.StatusForbidden))
		Expect(refused.body).NotTo(ContainSubstring("brief"))
		Expect(s.get("/api/compare?a=" + ns + "/brief-1&b=" + ns + "/brief-2").code).To(Equal(http.StatusForbidden))
	})

	It("compares two Runs side by side with their outputs' diff and gate answers, and reruns one from a step as the viewer", func() {
		ns := newNamespace()
		editor, token := userToken(ns, "eve", "ergon-editor")
		_, viewerToken := userToken(ns, "val", "ergon-viewer")
		now := time.Now()
		endedRun(ns, "brief-1", map[string]string{"tone": "dry"}, nil, "line one\nline two", "alice", now.Add(-2*time.Hour))
		endedRun(ns, "brief-2", map[string]string{"tone": "warm"}, nil, "line one\nline 2", "bob", now.Add(-time.Hour))
		b := newBrowser()
		Expect(b.login(token).code).To(Equal(http.StatusOK))
		a := b.get("/api/compare?a=" + ns + "/brief-1&b=" + ns + "/brief-2")
		Expect(a.code).To(Equal(http.StatusOK), a.body)
		var c kubectlergon.Comparison
		Expect(json.Unmarshal([]byte(a.body), &c)).To(Succeed())
		Expect(c.Params).To(HaveLen(1))
		Expect(*c.Params[0].A).To(Equal("dry"))
		Expect(*c.Params[0].B).To(Equal("warm"))
		Expect(c.Params[0].Same).To(BeFalse())
		byName := map[string]kubectlergon.StepRow{}
		for _, s := range c.Steps {
			byName[s.Name] = s
		}
		Expect(byName["fetch"].Output).To(Equal("same"))
		Expect(byName["write"].Output).To(Equal("differs"))
		Expect(byName["write"].Diff).To(Equal([]string{"  line one", "- line two", "+ line 2"}))
		Expect(byName["approve"].A.Answers).To(ConsistOf(HaveField("DecidedBy", "alice")))
		Expect(byName["approve"].B.Answers).To(ConsistOf(HaveField("DecidedBy", "bob")))
		Expect(b.get("/api/compare?a=brief-1&b=" + ns + "/brief-2").code).To(Equal(http.StatusBadRequest))

		By("refusing a rerun by a viewer with RBAC's own words, and creating none")
		v := newBrowser()
		Expect(v.login(viewerToken).code).To(Equal(http.StatusOK))
		refused := v.post("/api/namespaces/"+ns+"/runs/brief-1/rerun", `{"from":"write"}`)
		Expect(refused.code).To(Equal(http.StatusForbidden))
		Expect(refused.body).To(ContainSubstring("cannot create resource"))

		By("rerunning from a step with an edited param, as the editor")
		Expect(b.post("/api/namespaces/"+ns+"/runs/brief-1/rerun", `{"from":"write","latest":true}`).code).To(Equal(http.StatusBadRequest))
		stale := b.post("/api/namespaces/"+ns+"/runs/brief-1/rerun", `{"from":"write","uid":"an-older-brief-1"}`)
		Expect(stale.code).To(Equal(http.StatusConflict))
		Expect(stale.body).To(ContainSubstring("only the newest of a name can be rerun"))
		made := b.post("/api/namespaces/"+ns+"/runs/brief-1/rerun", `{"from":"write","params":{"tone":"bold"}}`)
		Expect(made.code).To(Equal(http.StatusOK), made.body)
		run := &ergonv1alpha1.Run{}
		Expect(admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: jsonField(made.body, "name")}, run)).To(Succeed())
		Expect(run.Spec.RetryOf).To(Equal(&ergonv1alpha1.RetryReference{Name: "brief-1", From: "write"}))
		Expect(run.Spec.Params).To(Equal(map[string]string{"tone": "bold"}))
		Expect(run.Annotations[ergonv1alpha1.AnnotationCreatedBy]).To(Equal(editor))

		By("refusing a rerun from a step the Run's snapshot does not have, with admission's words")
		wrong := b.post("/api/namespaces/"+ns+"/runs/brief-1/rerun", `{"from":"nope"}`)
		Expect(wrong.code).To(BeNumerically(">=", 400))
		Expect(wrong.body).To(ContainSubstring("nope"))
	})
})

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
