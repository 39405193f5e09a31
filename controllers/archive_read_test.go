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
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	archivecontroller "github.com/ergon-dev/ergon/controllers/archive"
	"github.com/ergon-dev/ergon/controllers/internal/shared"
	"github.com/ergon-dev/ergon/internal/archiveapi"
)

// as is an authenticator that says every request comes from one person (the front proxy's
// own test proves who a request comes from; this spec proves what that person may read).
type as struct{ user.Info }

func (a as) Authenticate(*http.Request) (user.Info, error) { return a.Info, nil }

var _ = Describe("Reads of the archive", func() {
	BeforeEach(func() {
		ctx, cancel := context.WithCancel(context.Background())
		go testKubelet.run(ctx)
		DeferCleanup(cancel)
	})

	It("show a person only the archived Runs of the namespaces where they may get Runs, asked with their identity", func(ctx SpecContext) {
		// Two namespaces with one archived Run each; the reader may get Runs in the first only.
		var spaces []string
		for _, name := range []string{"mine-1", "theirs-1"} {
			ns := newNamespace(ctx, echoLastArg)
			createScene(ctx, ns, "report", container("write", "secret plans of "+name))
			createRun(ctx, ns, name, "report", nil)
			run := finished(ctx, ns, name)
			Eventually(func(g Gomega) {
				g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(run), run)).To(Succeed())
				g.Expect(shared.Archived(run)).To(BeTrue())
			}).Should(Succeed())
			spaces = append(spaces, ns)
		}
		mine, theirs := spaces[0], spaces[1]
		reader := "archive-reader@example.com"
		role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "run-reader", Namespace: mine},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{ergonv1alpha1.GroupVersion.Group}, Resources: []string{"runs"}, Verbs: []string{"get"}}}}
		Expect(k8sClient.Create(ctx, role)).To(Succeed())
		Expect(k8sClient.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "run-reader", Namespace: mine},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: reader}}})).To(Succeed())

		server := &archiveapi.Server{Store: suiteArchive, Client: k8sClient, Reader: k8sClient,
			Authenticator: as{&user.DefaultInfo{Name: reader, Groups: []string{"system:authenticated"}}}}
		get := func(path string) (int, []byte) {
			rec := httptest.NewRecorder()
			server.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
			return rec.Code, rec.Body.Bytes()
		}
		base := "/apis/archive.ergon.dev/v1alpha1"

		By("listing and getting in their own namespace")
		// The API server's RBAC authorizer sees a new RoleBinding through its informers: a
		// moment after it is created.
		var code int
		var body []byte
		Eventually(func(g Gomega) {
			code, body = get(base + "/namespaces/" + mine + "/archivedruns")
			g.Expect(code).To(Equal(http.StatusOK), string(body))
		}).Should(Succeed())
		list := &archiveapi.ArchivedRunList{}
		Expect(json.Unmarshal(body, list)).To(Succeed())
		Expect(list.Items).To(HaveLen(1))
		Expect(list.Items[0].Name).To(Equal("mine-1"))
		code, body = get(base + "/namespaces/" + mine + "/archivedruns/mine-1")
		Expect(code).To(Equal(http.StatusOK), string(body))
		item := &archiveapi.ArchivedRun{}
		Expect(json.Unmarshal(body, item)).To(Succeed())
		Expect(item.Record.Run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded))

		By("being refused in the other namespace, by name and by list, with the right they lack")
		code, body = get(base + "/namespaces/" + theirs + "/archivedruns/theirs-1")
		Expect(code).To(Equal(http.StatusForbidden))
		Expect(string(body)).To(ContainSubstring("cannot get runs.ergon.dev"))
		code, _ = get(base + "/namespaces/" + theirs + "/archivedruns")
		Expect(code).To(Equal(http.StatusForbidden))

		By("seeing, across namespaces, only the Runs of their own")
		code, body = get(base + "/archivedruns?scene=report")
		Expect(code).To(Equal(http.StatusOK), string(body))
		list = &archiveapi.ArchivedRunList{}
		Expect(json.Unmarshal(body, list)).To(Succeed())
		var names []string
		for _, it := range list.Items {
			names = append(names, it.Namespace+"/"+it.Name)
		}
		Expect(names).To(ContainElement(mine + "/mine-1"))
		Expect(names).NotTo(ContainElement(theirs + "/theirs-1"))

		By("finding nothing by text the reader may not see")
		code, body = get(base + "/archivedruns?text=theirs-1")
		Expect(code).To(Equal(http.StatusOK), string(body))
		list = &archiveapi.ArchivedRunList{}
		Expect(json.Unmarshal(body, list)).To(Succeed())
		Expect(list.Items).To(BeEmpty())
	})

	It("prunes by the retention the cluster admin set on each namespace, and keeps the default elsewhere", func(ctx SpecContext) {
		archived := func(ns string, names ...string) {
			for _, name := range names {
				createRun(ctx, ns, name, "report", nil)
				run := finished(ctx, ns, name)
				Eventually(func(g Gomega) {
					g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(run), run)).To(Succeed())
					g.Expect(shared.Archived(run)).To(BeTrue())
				}).Should(Succeed())
				// Finish times have seconds: the next Run ends in a later one, so it is the newer.
				time.Sleep(time.Until(run.Status.FinishedAt.Add(1100 * time.Millisecond)))
			}
		}
		annotate := func(ns string, annotations map[string]string) {
			n := &corev1.Namespace{}
			Expect(k8sClient.Get(ctx, client.ObjectKey{Name: ns}, n)).To(Succeed())
			n.Annotations = annotations
			Expect(k8sClient.Update(ctx, n)).To(Succeed())
		}
		var spaces []string
		for range 3 {
			ns := newNamespace(ctx, echoLastArg)
			createScene(ctx, ns, "report", container("write", "done"))
			archived(ns, "r-1", "r-2")
			spaces = append(spaces, ns)
		}
		kept, counted, aged := spaces[0], spaces[1], spaces[2]
		annotate(counted, map[string]string{archivecontroller.AnnotationArchiveKeep: "1"})
		annotate(aged, map[string]string{archivecontroller.AnnotationArchiveRetention: "1ms"})

		pruner := &archivecontroller.ArchivePruner{Store: suiteArchive, Reader: k8sClient, Clock: clock.RealClock{},
			Retention: archivecontroller.DefaultArchiveRetention}
		deleted, err := pruner.PruneOnce(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(deleted).To(BeNumerically(">=", 3))
		names := func(ns string) []string {
			var out []string
			for _, s := range archivedList(ctx, ns) {
				out = append(out, s.Name)
			}
			return out
		}
		Expect(names(kept)).To(ConsistOf("r-1", "r-2"))
		Expect(names(counted)).To(ConsistOf("r-2"), "the newest is kept")
		Expect(names(aged)).To(BeEmpty())

		By("saying which namespace's annotation does not parse, and keeping the default there")
		annotate(kept, map[string]string{archivecontroller.AnnotationArchiveRetention: "soon"})
		_, err = pruner.PruneOnce(ctx)
		Expect(err).To(MatchError(ContainSubstring(kept + ": " + archivecontroller.AnnotationArchiveRetention)))
		Expect(names(kept)).To(ConsistOf("r-1", "r-2"))
	})
})
