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

// Package e2e tests Ergon on a real cluster: the one KUBECONFIG names, or the local
// single-node cluster, which hack/e2e-setup.sh brings up. Pods really run.
package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

const (
	// managerNamespace is where hack/e2e-setup.sh installs the chart.
	managerNamespace = "ergon-system"
	// toolImage is the local cluster's busybox image (hack/local-cluster.sh).
	toolImage = "ergon/busybox:dev"
)

var (
	repoRoot  = filepath.Join("..", "..")
	cfg       *rest.Config
	k8sClient client.Client
	clientset *kubernetes.Clientset
	scheme    = runtime.NewScheme()
)

func TestE2E(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "End-to-end suite")
}

var _ = BeforeSuite(func() {
	Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	Expect(ergonv1alpha1.AddToScheme(scheme)).To(Succeed())

	By("preparing the cluster and installing the chart")
	cmd := exec.Command("hack/e2e-setup.sh")
	cmd.Dir = repoRoot
	cmd.Stderr = GinkgoWriter
	out, err := cmd.Output()
	Expect(err).NotTo(HaveOccurred(), "hack/e2e-setup.sh")
	kubeconfig := strings.TrimSpace(string(out))
	Expect(os.Setenv("KUBECONFIG", kubeconfig)).To(Succeed())

	cfg, err = clientcmd.BuildConfigFromFlags("", kubeconfig)
	Expect(err).NotTo(HaveOccurred())
	k8sClient, err = client.New(cfg, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
	clientset, err = kubernetes.NewForConfig(cfg)
	Expect(err).NotTo(HaveOccurred())
})
