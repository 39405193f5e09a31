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

// Package manifests tests what users install: the Helm chart and the kustomize bases, in both
// webhook certificate modes. It renders them with the real tools, decodes cert-manager's
// objects into cert-manager's own Go types, checks that the pieces name each other, and
// applies everything, server-side and dry-run, to a real API server that has cert-manager's
// CRDs installed, so a schema mistake fails here rather than in a user's cluster.
package manifests

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"
)

const namespace = "ergon-system"

// root is the repository's top directory.
var root = filepath.Join("..", "..")

// rendering is one way of installing Ergon.
type rendering struct {
	name        string
	render      func(t *testing.T) []byte
	certManager bool
	// issuer is the Issuer the Certificate must name, when the rendering makes its own.
	issuer string
}

func helmTemplate(args ...string) func(t *testing.T) []byte {
	return func(t *testing.T) []byte {
		helm := os.Getenv("HELM")
		if helm == "" {
			helm = filepath.Join(root, "bin", "helm")
		}
		if _, err := os.Stat(helm); err != nil {
			t.Fatalf("helm is needed to render the chart: run `make helm`, or set HELM (%v)", err)
		}
		base := []string{"template", "ergon", filepath.Join(root, "charts", "ergon"), "--namespace", namespace, "--kube-version", "1.37.2"}
		return run(t, helm, append(base, args...)...)
	}
}

func kustomize(dir string) func(t *testing.T) []byte {
	return func(t *testing.T) []byte {
		return run(t, "kubectl", "kustomize", filepath.Join(root, "config", dir))
	}
}

func run(t *testing.T, name string, args ...string) []byte {
	t.Helper()
	var stderr bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, stderr.String())
	}
	return out
}

var renderings = []rendering{
	{name: "chart, self-managed certificates", render: helmTemplate()},
	{name: "chart, self-managed certificates, network policy", render: helmTemplate("--set", "networkPolicy.enabled=true",
		"--set", "networkPolicy.apiServer.cidrs={10.0.0.1/32}")},
	{name: "chart, cert-manager", render: helmTemplate("--set", "webhooks.certMode=certManager"),
		certManager: true, issuer: "ergon-webhook"},
	{name: "chart, cert-manager with a ClusterIssuer", render: helmTemplate("--set", "webhooks.certMode=certManager",
		"--set", "webhooks.certManager.issuerRef.name=corp-ca", "--set", "webhooks.certManager.issuerRef.kind=ClusterIssuer"),
		certManager: true},
	{name: "kustomize config/default", render: kustomize("default")},
	{name: "kustomize config/overlays/cert-manager", render: kustomize(filepath.Join("overlays", "cert-manager")),
		certManager: true, issuer: "ergon-selfsigned-issuer"},
}

