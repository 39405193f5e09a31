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
	"encoding/pem"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	artifactscontroller "github.com/ergon-dev/ergon/controllers/artifacts"
	runcontroller "github.com/ergon-dev/ergon/controllers/run"
	"github.com/ergon-dev/ergon/internal/archive"
	"github.com/ergon-dev/ergon/internal/artifacts"
	"github.com/ergon-dev/ergon/internal/artifacts/server"
	"github.com/ergon-dev/ergon/internal/artifacts/store"
	"github.com/ergon-dev/ergon/internal/naming"
	"github.com/ergon-dev/ergon/internal/outputs/wire"
)

// artifactEndpoint is the suite's artifact endpoint: the manager's handler over a directory
// store, served with TLS as the webhook server serves it, asking the Run controller of the
// manager that runs now.
type artifactEndpoint struct {
	srv    *httptest.Server
	store  *store.Store
	ca     string
	runs   atomic.Pointer[runcontroller.RunReconciler]
	config *runcontroller.ArtifactsConfig
}

func startArtifacts() *artifactEndpoint {
	a := &artifactEndpoint{}
	dir, err := os.MkdirTemp("", "ergon-artifacts-")
	Expect(err).NotTo(HaveOccurred())
	a.store, err = store.Open(context.Background(), "file://"+filepath.Join(dir, "store"))
	Expect(err).NotTo(HaveOccurred())
	signer, err := artifacts.NewSigner()
	Expect(err).NotTo(HaveOccurred())
	a.srv = httptest.NewTLSServer(&server.Handler{Store: a.store, Signer: signer, Authority: a})
	a.ca = string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: a.srv.Certificate().Raw}))
	a.config = &runcontroller.ArtifactsConfig{Endpoint: a.srv.URL, CA: func() string { return a.ca }, MaxBytes: 1 << 20, RunBytes: 3 << 19,
		Store: a.store}
	DeferCleanup(func() {
		a.srv.Close()
		_ = os.RemoveAll(dir)
	})
	return a
}

func (a *artifactEndpoint) Scope(ctx context.Context, token string) (*artifacts.Scope, error) {
	return a.runs.Load().ArtifactScope(ctx, token)
}

var suiteArtifacts *artifactEndpoint

// flakyArchive is the suite's archive, which a spec can take down.
type flakyArchive struct {
	archive.Store
	down atomic.Bool
}

func (f *flakyArchive) Has(ctx context.Context, uid string) (bool, error) {
	if f.down.Load() {
		return false, errors.New("the archive is down")
	}
	return f.Store.Has(ctx, uid)
}

// stranger creates a pod of the namespace that no Run owns, labelled as a step's.
func stranger(ctx context.Context, ns, name string) *corev1.Pod {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns,
		Labels: map[string]string{ergonv1alpha1.LabelRun: "pages-1", ergonv1alpha1.LabelStep: "render"}},
		Spec: corev1.PodSpec{ServiceAccountName: "default", Containers: []corev1.Container{{Name: "x", Image: "busybox"}}}}
	Expect(k8sClient.Create(ctx, pod)).To(Succeed())
	return pod
}

// podToken is what the kubelet mounts into a step pod for the artifact endpoint: a token of
// the namespace's default ServiceAccount for the endpoint's audience, bound to the pod.
func podToken(ctx context.Context, pod *corev1.Pod, audience string) string {
	cs, err := kubernetes.NewForConfig(cfg)
	Expect(err).NotTo(HaveOccurred())
	tr, err := cs.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(ctx, "default", &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{Audiences: []string{audience}, ExpirationSeconds: new(int64(600)),
			BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID}},
	}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	return tr.Status.Token
}

// artifactClient is the artifact client of a step pod, with its token.
func artifactClient(token string) *artifacts.Client {
	file := filepath.Join(GinkgoT().TempDir(), "token")
	Expect(os.WriteFile(file, []byte(token), 0o600)).To(Succeed())
	c, err := artifacts.NewClient(suiteArtifacts.srv.URL, suiteArtifacts.ca, "", file)
	Expect(err).NotTo(HaveOccurred())
	return c
}

