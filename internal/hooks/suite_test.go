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

package hooks

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/test/testenv"
)

// The endpoint's suite: the server over HTTP on loopback in front of a real kube-apiserver
// (envtest), which holds the Triggers, key Secrets and Runs. No controller runs; the server
// reads straight from the API server where the manager gives it its cache.
var (
	k8sClient client.Client
	testEnv   *testenv.Environment
)

func TestEndpoint(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Webhook Trigger endpoint suite")
}

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	// A status write can take more than Gomega's default second on a loaded 2-core machine.
	SetDefaultEventuallyTimeout(10 * time.Second)
	var err error
	testEnv, err = testenv.Start(false)
	Expect(err).NotTo(HaveOccurred())
	k8sClient, err = client.New(testEnv.Config, client.Options{Scheme: testenv.Scheme()})
	Expect(err).NotTo(HaveOccurred())
})

var _ = AfterSuite(func() {
	if testEnv != nil {
		Expect(testEnv.Stop()).To(Succeed())
	}
})

// newNamespace makes a namespace of its own for one spec.
func newNamespace(ctx context.Context) string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "hooks-"}}
	Expect(k8sClient.Create(ctx, ns)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, ns))).To(Succeed()) })
	return ns.Name
}

func getRun(ctx context.Context, ns, name string) *ergonv1alpha1.Run {
	r := &ergonv1alpha1.Run{}
	Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, r)).To(Succeed())
	return r
}

func getTrigger(ctx context.Context, ns, name string) *ergonv1alpha1.Trigger {
	t := &ergonv1alpha1.Trigger{}
	Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, t)).To(Succeed())
	return t
}
