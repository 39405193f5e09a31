package main

import (
	"crypto/x509"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func readCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(b)
	c, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestPKI(t *testing.T) {
	dir := t.TempDir()
	p := params{dir: dir, node: "n1", cluster: "c", server: "https://10.0.0.2:6443",
		nodeIP: net.ParseIP("10.0.0.2"), serviceIP: net.ParseIP("10.96.0.1")}
	if err := run(p); err != nil {
		t.Fatal(err)
	}
	ca := readCert(t, filepath.Join(dir, "ca.crt"))
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	srv := readCert(t, filepath.Join(dir, "apiserver.crt"))
	if _, err := srv.Verify(x509.VerifyOptions{Roots: pool, DNSName: "kubernetes.default.svc"}); err != nil {
		t.Error(err)
	}
	for _, ip := range []string{"10.0.0.2", "10.96.0.1"} {
		if err := srv.VerifyHostname(ip); err != nil {
			t.Error(err)
		}
	}
	kubelet := readCert(t, filepath.Join(dir, "kubelet-serving.crt"))
	if err := kubelet.VerifyHostname("10.0.0.2"); err != nil {
		t.Error(err)
	}
	kc, err := os.ReadFile(filepath.Join(dir, "kubelet.kubeconfig"))
	if err != nil || !strings.Contains(string(kc), "server: https://10.0.0.2:6443") ||
		!strings.Contains(string(kc), "client-key-data:") {
		t.Fatalf("kubelet.kubeconfig: %v\n%s", err, kc)
	}

	// A second run with the same parameters changes nothing; new parameters renew the leaves
	// and keep the CA.
	admin, _ := os.ReadFile(filepath.Join(dir, "admin.kubeconfig"))
	if err := run(p); err != nil {
		t.Fatal(err)
	}
	again, _ := os.ReadFile(filepath.Join(dir, "admin.kubeconfig"))
	if string(admin) != string(again) {
		t.Error("a second run renewed the kubeconfig")
	}
	p.nodeIP, p.server = net.ParseIP("10.0.0.6"), "https://10.0.0.6:6443"
	if err := run(p); err != nil {
		t.Fatal(err)
	}
	if !readCert(t, filepath.Join(dir, "ca.crt")).Equal(ca) {
		t.Error("the CA changed")
	}
	if err := readCert(t, filepath.Join(dir, "apiserver.crt")).VerifyHostname("10.0.0.6"); err != nil {
		t.Error(err)
	}
}
