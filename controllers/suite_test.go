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
	"bytes"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/outputs"
)

// The Run engine is tested against a real kube-apiserver and etcd. There is no kubelet in
// envtest: a helper plays it (kubelet_test.go), moving step pods through their phases and
// handing outputs back exactly as Ergon's entrypoint does.
var (
	cfg       *rest.Config
	k8sClient client.Client // reads around any cache
	testEnv   *envtest.Environment
	scheme    = runtime.NewScheme()
	logs      = &recordedLogs{logs: map[string][]byte{}}
	stopMgr   context.CancelFunc
)

func TestControllers(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Controller suite")
}

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	// A first status write can take more than Gomega's default second on a loaded 2-core machine.
	SetDefaultEventuallyTimeout(10 * time.Second)
	Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	Expect(ergonv1alpha1.AddToScheme(scheme)).To(Succeed())

	testEnv = &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("..", "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	var err error
	cfg, err = testEnv.Start()
	Expect(err).NotTo(HaveOccurred(), "start kube-apiserver and etcd; is KUBEBUILDER_ASSETS set (make test does it)?")
	k8sClient, err = client.New(cfg, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
	stopMgr = startManager(RunConfig{EntrypointImage: "ergon/manager:test", MaxDepth: 3})
})

var _ = AfterSuite(func() {
	if stopMgr != nil {
		stopMgr()
	}
	Expect(testEnv.Stop()).To(Succeed())
})

// startManager runs a manager with Ergon's controllers until the returned function is called;
// that function returns once the manager has stopped. tune changes its options (sharding,
// leader election: shard_test.go).
func startManager(runConfig RunConfig, tune ...func(*ctrl.Options)) context.CancelFunc {
	options := ctrl.Options{
		Scheme:  scheme,
		Metrics: metricsserver.Options{BindAddress: "0"},
		Cache:   CacheOptions(),
		// The restart test starts managers again and again in one process.
		Controller: config.Controller{SkipNameValidation: new(true)},
	}
	for _, t := range tune {
		t(&options)
	}
	mgr, err := ctrl.NewManager(cfg, options)
	Expect(err).NotTo(HaveOccurred())
	Expect((&RunReconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(),
		Recorder: mgr.GetEventRecorder("ergon-run"), Clock: clock.RealClock{}, Logs: logs, Config: runConfig,
	}).SetupWithManager(mgr)).To(Succeed())
	Expect((&GateReconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("ergon-gate"), Clock: clock.RealClock{}}).
		SetupWithManager(mgr)).To(Succeed())
	Expect((&SceneReconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("ergon-scene"), Clock: clock.RealClock{}}).
		SetupWithManager(mgr)).To(Succeed())
	// Triggers tell time by a fake clock the trigger tests step (trigger_controller_test.go).
	Expect((&TriggerReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(),
		Recorder: mgr.GetEventRecorder("ergon-trigger"), Clock: triggerClock, Location: time.UTC}).
		SetupWithManager(mgr)).To(Succeed())

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer GinkgoRecover()
		defer wg.Done()
		// A leader stopped without releasing its Lease (shard_test.go) may report the lost
		// election as it stops: only errors before the stop count.
		if err := mgr.Start(ctx); ctx.Err() == nil {
			Expect(err).NotTo(HaveOccurred())
		}
	}()
	return func() {
		cancel()
		wg.Wait()
	}
}

// recordedLogs serves the container logs the test kubelet wrote.
type recordedLogs struct {
	mu   sync.Mutex
	logs map[string][]byte
}

func (l *recordedLogs) write(namespace, pod string, log []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.logs[namespace+"/"+pod] = log
}

// Read serves the end of a log as the kubelet does for PodLogOptions TailLines and LimitBytes.
func (l *recordedLogs) Read(_ context.Context, namespace, pod, _ string, tail outputs.Tail) (io.ReadCloser, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	log, ok := l.logs[namespace+"/"+pod]
	if !ok {
		return nil, fmt.Errorf("no log for pod %s/%s", namespace, pod)
	}
	return io.NopCloser(bytes.NewReader(tail.Of(log))), nil
}
