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
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/workspace"
	"github.com/ergon-dev/ergon/internal/workspace/browse"
)

// e2eWorkspace is a small Workspace of busybox on the local cluster's local-path provisioner.
func e2eWorkspace(ns, name, user string) *ergonv1alpha1.Workspace {
	return &ergonv1alpha1.Workspace{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: ergonv1alpha1.WorkspaceSpec{User: user, Image: toolImage,
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("200m"), corev1.ResourceMemory: resource.MustParse("128Mi")}},
			Storage: ergonv1alpha1.WorkspaceStorage{Size: resource.MustParse("16Mi"), StorageClassName: new("local-path")}}}
}

// runningWorkspace waits until a Workspace runs a pod other than the one of UID old.
func runningWorkspace(ctx context.Context, ns, name string, old string) *corev1.Pod {
	GinkgoHelper()
	pod := &corev1.Pod{}
	Eventually(func(g Gomega) {
		ws := &ergonv1alpha1.Workspace{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, ws)).To(Succeed())
		g.Expect(ws.Status.Phase).To(Equal(ergonv1alpha1.WorkspaceRunning), "Workspace %s: %v", name, ws.Status.Conditions)
		g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: ws.Status.PodName}, pod)).To(Succeed())
		g.Expect(string(pod.UID)).NotTo(Equal(old))
	}).WithTimeout(90 * time.Second).WithPolling(time.Second).Should(Succeed())
	return pod
}

// shell runs a shell command in the workspace pod as a person with exec rights would.
func shell(ctx context.Context, ns, pod, script string) string {
	GinkgoHelper()
	req := clientset.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: workspace.Container, Command: []string{"sh", "-c", script},
			Stdout: true, Stderr: true}, clientgoscheme.ParameterCodec)
	exec, err := remotecommand.NewSPDYExecutor(cfg, "POST", req.URL())
	Expect(err).NotTo(HaveOccurred())
	var stdout, stderr bytes.Buffer
	Expect(exec.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr})).
		To(Succeed(), "sh -c %q: %s", script, stderr.String())
	return stdout.String()
}

// readFile reads a Workspace's file through the API server, as the console and plugin do.
func readFile(ctx context.Context, files *browse.Client, ns, name, path string) string {
	GinkgoHelper()
	var out bytes.Buffer
	Expect(files.Read(ctx, ns, name, path, &out)).To(Succeed())
	return out.String()
}