func failureReason(err error) string {
	var f *artifacts.Failure
	if err != nil && errors.As(err, &f) {
		return f.Reason
	}
	return ""
}

var _ = Describe("Artifacts", func() {
	BeforeEach(func() {
		ctx, cancel := context.WithCancel(context.Background())
		go testKubelet.run(ctx)
		DeferCleanup(cancel)
	})

	It("go from the step that makes one to the step that reads it, through the store, to no one else", func(ctx SpecContext) {
		content := strings.Repeat("# The report\n", 4000)
		var renderPod atomic.Pointer[corev1.Pod]
		var renderToken, useToken atomic.Value
		var tried atomic.Bool
		ns := newNamespace(ctx, func(pod *corev1.Pod) outcome {
			defer GinkgoRecover()
			switch pod.Labels[ergonv1alpha1.LabelStep] {
			case "render":
				// What the entrypoint does after the command: announce, get grants, upload.
				renderPod.Store(pod.DeepCopy())
				file := filepath.Join(GinkgoT().TempDir(), "report.md")
				Expect(os.WriteFile(file, []byte(content), 0o600)).To(Succeed())
				size, sum, err := artifacts.FileDigest(file)
				Expect(err).NotTo(HaveOccurred())
				token := podToken(ctx, pod, artifacts.Audience)
				renderToken.Store(token)
				c := artifactClient(token)
				_, err = c.Grants(ctx, artifacts.GrantsRequest{Put: []artifacts.PutRequest{{Name: "notes.md", Size: 1, SHA256: sum}}})
				Expect(failureReason(err)).To(Equal("ArtifactNotDeclared"))
				_, err = c.Grants(ctx, artifacts.GrantsRequest{Get: []artifacts.GetRequest{{Step: "render", Name: "report.md"}}})
				Expect(failureReason(err)).To(Equal("InputArtifactMissing"), "a step reads only what it declares")
				resp, err := c.Grants(ctx, artifacts.GrantsRequest{Put: []artifacts.PutRequest{{Name: "report.md", Size: size, SHA256: sum}}})
				Expect(err).NotTo(HaveOccurred())
				Expect(c.Upload(ctx, resp.Put[0], file)).To(Succeed())
				return outcome{Output: "rendered", Artifacts: []wire.Artifact{{Name: "report.md", Size: size, SHA256: sum}}}
			case "use":
				// A token for the API server's audience is no token for the endpoint.
				_, err := artifactClient(podToken(ctx, pod, "https://kubernetes.default.svc")).Grants(ctx, artifacts.GrantsRequest{})
				Expect(failureReason(err)).To(Equal("Unauthorized"))
				token := podToken(ctx, pod, artifacts.Audience)
				useToken.Store(token)
				c := artifactClient(token)
				_, err = c.Grants(ctx, artifacts.GrantsRequest{Put: []artifacts.PutRequest{{Name: "report.md", Size: 1,
					SHA256: strings.Repeat("0", 64)}}})
				Expect(failureReason(err)).To(Equal("ArtifactNotDeclared"), "a reader cannot write the artifact it reads")
				resp, err := c.Grants(ctx, artifacts.GrantsRequest{Get: []artifacts.GetRequest{{Step: "render", Name: "report.md"}}})
				Expect(err).NotTo(HaveOccurred())
				dest := filepath.Join(GinkgoT().TempDir(), "in", "render", "report.md")
				Expect(c.Download(ctx, resp.Get[0], dest)).To(Succeed())
				b, err := os.ReadFile(dest)
				Expect(err).NotTo(HaveOccurred())
				tried.Store(true)
				return outcome{Output: string(b[:len("# The report\n")])}
			}
			return outcome{Output: "other"}
		})
		Expect(k8sClient.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: ns}})).To(Succeed())
		render := container("render", "make report")
		render.Artifacts = []ergonv1alpha1.Artifact{{Name: "report.md", MediaType: "text/markdown"}}
		use := container("use", "cat $ERGON_INPUT_ARTIFACTS/render/report.md", "render")
		use.InputArtifacts = []ergonv1alpha1.InputArtifact{{Step: "render", Name: "report.md"}}
		createScene(ctx, ns, "pages", render, use)
		createRun(ctx, ns, "pages-1", "pages", nil)
		run := finished(ctx, ns, "pages-1")
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded), "%+v", run.Status.Steps)
		Expect(tried.Load()).To(BeTrue())
		Expect(stepStatus(run, "use").Output.Preview).To(Equal("# The report\n"))

		By("the Run records the artifact, its key made by the controller")
		nsObj := &corev1.Namespace{}
		Expect(k8sClient.Get(ctx, types.NamespacedName{Name: ns}, nsObj)).To(Succeed())
		arts := stepStatus(run, "render").Artifacts
		Expect(arts).To(HaveLen(1))
		Expect(arts[0].Name).To(Equal("report.md"))
		Expect(arts[0].Size).To(Equal(int64(len(content))))
		Expect(arts[0].MediaType).To(Equal("text/markdown"))
		Expect(arts[0].Key).To(Equal(artifacts.Ref{NamespaceUID: nsObj.UID, RunUID: run.UID, Step: "render", Instance: -1,
			Attempt: 1, PodUID: renderPod.Load().UID, Name: "report.md"}.Key()))
		info, err := suiteArtifacts.store.Stat(ctx, arts[0].Key)
		Expect(err).NotTo(HaveOccurred())
		Expect(info.SHA256).To(Equal(arts[0].SHA256))

		By("a rerun from the reading step reads a copy of its own")
		rerun := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: "pages-2", Namespace: ns},
			Spec: ergonv1alpha1.RunSpec{SceneRef: corev1.LocalObjectReference{Name: "pages"},
				RetryOf: &ergonv1alpha1.RetryReference{Name: "pages-1", From: "use"}}}
		Expect(k8sClient.Create(ctx, rerun)).To(Succeed())
		rerun = finished(ctx, ns, "pages-2")
		Expect(rerun.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded), "%+v", rerun.Status.Steps)
		Expect(stepStatus(rerun, "render").Reason).To(Equal(ergonv1alpha1.ReasonReused))
		Expect(stepStatus(rerun, "use").Output.Preview).To(Equal("# The report\n"))
		copied := stepStatus(rerun, "render").Artifacts
		Expect(copied).To(HaveLen(1))
		Expect(copied[0].SHA256).To(Equal(arts[0].SHA256))
		Expect(copied[0].Key).To(HavePrefix(artifacts.RunPrefix(nsObj.UID, rerun.UID)), "no Run reads another's keys")
		info, err = suiteArtifacts.store.Stat(ctx, copied[0].Key)
		Expect(err).NotTo(HaveOccurred())
		Expect(info.SHA256).To(Equal(arts[0].SHA256))

		By("the pods' tokens are good for nothing once their steps ended")
		for _, token := range []any{renderToken.Load(), useToken.Load()} {
			_, err := artifactClient(token.(string)).Grants(ctx, artifacts.GrantsRequest{})
			Expect(failureReason(err)).To(BeElementOf("Forbidden", "Unauthorized"))
		}

		By("the API server refuses the endpoint's token")
		anon := rest.AnonymousClientConfig(cfg)
		anon.BearerToken = podToken(ctx, stranger(ctx, ns, "holder"), artifacts.Audience)
		cs, err := kubernetes.NewForConfig(anon)
		Expect(err).NotTo(HaveOccurred())
		_, err = cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		Expect(apierrors.IsUnauthorized(err)).To(BeTrue(), "%v", err)

		By("a pod of the namespace that no Run owns, named like a step's next pod, gets nothing")
		other := stranger(ctx, ns, naming.StepPodName("pages-1", "render", 2))
		_, err = artifactClient(podToken(ctx, other, artifacts.Audience)).Grants(ctx, artifacts.GrantsRequest{})
		Expect(failureReason(err)).To(Equal("Forbidden"))
	})

	It("are deleted once their Run is gone from the cluster and the archive, and kept while either holds them", func(ctx SpecContext) {
		ns := newNamespace(ctx, func(*corev1.Pod) outcome { return outcome{Stay: true} })
		nsObj := &corev1.Namespace{}
		Expect(k8sClient.Get(ctx, types.NamespacedName{Name: ns}, nsObj)).To(Succeed())
		createScene(ctx, ns, "pages", container("render", "true"))
		live := createRun(ctx, ns, "pages-1", "pages", nil)
		put := func(runUID types.UID) string {
			ref := artifacts.Ref{NamespaceUID: nsObj.UID, RunUID: runUID, Step: "render", Instance: -1, Attempt: 1, PodUID: "p", Name: "a.txt"}
			Expect(suiteArtifacts.store.Put(ctx, ref.Key(), strings.NewReader("x"), 1,
				"2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881")).To(Succeed())
			return ref.Key()
		}
		liveKey, goneKey, archivedKey := put(live.UID), put("gone-"+types.UID(ns)), put("archived-"+types.UID(ns))
		archived := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: "old", Namespace: ns, UID: "archived-" + types.UID(ns)}}
		Expect(suiteArchive.Store.Put(ctx, &archive.Record{NamespaceUID: string(nsObj.UID), Run: *archived})).To(Succeed())
		exists := func(key string) bool {
			_, err := suiteArtifacts.store.Stat(ctx, key)
			if err != nil {
				Expect(err).To(MatchError(store.ErrNotFound))
			}
			return err == nil
		}
		flaky := &flakyArchive{Store: suiteArchive.Store}
		collector := &artifactscontroller.Collector{Store: suiteArtifacts.store, Reader: k8sClient, APIReader: k8sClient,
			Archive: flaky, Clock: clock.RealClock{}, Grace: time.Hour}

		By("what was written within the grace stays, whatever else holds")
		_, err := collector.CollectOnce(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(exists(goneKey)).To(BeTrue())

		By("an archive that does not answer deletes nothing")
		collector.Grace = time.Nanosecond
		flaky.down.Store(true)
		_, err = collector.CollectOnce(ctx)
		Expect(err).To(MatchError(ContainSubstring("asking the archive")))
		Expect(exists(goneKey)).To(BeTrue())

		By("then: the Run that is gone loses its artifacts; the live Run and the archived one keep theirs")
		flaky.down.Store(false)
		_, err = collector.CollectOnce(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(exists(goneKey)).To(BeFalse())
		Expect(exists(liveKey)).To(BeTrue())
		Expect(exists(archivedKey)).To(BeTrue())

		By("the live Run deleted, and its record gone too, its artifacts go")
		Expect(k8sClient.Delete(ctx, live)).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKeyFromObject(live), &ergonv1alpha1.Run{}))
		}).WithTimeout(30 * time.Second).Should(BeTrue())
		collector.Archive = nil
		_, err = collector.CollectOnce(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(exists(liveKey)).To(BeFalse())
		Expect(exists(archivedKey)).To(BeFalse(), "without an archive, nothing holds it")
	})

	It("fail the step that did not report a declared artifact", func(ctx SpecContext) {
		ns := newNamespace(ctx, func(*corev1.Pod) outcome { return outcome{Output: "no artifact"} })
		render := container("render", "true")
		render.Artifacts = []ergonv1alpha1.Artifact{{Name: "report.md"}}
		createScene(ctx, ns, "pages", render)
		createRun(ctx, ns, "pages-1", "pages", nil)
		run := finished(ctx, ns, "pages-1")
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunFailed))
		Expect(stepStatus(run, "render").Reason).To(Equal(ergonv1alpha1.ReasonArtifactMissing))
		Expect(stepStatus(run, "render").Message).To(ContainSubstring(`did not report its artifact "report.md"`))
	})

	It("give the step's pod a token for the endpoint only, its spec and the endpoint's CA", func(ctx SpecContext) {
		ns := newNamespace(ctx, func(*corev1.Pod) outcome { return outcome{Stay: true} })
		render := container("render", "true")
		render.Artifacts = []ergonv1alpha1.Artifact{{Name: "report.md"}, {Name: "chart.svg", Path: "/tmp/out/chart.svg"}}
		createScene(ctx, ns, "pages", render)
		createRun(ctx, ns, "pages-1", "pages", nil)
		pod := &corev1.Pod{}
		Eventually(func(g Gomega) {
			pods := &corev1.PodList{}
			g.Expect(k8sClient.List(ctx, pods, client.InNamespace(ns))).To(Succeed())
			g.Expect(pods.Items).To(HaveLen(1))
			*pod = pods.Items[0]
		}).Should(Succeed())
		Expect(*pod.Spec.AutomountServiceAccountToken).To(BeFalse())
		var projected *corev1.ServiceAccountTokenProjection
		for _, v := range pod.Spec.Volumes {
			if v.Projected != nil {
				for _, s := range v.Projected.Sources {
					if s.ServiceAccountToken != nil {
						Expect(projected).To(BeNil(), "one token")
						projected = s.ServiceAccountToken
					}
				}
			}
		}
		Expect(projected).NotTo(BeNil())
		Expect(projected.Audience).To(Equal(artifacts.Audience), "a token the API server refuses")
		env := map[string]string{}
		for _, e := range pod.Spec.Containers[0].Env {
			env[e.Name] = e.Value
		}
		Expect(env).To(HaveKeyWithValue("ERGON_ARTIFACT_ENDPOINT", suiteArtifacts.srv.URL))
		Expect(env).To(HaveKeyWithValue("ERGON_ARTIFACT_CA", suiteArtifacts.ca))
		Expect(env).To(HaveKeyWithValue("ERGON_ARTIFACT_SPEC",
			`{"put":[{"name":"report.md","path":"/ergon/artifacts/report.md"},{"name":"chart.svg","path":"/tmp/out/chart.svg"}]}`))
		Expect(pod.Spec.InitContainers[0].Command).To(ContainElement("/ergon-artifacts=/ergon/bin/ergon-artifacts"))

		By("the step's pod may write its two artifacts, once the Run's status names it")
		Expect(k8sClient.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: ns}})).To(Succeed())
		Eventually(func(g Gomega) {
			scope, err := suiteArtifacts.Scope(ctx, podToken(ctx, pod, artifacts.Audience))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(scope.Puts).To(HaveKey("report.md"))
			g.Expect(scope.Puts).To(HaveKey("chart.svg"))
			g.Expect(scope.Puts["report.md"].PodUID).To(Equal(pod.UID))
		}).Should(Succeed())

		By("a pod that claims the Run as its owner, and that the status does not name, is told to wait, and gets nothing")
		run := &ergonv1alpha1.Run{}
		Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "pages-1"}, run)).To(Succeed())
		forged := stranger(ctx, ns, "forged-step")
		forged.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(run, ergonv1alpha1.GroupVersion.WithKind("Run"))}
		Expect(k8sClient.Update(ctx, forged)).To(Succeed())
		_, err := suiteArtifacts.Scope(ctx, podToken(ctx, forged, artifacts.Audience))
		refusal, ok := errors.AsType[*artifacts.Refusal](err)
		Expect(ok).To(BeTrue(), "%v", err)
		Expect(refusal.Status).To(Equal(503))
		Expect(refusal.Message).To(ContainSubstring("names no step run by pod"))
	})
})
