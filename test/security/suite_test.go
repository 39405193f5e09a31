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

// Package security is the attack suite: each spec plays a hostile tenant (or a stranger on the
// network) against a real kube-apiserver with Ergon's admission webhooks installed and its
// manager running under its own ServiceAccount identity and ClusterRole, as in a cluster.
package security

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/ergon-dev/ergon/controllers"
	gatecontroller "github.com/ergon-dev/ergon/controllers/gate"
	runcontroller "github.com/ergon-dev/ergon/controllers/run"
	triggercontroller "github.com/ergon-dev/ergon/controllers/trigger"
	"github.com/ergon-dev/ergon/test/testenv"
	webhookv1alpha1 "github.com/ergon-dev/ergon/webhook/v1alpha1"
)

const (
	// managerNamespace and managerServiceAccount are the identity the manager runs as, as the
	// chart and config/default install it.
	managerNamespace      = "ergon-system"
	managerServiceAccount = "ergon-controller-manager"
)

var (
	adminCfg   *rest.Config
	admin      client.Client // cluster-admin, reads around any cache
	managerCfg *rest.Config  // the manager's own identity
	testEnv    *testenv.Environment
	scheme     = testenv.Scheme()
	stopMgr    context.CancelFunc
	// kubelet plays the kubelet for the step pods of the namespaces a spec gives it a script
	// for (internal/testenv), and keeps their logs for the Run controller; the pods of every
	// other namespace never start, as on a cluster without nodes.
	kubelet = testenv.NewKubelet("step")
)

func TestSecurity(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Attack suite")
}

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	// A first status write can take more than Gomega's default second on a loaded 2-core machine.
	SetDefaultEventuallyTimeout(10 * time.Second)

	var err error
	testEnv, err = testenv.Start(true)
	Expect(err).NotTo(HaveOccurred())
	adminCfg = testEnv.Config
	admin, err = client.New(adminCfg, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())

	installRBAC()
	managerCfg = userConfig("system:serviceaccount:"+managerNamespace+":"+managerServiceAccount,
		"system:serviceaccounts", "system:serviceaccounts:"+managerNamespace, "system:authenticated")
	bindCluster(managerServiceAccount, "ergon-manager-role", rbacv1.Subject{
		Kind: rbacv1.ServiceAccountKind, Name: managerServiceAccount, Namespace: managerNamespace})
	bindCluster("trigger-key-reader", "ergon-trigger-key-reader", rbacv1.Subject{
		Kind: rbacv1.ServiceAccountKind, Name: managerServiceAccount, Namespace: managerNamespace})
	stopMgr = startManager()
})

var _ = AfterSuite(func() {
	if stopMgr != nil {
		stopMgr()
	}
	Expect(testEnv.Stop()).To(Succeed())
})

// startManager runs the webhooks and the Run, Gate and Trigger controllers under the manager's
// own identity until the returned function is called.
func startManager() context.CancelFunc {
	options := testEnv.ManagerOptions(scheme)
	options.Cache = controllers.CacheOptions()
	mgr, err := ctrl.NewManager(managerCfg, options)
	Expect(err).NotTo(HaveOccurred())
	Expect(webhookv1alpha1.SetupWebhooksWithManager(mgr, webhookv1alpha1.Options{})).To(Succeed())
	Expect((&runcontroller.RunReconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(),
		Recorder: mgr.GetEventRecorder("ergon-run"), Clock: clock.RealClock{}, Logs: kubelet.Logs,
		Config: runcontroller.RunConfig{EntrypointImage: "ergon/manager:test", MaxDepth: 3},
	}).SetupWithManager(mgr)).To(Succeed())
	Expect((&gatecontroller.GateReconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("ergon-gate"),
		Clock: clock.RealClock{}}).SetupWithManager(mgr)).To(Succeed())
	Expect((&triggercontroller.TriggerReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(),
		Recorder: mgr.GetEventRecorder("ergon-trigger"), Clock: clock.RealClock{}, Location: time.UTC}).
		SetupWithManager(mgr)).To(Succeed())

	stop, err := testEnv.StartManager(mgr)
	Expect(err).NotTo(HaveOccurred())
	return func() { Expect(stop()).To(Succeed()) }
}