var _ = Describe("Workspaces on a real cluster", func() {
	It("runs a hardened pod on the real provisioner whose files survive an image change, and serves them read-only by exec",
		func(ctx SpecContext) {
			ns := newNamespace(ctx)
			desk := e2eWorkspace(ns, "desk", "alice@example.com")
			Expect(k8sClient.Create(ctx, desk)).To(Succeed())
			pod := runningWorkspace(ctx, ns, "desk", "")
			Expect(pod.Name).To(Equal(workspace.ObjectName(desk)))
			Expect(shell(ctx, ns, pod.Name, "id -u; id -G; touch /etc/x 2>&1 || true")).To(
				And(HavePrefix("1000\n"), ContainSubstring("Read-only file system")))
			shell(ctx, ns, pod.Name, "mkdir -p /workspace/notes && echo kept > /workspace/notes/a.txt")

			files, err := browse.New(cfg)
			Expect(err).NotTo(HaveOccurred())
			entries, err := files.List(ctx, ns, "desk", "notes")
			Expect(err).NotTo(HaveOccurred())
			Expect(entries).To(ConsistOf(And(HaveField("Name", "a.txt"), HaveField("Type", "file"), HaveField("Size", int64(5)))))
			Expect(readFile(ctx, files, ns, "desk", "/notes/a.txt")).To(Equal("kept\n"))
			var out bytes.Buffer
			Expect(files.Read(ctx, ns, "desk", "../../proc/1/environ", &out)).NotTo(Succeed())

			By("the plugin lists and prints them the same way")
			code, stdout, _ := ran(ergon(ns, "files", "ls", "desk", "notes"))
			Expect(code).To(BeZero())
			Expect(stdout).To(HavePrefix("NAME "))
			Expect(stdout).To(MatchRegexp(`(?m)^a\.txt\s+file\s+5\s+\d{4}-\d\d-\d\dT`))
			code, stdout, _ = ran(ergon(ns, "files", "cat", "desk", "notes/a.txt"))
			Expect(code).To(BeZero())
			Expect(stdout).To(Equal("kept\n"))
			code, stdout, stderr := ran(ergon(ns, "files", "cat", "desk", "../../proc/1/environ"))
			Expect(code).NotTo(BeZero())
			Expect(stdout).To(BeEmpty())
			Expect(stderr).To(ContainSubstring("lstat /proc: no such file"), "the path is read under /workspace, never above it")

			By("a new image replaces the pod and reattaches the same volume")
			Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
				ws := &ergonv1alpha1.Workspace{}
				if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "desk"}, ws); err != nil {
					return err
				}
				ws.Spec.Image = fakeLLMImage() // no shell at all: the pod runs Ergon's entrypoint
				return k8sClient.Update(ctx, ws)
			})).To(Succeed())
			next := runningWorkspace(ctx, ns, "desk", string(pod.UID))
			Expect(next.Spec.Containers[0].Image).To(Equal(fakeLLMImage()))
			Expect(readFile(ctx, files, ns, "desk", "notes/a.txt")).To(Equal("kept\n"))
		})

	It("stops after its idle timeout, wakes on a touch with its files, and keeps its volume, released, when deleted with Retain",
		func(ctx SpecContext) {
			ns := newNamespace(ctx)
			ws := e2eWorkspace(ns, "desk", "bob")
			ws.Spec.IdleTimeout = &metav1.Duration{Duration: time.Minute}
			Expect(k8sClient.Create(ctx, ws)).To(Succeed())
			pod := runningWorkspace(ctx, ns, "desk", "")
			shell(ctx, ns, pod.Name, "echo kept > /workspace/a.txt")

			Eventually(func(g Gomega) ergonv1alpha1.WorkspacePhase {
				g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(ws), ws)).To(Succeed())
				return ws.Status.Phase
			}).WithTimeout(100 * time.Second).WithPolling(2 * time.Second).Should(Equal(ergonv1alpha1.WorkspaceIdle))
			Eventually(func() bool {
				return apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKeyFromObject(pod), &corev1.Pod{}))
			}).WithTimeout(30 * time.Second).Should(BeTrue())

			files, err := browse.New(cfg)
			Expect(err).NotTo(HaveOccurred())
			var out bytes.Buffer
			Expect(files.Read(ctx, ns, "desk", "a.txt", &out)).To(MatchError(browse.ErrNotRunning))
			code, _, stderr := ran(ergon(ns, "files", "cat", "desk", "a.txt"))
			Expect(code).NotTo(BeZero())
			Expect(stderr).To(ContainSubstring("is Idle"), "the plugin says why")
			Expect(stderr).To(ContainSubstring("--wake"), "and how to read it anyway")
			code, stdout, _ := ran(ergon(ns, "files", "cat", "--wake", "90s", "desk", "a.txt"))
			Expect(code).To(BeZero())
			Expect(stdout).To(Equal("kept\n"), "a touch wakes it with its volume")

			By("deleted with Retain, its volume stays, released: no owner, and no Workspace mounts it again")
			Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(ws), ws)).To(Succeed())
			kept := ws.Status.ClaimName
			Expect(k8sClient.Delete(ctx, ws)).To(Succeed())
			Eventually(func() bool {
				return apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKeyFromObject(ws), ws))
			}).WithTimeout(30 * time.Second).Should(BeTrue())
			retained := &corev1.PersistentVolumeClaim{}
			Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: kept}, retained)).To(Succeed())
			Expect(retained.DeletionTimestamp).To(BeNil())
			Expect(retained.OwnerReferences).To(BeEmpty())

			again := e2eWorkspace(ns, "desk-again", "bob")
			again.Spec.ReclaimPolicy = ergonv1alpha1.ReclaimDelete
			Expect(k8sClient.Create(ctx, again)).To(Succeed())
			runningWorkspace(ctx, ns, "desk-again", "")
			Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(again), again)).To(Succeed())
			Expect(again.Status.ClaimName).NotTo(Equal(kept), "a new Workspace makes a claim of its own")
			Expect(files.Read(ctx, ns, "desk-again", "a.txt", &out)).NotTo(Succeed(), "the new volume is empty")
			claim := &corev1.PersistentVolumeClaim{}
			Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: again.Status.ClaimName}, claim)).To(Succeed())
			Expect(k8sClient.Delete(ctx, again)).To(Succeed())
			Eventually(func() bool {
				return apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKeyFromObject(claim), claim))
			}).WithTimeout(60*time.Second).Should(BeTrue(), "reclaimPolicy Delete deletes the volume")
			Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: kept}, retained)).To(Succeed())
			Expect(retained.DeletionTimestamp).To(BeNil(), "the released claim stays")
		})
})
