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
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/controllers/internal/shared"
	runcontroller "github.com/ergon-dev/ergon/controllers/run"
	"github.com/ergon-dev/ergon/internal/archive"
)

// The suite's manager archives into a real SQLite store in a file. faultyStore stands between
// them so a spec can take the store down for the Runs of its namespace.

var suiteArchive *faultyStore

// archiveGiveUpAfter is how long the suite's deleted Runs wait for a store that is down.
const archiveGiveUpAfter = 4 * time.Second

type faultyStore struct {
	archive.Store
	mu   sync.Mutex
	down map[string]bool // namespace names
}

func startArchive() *faultyStore {
	dir, err := os.MkdirTemp("", "ergon-archive-")
	Expect(err).NotTo(HaveOccurred())
	s, err := archive.Open(context.Background(), "sqlite://"+filepath.Join(dir, "archive.db"))
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { _ = s.Close(); _ = os.RemoveAll(dir) })
	return &faultyStore{Store: s, down: map[string]bool{}}
}

func (f *faultyStore) setDown(ns string, down bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.down[ns] = down
}

func (f *faultyStore) Put(ctx context.Context, rec *archive.Record) error {
	f.mu.Lock()
	down := f.down[rec.Run.Namespace]
	f.mu.Unlock()
	if down {
		return errors.New("connection refused (the store is down for this spec)")
	}
	return f.Store.Put(ctx, rec)
}

// namespaceUID is the UID of a namespace, by which the archive finds its Runs.
func namespaceUID(ctx context.Context, ns string) string {
	n := &corev1.Namespace{}
	ExpectWithOffset(1, k8sClient.Get(ctx, client.ObjectKey{Name: ns}, n)).To(Succeed())
	return string(n.UID)
}

// archivedList lists the namespace's archived Runs.
func archivedList(ctx context.Context, ns string) []archive.Summary {
	page, err := suiteArchive.List(ctx, archive.Query{Namespaces: []string{namespaceUID(ctx, ns)}})
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return page.Items
}

