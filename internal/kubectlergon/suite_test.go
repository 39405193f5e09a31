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

package kubectlergon

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	gatecontroller "github.com/ergon-dev/ergon/controllers/gate"
	runcontroller "github.com/ergon-dev/ergon/controllers/run"
	triggercontroller "github.com/ergon-dev/ergon/controllers/trigger"
	"github.com/ergon-dev/ergon/test/testenv"
	webhookv1alpha1 "github.com/ergon-dev/ergon/webhook/v1alpha1"
)

// The plugin is tested against a real kube-apiserver with Ergon's webhooks and controllers
// running, as a user runs it: through a kubeconfig, with --as for other people. envtest has
// no kubelet: podsim plays it, and serves the logs it writes to both the Run controller and
// the plugin (the one thing the plugin reads from elsewhere than the API server).
var (
	testEnv    *testenv.Environment
	k8sClient  client.Client
	kubeconfig string
	sim        = testenv.NewKubelet(stepContainer)
	podLogs    = simLogs{sim.Logs}
	stop       context.CancelFunc
)

func TestPlugin(t *testing.T) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Skip("KUBEBUILDER_ASSETS is not set: the envtest suite needs kube-apiserver and etcd (make test sets it)")
	}
	RegisterFailHandler(Fail)
	RunSpecs(t, "kubectl-ergon suite")
}

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	// A Run's first status write can take more than Gomega's default second on a loaded 2-core
	// machine (CI met it: a Gate not yet in the status after 1 s), as in the other envtest suites.
	SetDefaultEventuallyTimeout(10 * time.Second)
	var err error
	testEnv, err = testenv.Start(true)
	Expect(err).NotTo(HaveOccurred())
	cfg := testEnv.Config
	k8sClient, err = client.New(cfg, client.Options{Scheme: Scheme})
	Expect(err).NotTo(HaveOccurred())

	// The plugin runs as an administrator through a kubeconfig, and as others with --as.
	admin, err := testEnv.AddUser(envtest.User{Name: "admin", Groups: []string{"system:masters"}}, cfg)
	Expect(err).NotTo(HaveOccurred())
	raw, err := admin.KubeConfig()
	Expect(err).NotTo(HaveOccurred())
	kubeconfig = filepath.Join(GinkgoT().TempDir(), "kubeconfig")
	Expect(os.WriteFile(kubeconfig, raw, 0o600)).To(Succeed())

	// The manager has an identity of its own, as in a cluster: the Runs the specs create
	// through k8sClient are a person's, stamped with that person's identity by admission.
	manager, err := testEnv.AddUser(envtest.User{Name: "ergon-manager", Groups: []string{"system:masters"}}, cfg)
	Expect(err).NotTo(HaveOccurred())
	var ctx context.Context
	ctx, stop = context.WithCancel(context.Background())
	startManager(ctx, manager.Config())
	sim.Client = k8sClient
	go sim.Run(ctx)
})

var _ = AfterSuite(func() {
	if stop != nil {
		stop()
	}
	Expect(testEnv.Stop()).To(Succeed())
})

func startManager(ctx context.Context, cfg *rest.Config) {
	managed := labels.SelectorFromSet(labels.Set{ergonv1alpha1.LabelManagedBy: ergonv1alpha1.ManagedByErgon})
	options := testEnv.ManagerOptions(Scheme)
	options.Cache = cache.Options{ByObject: map[client.Object]cache.ByObject{
		&corev1.Pod{}: {Label: managed}, &corev1.ConfigMap{}: {Label: managed},
	}}
	mgr, err := ctrl.NewManager(cfg, options)
	Expect(err).NotTo(HaveOccurred())
	Expect(webhookv1alpha1.SetupWebhooksWithManager(mgr, webhookv1alpha1.Options{})).To(Succeed())
	Expect((&runcontroller.RunReconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder("ergon-run"),
		Clock: clock.RealClock{}, Logs: podLogs, Config: runcontroller.RunConfig{EntrypointImage: "ergon/manager:test", MaxDepth: 3},
	}).SetupWithManager(mgr)).To(Succeed())
	Expect((&gatecontroller.GateReconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("ergon-gate"),
		Clock: clock.RealClock{}}).SetupWithManager(mgr)).To(Succeed())
	Expect((&triggercontroller.TriggerReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(),
		Recorder: mgr.GetEventRecorder("ergon-trigger"), Clock: clock.RealClock{}, Location: time.UTC}).
		SetupWithManager(mgr)).To(Succeed())
	stopMgr, err := testEnv.StartManager(mgr)
	Expect(err).NotTo(HaveOccurred())
	go func() {
		<-ctx.Done()
		_ = stopMgr()
	}()
}

// result is what one run of the plugin did.
type result struct {
	code     int
	out, err string
}

// plugin runs kubectl-ergon in a namespace as the administrator, or as another user with
// --as among args.
func plugin(ctx context.Context, ns string, args ...string) result {
	return pluginTo(ctx, ns, &syncWriter{w: &bytes.Buffer{}}, args...)
}

// pluginTo is plugin writing its standard output to out, which may be read as it runs.
func pluginTo(ctx context.Context, ns string, out *syncWriter, args ...string) result {
	errOut := &syncWriter{w: &bytes.Buffer{}}
	o := &Options{Streams: genericiooptions.IOStreams{In: strings.NewReader(""), Out: out, ErrOut: errOut}, Logs: podLogs}
	code := Main(ctx, o, append([]string{"--kubeconfig", kubeconfig, "-n", ns}, args...))
	GinkgoWriter.Printf("$ kubectl ergon %s\n%s%s(exit %d)\n", strings.Join(args, " "), out.String(), errOut.String(), code)
	return result{code: code, out: out.String(), err: errOut.String()}
}

// syncWriter is a buffer that one goroutine writes while another reads it.
type syncWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

func (s *syncWriter) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.String()
}

// newNamespace creates a namespace for one spec, with a kubelet script for its pods.
func newNamespace(ctx context.Context, s script) string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "plugin-"}}
	Expect(k8sClient.Create(ctx, ns)).To(Succeed())
	sim.Use(ns.Name, func(pod *corev1.Pod) testenv.Outcome { return s(pod.Labels[ergonv1alpha1.LabelStep]) })
	DeferCleanup(func(ctx SpecContext) { Expect(k8sClient.Delete(ctx, ns)).To(Succeed()) })
	return ns.Name
}

// grant gives a user a role's rules on some resources of Ergon in a namespace.
func grant(ctx context.Context, ns, user string, resources []string, verbs ...string) {
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: user},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{ergonv1alpha1.GroupVersion.Group}, Resources: resources, Verbs: verbs},
			{APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"selfsubjectaccessreviews"}, Verbs: []string{"create"}},
		}}
	Expect(k8sClient.Create(ctx, role)).To(Succeed())
	Expect(k8sClient.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: user},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: user},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: user}}})).To(Succeed())
}
