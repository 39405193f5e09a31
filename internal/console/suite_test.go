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

package console_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/console"
	webhookv1alpha1 "github.com/ergon-dev/ergon/webhook/v1alpha1"
)

// The console is tested against a real kube-apiserver with Ergon's admission webhooks, and
// with real users: ServiceAccounts whose tokens come from the TokenRequest API, as
// `kubectl create token` makes them, bound to Ergon's user roles.

var (
	ctx       context.Context
	cancel    context.CancelFunc
	testEnv   *envtest.Environment
	adminCfg  *rest.Config
	admin     client.Client
	adminCS   kubernetes.Interface
	scheme    = runtime.NewScheme()
	server    *console.Server
	consoleTS *httptest.Server
)

func TestConsole(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Console suite")
}

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	SetDefaultEventuallyTimeout(10 * time.Second)
	ctx, cancel = context.WithCancel(context.Background())
	Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	Expect(ergonv1alpha1.AddToScheme(scheme)).To(Succeed())

	testEnv = &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("..", "..", "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		WebhookInstallOptions: envtest.WebhookInstallOptions{Paths: []string{filepath.Join("..", "..", "config", "webhook")}},
	}
	var err error
	adminCfg, err = testEnv.Start()
	Expect(err).NotTo(HaveOccurred(), "start kube-apiserver and etcd; is KUBEBUILDER_ASSETS set?")
	admin, err = client.New(adminCfg, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
	adminCS = kubernetes.NewForConfigOrDie(adminCfg)
	for _, role := range readClusterRoles(filepath.Join("..", "..", "config", "rbac", "user_roles.yaml")) {
		role.Name = "ergon-" + role.Name
		Expect(admin.Create(ctx, role)).To(Succeed())
	}
	startWebhooks()

	key := bytes.Repeat([]byte{7}, 32)
	server, err = console.New(console.Config{APIServer: apiServerOnly(adminCfg), Key: key, DefaultNamespace: "default"})
	Expect(err).NotTo(HaveOccurred())
	consoleTS = httptest.NewUnstartedServer(server.Handler())
	consoleTS.StartTLS()
})

var _ = AfterSuite(func() {
	if consoleTS != nil {
		consoleTS.Close()
	}
	cancel()
	Expect(testEnv.Stop()).To(Succeed())
})

// apiServerOnly is the API server's address and CA without the admin's credentials, as the
// console gets them: it must never fall back on an identity of its own.
func apiServerOnly(cfg *rest.Config) *rest.Config {
	return &rest.Config{Host: cfg.Host, TLSClientConfig: rest.TLSClientConfig{CAData: cfg.CAData}}
}

// startWebhooks runs Ergon's admission webhooks (no controllers: the specs write statuses
// themselves, so what the console shows is exactly what they set up).
func startWebhooks() {
	opts := &testEnv.WebhookInstallOptions
	mgr, err := ctrl.NewManager(adminCfg, ctrl.Options{
		Scheme:  scheme,
		Metrics: metricsserver.Options{BindAddress: "0"},
		WebhookServer: webhook.NewServer(webhook.Options{
			Host: opts.LocalServingHost, Port: opts.LocalServingPort, CertDir: opts.LocalServingCertDir,
		}),
	})
	Expect(err).NotTo(HaveOccurred())
	for _, setup := range []func(ctrl.Manager) error{
		webhookv1alpha1.SetupSceneWebhookWithManager, webhookv1alpha1.SetupRunWebhookWithManager,
		webhookv1alpha1.SetupTriggerWebhookWithManager, webhookv1alpha1.SetupGateWebhookWithManager,
		webhookv1alpha1.SetupWorkspaceWebhookWithManager,
	} {
		Expect(setup(mgr)).To(Succeed())
	}
	go func() {
		defer GinkgoRecover()
		Expect(mgr.Start(ctx)).To(Succeed())
	}()
	addr := net.JoinHostPort(opts.LocalServingHost, fmt.Sprint(opts.LocalServingPort))
	Eventually(func() error {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec
		if err != nil {
			return err
		}
		return conn.Close()
	}).Should(Succeed(), "the webhook server serves")
}

func readClusterRoles(path string) []*rbacv1.ClusterRole {
	data, err := os.ReadFile(path)
	Expect(err).NotTo(HaveOccurred())
	var roles []*rbacv1.ClusterRole
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		role := &rbacv1.ClusterRole{}
		err := dec.Decode(role)
		if errors.Is(err, io.EOF) {
			return roles
		}
		Expect(err).NotTo(HaveOccurred())
		if role.Kind == "ClusterRole" {
			roles = append(roles, role)
		}
	}
}

var nsCount int
var nsMu sync.Mutex

func newNamespace() string {
	nsMu.Lock()
	nsCount++
	name := fmt.Sprintf("console-%d-%d", nsCount, time.Now().UnixNano()%100000)
	nsMu.Unlock()
	Expect(admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})).To(Succeed())
	return name
}

// userToken makes a ServiceAccount in ns bound there to the cluster roles, and returns its
// user name and a token for it from the TokenRequest API.
func userToken(ns, name string, clusterRoles ...string) (string, string) {
	Expect(admin.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})).To(Succeed())
	for _, role := range clusterRoles {
		Expect(admin.Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: name + "-"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: ns}},
		})).To(Succeed())
	}
	tr, err := adminCS.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: new(int64(3600))}}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	return "system:serviceaccount:" + ns + ":" + name, tr.Status.Token
}

// browser is an HTTP client that behaves as the console's page does: it keeps cookies, sends
// its Origin, and the CSRF token it got at login on every write.
type browser struct {
	c    *http.Client
	csrf string
}

func newBrowser() *browser {
	jar, err := cookiejar.New(nil)
	Expect(err).NotTo(HaveOccurred())
	c := consoleTS.Client()
	c.Jar = jar
	return &browser{c: &http.Client{Transport: c.Transport, Jar: jar}}
}

type answer struct {
	code   int
	body   string
	header http.Header
}

func (b *browser) do(method, path, body string, headers map[string]string) answer {
	req, err := http.NewRequestWithContext(ctx, method, consoleTS.URL+path, strings.NewReader(body))
	Expect(err).NotTo(HaveOccurred())
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	res, err := b.c.Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer func() { _ = res.Body.Close() }()
	out, err := io.ReadAll(res.Body)
	Expect(err).NotTo(HaveOccurred())
	return answer{code: res.StatusCode, body: string(out), header: res.Header}
}

func (b *browser) get(path string) answer { return b.do(http.MethodGet, path, "", nil) }

// post writes as the page does: same Origin, JSON, and the CSRF token.
func (b *browser) post(path, body string) answer {
	return b.do(http.MethodPost, path, body, map[string]string{"Origin": consoleTS.URL, "X-Ergon-CSRF": b.csrf})
}

// login logs in with a token as the login page does, and keeps the CSRF token.
func (b *browser) login(token string) answer {
	a := b.do(http.MethodPost, "/api/login", fmt.Sprintf(`{"token": %q}`, token), map[string]string{"Origin": consoleTS.URL})
	if a.code == http.StatusOK {
		b.csrf = jsonField(a.body, "csrf")
	}
	return a
}