var _ = Describe("The archive", func() {
	BeforeEach(func() {
		ctx, cancel := context.WithCancel(context.Background())
		go testKubelet.run(ctx)
		DeferCleanup(cancel)
	})

	It("keeps a Run that ended, whole, before its time to live deletes it", func(ctx SpecContext) {
		long := strings.Repeat("the whole report. ", 200)
		ns := newNamespace(ctx, func(pod *corev1.Pod) outcome {
			return outcome{Output: long, Log: "step log line\n"}
		})
		createScene(ctx, ns, "report", container("write", "echo"))
		run := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: "report-1", Namespace: ns},
			Spec: ergonv1alpha1.RunSpec{SceneRef: corev1.LocalObjectReference{Name: "report"},
				TTLSecondsAfterFinished: new(int32(0))}}
		Expect(k8sClient.Create(ctx, run)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(run), run)).To(Succeed())
			g.Expect(run.Finalizers).To(ContainElement(ergonv1alpha1.FinalizerArchive))
		}).Should(Succeed())
		uid := run.UID
		Eventually(func() error {
			return k8sClient.Get(ctx, client.ObjectKeyFromObject(run), &ergonv1alpha1.Run{})
		}).WithTimeout(30 * time.Second).Should(Satisfy(apierrors.IsNotFound))

		rec, err := suiteArchive.Get(ctx, []string{namespaceUID(ctx, ns)}, string(uid))
		Expect(err).NotTo(HaveOccurred())
		Expect(rec.Run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded))
		Expect(rec.Values).To(HaveKeyWithValue("write", long), "the whole output, not its preview")
		Expect(rec.Snapshot).NotTo(BeNil())
		Expect(rec.Snapshot.Steps).To(HaveLen(1))
		Expect(rec.Logs).To(HaveLen(1))
		for _, l := range rec.Logs {
			Expect(l).To(ContainSubstring("step log line"))
		}
		Expect(rec.Missing).To(BeEmpty())
		Expect(meta.IsStatusConditionTrue(rec.Run.Status.Conditions, ergonv1alpha1.ConditionArchived)).To(BeFalse(),
			"the record is the Run as it ended")
	})

	It("holds a finished Run and its pods while the store is down, then archives it once", func(ctx SpecContext) {
		ns := newNamespace(ctx, echoLastArg)
		suiteArchive.setDown(ns, true)
		createScene(ctx, ns, "brief", container("say", "echo hi"))
		createRun(ctx, ns, "brief-1", "brief", nil)
		run := finished(ctx, ns, "brief-1")
		Expect(run.Status.Phase).To(Equal(ergonv1alpha1.RunSucceeded))
		Eventually(func(g Gomega) {
			events := &corev1.EventList{}
			g.Expect(k8sClient.List(ctx, events, client.InNamespace(ns))).To(Succeed())
			g.Expect(events.Items).To(ContainElement(HaveField("Reason", "ArchiveFailed")))
		}).Should(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(run), run)).To(Succeed())
			g.Expect(shared.Archived(run)).To(BeFalse())
			g.Expect(run.Finalizers).To(ContainElement(ergonv1alpha1.FinalizerArchive))
			pods := &corev1.PodList{}
			g.Expect(k8sClient.List(ctx, pods, client.InNamespace(ns))).To(Succeed())
			g.Expect(pods.Items).To(HaveLen(1), "its pod waits for the record, which keeps its log's end")
		}).WithTimeout(2 * time.Second).Should(Succeed())

		suiteArchive.setDown(ns, false)
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(run), run)).To(Succeed())
			g.Expect(shared.Archived(run)).To(BeTrue())
			g.Expect(run.Finalizers).NotTo(ContainElement(ergonv1alpha1.FinalizerArchive))
			pods := &corev1.PodList{}
			g.Expect(k8sClient.List(ctx, pods, client.InNamespace(ns))).To(Succeed())
			g.Expect(pods.Items).To(BeEmpty())
		}).WithTimeout(time.Minute).Should(Succeed())
		Expect(archivedList(ctx, ns)).To(HaveLen(1))

		By("writing it again when its Archived condition is lost: one record still")
		first := archivedList(ctx, ns)[0].ArchivedAt
		base := run.DeepCopy()
		meta.RemoveStatusCondition(&run.Status.Conditions, ergonv1alpha1.ConditionArchived)
		Expect(k8sClient.Status().Patch(ctx, run, client.MergeFrom(base))).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(run), run)).To(Succeed())
			g.Expect(shared.Archived(run)).To(BeTrue())
			items := archivedList(ctx, ns)
			g.Expect(items).To(HaveLen(1))
			g.Expect(items[0].ArchivedAt).NotTo(Equal(first))
		}).WithTimeout(time.Minute).Should(Succeed())
	})

	It("lets a deleted Run go without a record once the store stayed down for the wait", func(ctx SpecContext) {
		ns := newNamespace(ctx, func(pod *corev1.Pod) outcome { return outcome{Stay: true} })
		suiteArchive.setDown(ns, true)
		createScene(ctx, ns, "long", container("work", "sleep 1000"))
		run := createRun(ctx, ns, "long-1", "long", nil)
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(run), run)).To(Succeed())
			g.Expect(controllerutil.ContainsFinalizer(run, ergonv1alpha1.FinalizerArchive)).To(BeTrue())
		}).Should(Succeed())
		Expect(k8sClient.Delete(ctx, run)).To(Succeed())
		Consistently(func() error {
			return k8sClient.Get(ctx, client.ObjectKeyFromObject(run), &ergonv1alpha1.Run{})
		}).WithTimeout(archiveGiveUpAfter/2).Should(Succeed(), "it waits for the archive")
		Eventually(func() error {
			return k8sClient.Get(ctx, client.ObjectKeyFromObject(run), &ergonv1alpha1.Run{})
		}).WithTimeout(30 * time.Second).Should(Satisfy(apierrors.IsNotFound))
		Eventually(func(g Gomega) {
			events := &corev1.EventList{}
			g.Expect(k8sClient.List(ctx, events, client.InNamespace(ns))).To(Succeed())
			g.Expect(events.Items).To(ContainElement(And(HaveField("Reason", "ArchiveAbandoned"),
				HaveField("Message", ContainSubstring("without a record")))))
		}).Should(Succeed())
		Expect(archivedList(ctx, ns)).To(BeEmpty())
	})

	It("is not waited for once a manager runs without it: a Run deleted with the finalizer goes", func(ctx SpecContext) {
		stopMgr()
		DeferCleanup(func() { stopMgr = startManager(suiteConfig()) })
		stop := startManager(runcontroller.RunConfig{EntrypointImage: "ergon/manager:test", MaxDepth: 3})
		DeferCleanup(stop)
		ns := newNamespace(ctx, echoLastArg)
		createScene(ctx, ns, "brief", container("say", "echo hi"))
		run := &ergonv1alpha1.Run{ObjectMeta: metav1.ObjectMeta{Name: "brief-2", Namespace: ns,
			Finalizers: []string{ergonv1alpha1.FinalizerArchive}},
			Spec: ergonv1alpha1.RunSpec{SceneRef: corev1.LocalObjectReference{Name: "brief"}}}
		Expect(k8sClient.Create(ctx, run)).To(Succeed())
		Expect(finished(ctx, ns, "brief-2").Finalizers).NotTo(ContainElement(ergonv1alpha1.FinalizerArchive))
		Expect(k8sClient.Delete(ctx, run)).To(Succeed())
		Eventually(func() error {
			return k8sClient.Get(ctx, client.ObjectKeyFromObject(run), &ergonv1alpha1.Run{})
		}).Should(Satisfy(apierrors.IsNotFound))
	})

	It("archives a Run deleted while it runs, as it was", func(ctx SpecContext) {
		ns := newNamespace(ctx, func(pod *corev1.Pod) outcome { return outcome{Stay: true} })
		createScene(ctx, ns, "long", container("work", "sleep 1000"))
		run := createRun(ctx, ns, "long-2", "long", nil)
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "long-2"}, run)).To(Succeed())
			g.Expect(run.Finalizers).To(ContainElement(ergonv1alpha1.FinalizerArchive))
			g.Expect(stepOf(g, run, "work").Phase).To(Equal(ergonv1alpha1.StepRunning))
		}).Should(Succeed())
		Expect(k8sClient.Delete(ctx, run)).To(Succeed())
		Eventually(func() error {
			return k8sClient.Get(ctx, client.ObjectKeyFromObject(run), &ergonv1alpha1.Run{})
		}).WithTimeout(30 * time.Second).Should(Satisfy(apierrors.IsNotFound))
		items := archivedList(ctx, ns)
		Expect(items).To(HaveLen(1))
		Expect(items[0].Name).To(Equal("long-2"))
		Expect(items[0].Phase).To(Equal(string(ergonv1alpha1.RunRunning)))
	})
})
