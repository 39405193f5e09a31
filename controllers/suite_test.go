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
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	archivecontroller "github.com/ergon-dev/ergon/controllers/archive"
	"github.com/ergon-dev/ergon/controllers/census"
	gatecontroller "github.com/ergon-dev/ergon/controllers/gate"
	runcontroller "github.com/ergon-dev/ergon/controllers/run"
	scenecontroller "github.com/ergon-dev/ergon/controllers/scene"
	triggercontroller "github.com/ergon-dev/ergon/controllers/trigger"
	workspacecontroller "github.com/ergon-dev/ergon/controllers/workspace"
	"github.com/ergon-dev/ergon/internal/cause"
	"github.com/ergon-dev/ergon/test/testenv"
)

// The Run engine is tested against a real kube-apiserver and etcd. There is no kubelet in
// envtest: a helper plays it (kubelet_test.go), moving step pods through their phases and
// handing outputs back exactly as Ergon's entrypoint does.
var (
	cfg       *rest.Config
	k8sClient client.Client // reads around any cache
	testEnv   *testenv.Environment
	scheme    = testenv.Scheme()
	stopMgr   context.CancelFunc
)

func TestControllers(t *testing.T) {
	RegisterFailHandler(Fail)
	suite, reporter := GinkgoConfiguration()
	// A stuck spec names itself and where it waits, and the suite ends (stopping its API server
	// and etcd) well before go test's own timeout would kill the binary without either.
	if suite.PollProgressAfter == 0 {
		suite.PollProgressAfter = 2 * time.Minute
	}
	if deadline, ok := t.Deadline(); ok && time.Until(deadline)-time.Minute < suite.Timeout {
		suite.Timeout = time.Until(deadline) - time.Minute
	}
	RunSpecs(t, "Controller suite", suite, reporter)
}

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	// A first status write can take more than Gomega's default second on a loaded 2-core machine.
	SetDefaultEventuallyTimeout(10 * time.Second)
	var err error
	testEnv, err = testenv.Start(false)
	Expect(err).NotTo(HaveOccurred())
	cfg = testEnv.Config
	raw, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
	k8sClient = testenv.StampingClient(raw, suiteUser)
	testKubelet.Client = k8sClient
	suiteNotifier = startNotifier()
	suiteArchive = startArchive()
	suiteArtifacts = startArtifacts()
	stopMgr = startManager(suiteConfig())
})

var _ = AfterSuite(func() {
	if stopMgr != nil {
		stopMgr()
	}
	Expect(testEnv.Stop()).To(Succeed())
})

// suiteConfig is the configuration of the suite's manager, which specs that stop it start
// again: the archive on, as the chart installs it.
func suiteConfig() runcontroller.RunConfig {
	return runcontroller.RunConfig{EntrypointImage: "ergon/manager:test", MaxDepth: 3, Archive: true,
		Artifacts: suiteArtifacts.config}
}

// startManager runs a manager with Ergon's controllers until the returned function is called;
// that function returns once the manager has stopped. tune changes its options (sharding,
// leader election: shard_test.go).
func startManager(runConfig runcontroller.RunConfig, tune ...func(*ctrl.Options)) context.CancelFunc {
	if runConfig.ProgressInterval == 0 {
		// Every manager of the suite reads a running agent's progress often, whichever spec
		// started it (run_checkpoint_test.go waits for it).
		runConfig.ProgressInterval = 300 * time.Millisecond
	}
	if runConfig.StatusInterval == 0 {
		// The manager's default (cmd/manager): every spec sees status writes coalesced as
		// they are in production (run_statuswrites_test.go).
		runConfig.StatusInterval = time.Second
	}
	if runConfig.EventInterval == 0 {
		// The manager's default too: progress Events folded (run_statuswrites_test.go).
		runConfig.EventInterval = 10 * time.Second
	}
	options := testEnv.ManagerOptions(scheme)
	options.Cache = CacheOptions()
	// The restart test starts managers again and again in one process.
	options.Controller = config.Controller{SkipNameValidation: new(true)}
	for _, t := range tune {
		t(&options)
	}
	mgr, err := ctrl.NewManager(cfg, options)
	Expect(err).NotTo(HaveOccurred())
	// The Run and Trigger controllers count each other's new Runs, as in the manager.
	ledger := &cause.Ledger{}
	runs := &runcontroller.RunReconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(),
		Recorder: mgr.GetEventRecorder("ergon-run"), Clock: clock.RealClock{}, Logs: logs, Config: runConfig, Ledger: ledger,
		Notifier: suiteNotifier, Archive: suiteArchive,
	}
	Expect(runs.SetupWithManager(mgr)).To(Succeed())
	// The artifact endpoint asks the Run controller of the manager that runs now.
	suiteArtifacts.runs.Store(runs)
	Expect((&gatecontroller.GateReconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("ergon-gate"), Clock: clock.RealClock{}}).
		SetupWithManager(mgr)).To(Succeed())
	Expect((&scenecontroller.SceneReconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("ergon-scene"),
		Clock: clock.RealClock{}}).
		SetupWithManager(mgr)).To(Succeed())
	// Triggers tell time by a fake clock the trigger tests step (trigger_controller_test.go).
	Expect((&triggercontroller.TriggerReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(),
		Recorder: mgr.GetEventRecorder("ergon-trigger"), Clock: triggerClock, Location: time.UTC,
		Limits: runConfig.CauseLimits(), Ledger: ledger, Options: clockedOptions(triggerClock)}).
		SetupWithManager(mgr)).To(Succeed())

	if runConfig.Archive {
		Expect((&archivecontroller.ArchiveReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(),
			Recorder: mgr.GetEventRecorder("ergon-archive"), Clock: clock.RealClock{}, Logs: logs, Store: suiteArchive,
			Config: archivecontroller.ArchiveConfig{GiveUpAfter: archiveGiveUpAfter}}).SetupWithManager(mgr)).To(Succeed())
	}
	Expect((&workspacecontroller.WorkspaceReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(),
		Recorder: mgr.GetEventRecorder("ergon-workspace"), Clock: clock.RealClock{}, EntrypointImage: runConfig.EntrypointImage}).
		SetupWithManager(mgr)).To(Succeed())
	Expect((&workspacecontroller.WorkspacePoolReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(),
		Recorder: mgr.GetEventRecorder("ergon-workspacepool"), Clock: clock.RealClock{}, EntrypointImage: runConfig.EntrypointImage}).
		SetupWithManager(mgr)).To(Succeed())

	Expect(mgr.Add(&census.Census{Reader: mgr.GetCache(), Shard: runConfig.Shard, Clock: clock.RealClock{}})).To(Succeed())

	stop, err := testEnv.StartManager(mgr)
	Expect(err).NotTo(HaveOccurred())
	return func() { Expect(stop()).To(Succeed()) }
}
