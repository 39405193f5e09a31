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

package v1alpha1

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/ergon-dev/ergon/test/testenv"
)

// The webhooks are installed from config/webhook into a real API server, which calls them
// for every object the tests send: the admission path itself is under test.
var (
	restCfg   *rest.Config
	scheme    = testenv.Scheme()
	k8sClient client.Client
	testEnv   *testenv.Environment
	cancel    func()
)

func TestWebhooks(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Webhook suite")
}

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))

	var err error
	testEnv, err = testenv.Start(true)
	Expect(err).NotTo(HaveOccurred())
	restCfg = testEnv.Config
	k8sClient, err = client.New(restCfg, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())

	mgr, err := ctrl.NewManager(restCfg, testEnv.ManagerOptions(scheme))
	Expect(err).NotTo(HaveOccurred())
	Expect(SetupWebhooksWithManager(mgr, Options{})).To(Succeed())
	stop, err := testEnv.StartManager(mgr)
	Expect(err).NotTo(HaveOccurred())
	cancel = func() { Expect(stop()).To(Succeed()) }
})

var _ = AfterSuite(func() {
	if cancel != nil {
		cancel()
	}
	Expect(testEnv.Stop()).To(Succeed())
})

// clientAs returns a client acting as a user with groups, whom the API server authenticates
// by a client certificate, so the webhooks see that identity.
func clientAs(name string, groups ...string) client.Client {
	user, err := testEnv.AddUser(envtest.User{Name: name, Groups: groups}, restCfg)
	Expect(err).NotTo(HaveOccurred())
	c, err := client.New(user.Config(), client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
	return c
}