// objects splits a rendering into its objects.
func objects(t *testing.T, data []byte) []*unstructured.Unstructured {
	t.Helper()
	var objs []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		u := &unstructured.Unstructured{}
		err := dec.Decode(&u.Object)
		if errors.Is(err, io.EOF) {
			return objs
		}
		if err != nil {
			t.Fatalf("the rendering is not YAML: %v", err)
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
}

// decode turns an object into a typed one, refusing fields the type does not have.
func decode(t *testing.T, u *unstructured.Unstructured, into any) {
	t.Helper()
	data, err := yaml.Marshal(u.Object)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(data, into); err != nil {
		t.Fatalf("%s %s does not decode into %T: %v", u.GetKind(), u.GetName(), into, err)
	}
}

// installation is what the checks read from a rendering.
type installation struct {
	deployment   appsv1.Deployment
	services     map[string]corev1.Service
	secrets      map[string]bool
	issuers      map[string]cmapi.Issuer
	certificates map[string]cmapi.Certificate
	webhooks     []metav1.ObjectMeta
	clientConfig []admissionregistrationv1.ServiceReference
}

func read(t *testing.T, objs []*unstructured.Unstructured) *installation {
	in := &installation{services: map[string]corev1.Service{}, secrets: map[string]bool{},
		issuers: map[string]cmapi.Issuer{}, certificates: map[string]cmapi.Certificate{}}
	deployments := 0
	for _, u := range objs {
		switch u.GroupVersionKind().GroupKind().String() {
		case "Deployment.apps":
			decode(t, u, &in.deployment)
			deployments++
		case "Service":
			var s corev1.Service
			decode(t, u, &s)
			in.services[s.Name] = s
		case "Secret":
			in.secrets[u.GetName()] = true
		case "Issuer.cert-manager.io":
			var i cmapi.Issuer
			decode(t, u, &i)
			in.issuers[i.Name] = i
		case "Certificate.cert-manager.io":
			var c cmapi.Certificate
			decode(t, u, &c)
			in.certificates[c.Name] = c
		case "ValidatingWebhookConfiguration.admissionregistration.k8s.io":
			var w admissionregistrationv1.ValidatingWebhookConfiguration
			decode(t, u, &w)
			in.webhooks = append(in.webhooks, w.ObjectMeta)
			for _, h := range w.Webhooks {
				in.clientConfig = append(in.clientConfig, *h.ClientConfig.Service)
			}
		case "MutatingWebhookConfiguration.admissionregistration.k8s.io":
			var w admissionregistrationv1.MutatingWebhookConfiguration
			decode(t, u, &w)
			in.webhooks = append(in.webhooks, w.ObjectMeta)
			for _, h := range w.Webhooks {
				in.clientConfig = append(in.clientConfig, *h.ClientConfig.Service)
			}
		}
	}
	if deployments != 1 {
		t.Fatalf("the rendering has %d Deployments, want 1", deployments)
	}
	if len(in.webhooks) != 2 {
		t.Fatalf("the rendering has %d webhook configurations, want a validating and a mutating one", len(in.webhooks))
	}
	return in
}

// mountedAt is the volume the manager has at a path, or nil.
func (in *installation) mountedAt(path string) *corev1.Volume {
	pod := in.deployment.Spec.Template.Spec
	for _, m := range pod.Containers[0].VolumeMounts {
		if m.MountPath != path {
			continue
		}
		for i, v := range pod.Volumes {
			if v.Name == m.Name {
				return &pod.Volumes[i]
			}
		}
	}
	return nil
}

const certDir = "/tmp/k8s-webhook-server/serving-certs"

func (in *installation) args() []string {
	return in.deployment.Spec.Template.Spec.Containers[0].Args
}

// TestRenderingsHangTogether checks, for each way of installing Ergon, that its pieces name
// each other: the webhooks call a Service that exists, the manager mounts the Secret that
// holds the certificate, and the certificate is made by whoever the mode says.
func TestRenderingsHangTogether(t *testing.T) {
	for _, r := range renderings {
		t.Run(r.name, func(t *testing.T) {
			in := read(t, objects(t, r.render(t)))
			service := in.clientConfig[0]
			for _, s := range in.clientConfig {
				if s.Namespace != service.Namespace || s.Name != service.Name {
					t.Errorf("webhooks call two Services: %v and %v", service, s)
				}
			}
			if _, ok := in.services[service.Name]; !ok || service.Namespace != namespace {
				t.Fatalf("the webhooks call Service %s/%s, which the rendering does not have", service.Namespace, service.Name)
			}
			if r.certManager {
				checkCertManager(t, r, in, service.Name)
			} else {
				checkSelfManaged(t, in, service.Name)
			}
		})
	}
}

// checkSelfManaged: the manager keeps the certificate in a Secret and writes it to its
// certificate directory itself, which must be writable.
func checkSelfManaged(t *testing.T, in *installation, service string) {
	if v := in.mountedAt(certDir); v != nil {
		t.Errorf("the manager writes its own certificate, yet %s is mounted from %+v", certDir, v.VolumeSource)
	}
	if v := in.mountedAt("/tmp"); v == nil || v.EmptyDir == nil {
		t.Errorf("the manager has no writable /tmp for its certificate")
	}
	secret := ""
	for _, arg := range in.args() {
		if s, ok := strings.CutPrefix(arg, "--webhook-secret="); ok {
			secret = s
		}
	}
	if !in.secrets[secret] {
		t.Errorf("the manager keeps its certificate in Secret %q, which the rendering does not make", secret)
	}
	for _, want := range []string{"--webhook-cert-mode=self", "--webhook-service=" + service} {
		if !slices.Contains(in.args(), want) {
			t.Errorf("the manager's args %v lack %s", in.args(), want)
		}
	}
	if len(in.certificates)+len(in.issuers) > 0 {
		t.Errorf("self-managed certificates, yet the rendering has cert-manager objects")
	}
	for _, w := range in.webhooks {
		if _, ok := w.Annotations[cmapi.WantInjectAnnotation]; ok {
			t.Errorf("%s asks cert-manager to inject a CA in self-managed mode", w.Name)
		}
	}
}

// checkCertManager: cert-manager makes the certificate for the webhook Service, the kubelet
// mounts its Secret, and cert-manager's CA injector fills the webhook configurations.
func checkCertManager(t *testing.T, r rendering, in *installation, service string) {
	dnsName := service + "." + namespace + ".svc"
	v := in.mountedAt(certDir)
	if v == nil || v.Secret == nil {
		t.Fatalf("the manager does not mount cert-manager's Secret at %s", certDir)
	}
	secret := v.Secret.SecretName
	if !slices.Contains(in.args(), "--webhook-cert-mode=external") {
		t.Errorf("the manager's args %v lack --webhook-cert-mode=external", in.args())
	}
	if in.secrets[secret] {
		t.Errorf("the rendering makes Secret %q, which cert-manager owns", secret)
	}
	if len(in.certificates) != 1 {
		t.Fatalf("the rendering has %d Certificates, want 1", len(in.certificates))
	}
	var cert cmapi.Certificate
	for _, c := range in.certificates {
		cert = c
	}
	if cert.Spec.SecretName != secret {
		t.Errorf("the Certificate writes Secret %q, but the manager mounts %q", cert.Spec.SecretName, secret)
	}
	if !slices.Contains(cert.Spec.DNSNames, dnsName) {
		t.Errorf("the Certificate's dnsNames %v lack the webhook Service's %s", cert.Spec.DNSNames, dnsName)
	}
	if r.issuer != "" {
		if _, ok := in.issuers[cert.Spec.IssuerRef.Name]; !ok || cert.Spec.IssuerRef.Name != r.issuer {
			t.Errorf("the Certificate names Issuer %q; the rendering has %v", cert.Spec.IssuerRef.Name, in.issuers)
		}
	} else if len(in.issuers) > 0 || cert.Spec.IssuerRef.Kind != "ClusterIssuer" {
		t.Errorf("with issuerRef set, the chart makes no Issuer and names the ClusterIssuer; got %v and %+v",
			in.issuers, cert.Spec.IssuerRef)
	}
	for _, w := range in.webhooks {
		want := cert.Namespace + "/" + cert.Name
		if got := w.Annotations[cmapi.WantInjectAnnotation]; got != want {
			t.Errorf("%s: %s is %q, want %q", w.Name, cmapi.WantInjectAnnotation, got, want)
		}
	}
}

// TestRenderingsApplyToAnAPIServer applies every object of every rendering to a real API
// server, server-side and dry-run, which refuses fields the schemas lack: an unknown or misspelt field
// in a Certificate, a Deployment or a webhook configuration fails here.
func TestRenderingsApplyToAnAPIServer(t *testing.T) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Fatal("KUBEBUILDER_ASSETS is not set: run the tests with `make test-unit`, which builds the API server")
	}
	certManager := strings.TrimSpace(string(run(t, "go", "list", "-m", "-f", "{{.Dir}}", "github.com/cert-manager/cert-manager")))
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join(root, "config", "crd", "bases"), filepath.Join(certManager, "deploy", "crds")},
		ErrorIfCRDPathMissing: true,
	}
	cfg, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}); err != nil {
		t.Fatal(err)
	}
	t.Run("a misspelt Certificate field is refused", func(t *testing.T) {
		// The control: the same apply must fail for a mistake, or the cases below prove nothing.
		bad := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "cert-manager.io/v1", "kind": "Certificate",
			"metadata": map[string]any{"name": "bad", "namespace": namespace},
			"spec":     map[string]any{"secretNam": "x", "issuerRef": map[string]any{"name": "i"}},
		}}
		err := apply(ctx, c, bad)
		if err == nil || !strings.Contains(err.Error(), "secretNam") {
			t.Fatalf("the API server took a Certificate with spec.secretNam: %v", err)
		}
	})
	t.Run("the chart accepts this API server's Kubernetes version", func(t *testing.T) {
		// The chart's kubeVersion must allow every version the suites run against (make
		// test-unit and make test-oldest: the newest and the oldest supported).
		info, err := discovery.NewDiscoveryClientForConfigOrDie(cfg).ServerVersion()
		if err != nil {
			t.Fatal(err)
		}
		helmTemplate("--kube-version", info.GitVersion)(t)
	})
	for _, r := range renderings {
		t.Run(r.name, func(t *testing.T) {
			applied := 0
			for _, u := range objects(t, r.render(t)) {
				err := apply(ctx, c, u)
				if err != nil {
					t.Errorf("%s %s: %v", u.GetKind(), u.GetName(), describe(err))
					continue
				}
				applied++
			}
			t.Logf("%d objects applied (dry run)", applied)
		})
	}
}

// apply applies an object server-side as a dry run. Server-side apply refuses fields the
// schema does not declare.
func apply(ctx context.Context, c client.Client, u *unstructured.Unstructured) error {
	return c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("manifests-test"),
		client.ForceOwnership, client.DryRunAll)
}

func describe(err error) string {
	if status, ok := err.(apierrors.APIStatus); ok && status.Status().Details != nil {
		return fmt.Sprintf("%v %v", err, status.Status().Details.Causes)
	}
	return err.Error()
}
