// Command clusterpki writes the certificates, keys and kubeconfigs of the local single-node
// cluster into one directory:
//
//	ca.crt ca.key                          the cluster CA (kept across runs)
//	sa.key sa.pub                          ServiceAccount token signing key (kept across runs)
//	apiserver.crt/.key                     kube-apiserver serving certificate
//	apiserver-kubelet-client.crt/.key      kube-apiserver's client certificate for kubelets
//	front-proxy-client.crt/.key            kube-apiserver's client certificate for aggregated APIs
//	kubelet-serving.crt/.key               the kubelet's serving certificate
//	<user>.kubeconfig                      admin, kube-controller-manager, kube-scheduler,
//	                                       kube-proxy, kubelet: client certificates embedded
//
// Files that exist are kept unless the parameters (server address, node name...) changed, so
// running it at every start-up costs nothing and leaves a kubeconfig handed out still valid.
package main

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

type params struct {
	dir, node, server, cluster string
	nodeIP, serviceIP          net.IP
}

func main() {
	var p params
	var nodeIP, serviceIP string
	flag.StringVar(&p.dir, "dir", "", "output directory")
	flag.StringVar(&p.node, "node", "ergon", "node name")
	flag.StringVar(&nodeIP, "node-ip", "", "node IP: the API server's and kubelet's address")
	flag.StringVar(&serviceIP, "service-ip", "10.96.0.1", "ClusterIP of the kubernetes Service")
	flag.StringVar(&p.cluster, "cluster-name", "ergon-local", "cluster and context name in kubeconfigs")
	flag.Parse()
	p.nodeIP, p.serviceIP = net.ParseIP(nodeIP), net.ParseIP(serviceIP)
	if p.dir == "" || p.nodeIP == nil || p.serviceIP == nil {
		fmt.Fprintln(os.Stderr, "usage: clusterpki --dir DIR --node-ip IP [--node NAME] [--service-ip IP]")
		os.Exit(2)
	}
	p.server = "https://" + net.JoinHostPort(p.nodeIP.String(), "6443")
	if err := run(p); err != nil {
		fmt.Fprintln(os.Stderr, "clusterpki:", err)
		os.Exit(1)
	}
}

func run(p params) error {
	if err := os.MkdirAll(p.dir, 0o700); err != nil {
		return err
	}
	ca, caKey, err := loadOrCreateCA(p.dir)
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(p.dir, "sa.key")); errors.Is(err, os.ErrNotExist) {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return err
		}
		if err := writeKey(filepath.Join(p.dir, "sa.key"), k); err != nil {
			return err
		}
		pub, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
		if err != nil {
			return err
		}
		if err := writePEM(filepath.Join(p.dir, "sa.pub"), "PUBLIC KEY", pub, 0o644); err != nil {
			return err
		}
	}

	// Leaf certificates depend on the parameters; a change of any of them renews them all.
	stamp := fmt.Sprintf("node=%s nodeIP=%s serviceIP=%s cluster=%s\n", p.node, p.nodeIP, p.serviceIP, p.cluster)
	stampFile := filepath.Join(p.dir, "params")
	if old, err := os.ReadFile(stampFile); err == nil && string(old) == stamp && allExist(p.dir, outputs) {
		return nil
	}

	server := leaf{name: "apiserver", cn: "kube-apiserver", server: true,
		dns: []string{"kubernetes", "kubernetes.default", "kubernetes.default.svc",
			"kubernetes.default.svc.cluster.local", "localhost"},
		ips: []net.IP{p.nodeIP, p.serviceIP, net.IPv4(127, 0, 0, 1)}}
	kubeletServing := leaf{name: "kubelet-serving", cn: p.node, server: true,
		dns: []string{p.node, "localhost"}, ips: []net.IP{p.nodeIP, net.IPv4(127, 0, 0, 1)}}
	kubeletClient := leaf{name: "apiserver-kubelet-client", cn: "kube-apiserver-kubelet-client",
		orgs: []string{"system:masters"}}
	// The aggregation layer's client (kube-apiserver's --proxy-client-cert-file).
	frontProxy := leaf{name: "front-proxy-client", cn: "front-proxy-client"}
	for _, l := range []leaf{server, kubeletServing, kubeletClient, frontProxy} {
		if _, _, err := l.write(p.dir, ca, caKey); err != nil {
			return err
		}
	}

	users := []leaf{
		{name: "admin", cn: "ergon-admin", orgs: []string{"system:masters"}},
		{name: "kube-controller-manager", cn: "system:kube-controller-manager"},
		{name: "kube-scheduler", cn: "system:kube-scheduler"},
		{name: "kube-proxy", cn: "system:kube-proxy"},
		{name: "kubelet", cn: "system:node:" + p.node, orgs: []string{"system:nodes"}},
	}
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Raw})
	for _, u := range users {
		certPEM, keyPEM, err := u.pem(ca, caKey)
		if err != nil {
			return err
		}
		kc := kubeconfig(p.cluster, p.server, u.cn, caPEM, certPEM, keyPEM)
		if err := os.WriteFile(filepath.Join(p.dir, u.name+".kubeconfig"), []byte(kc), 0o600); err != nil {
			return err
		}
	}
	return os.WriteFile(stampFile, []byte(stamp), 0o644)
}

// outputs are the files a run writes besides the CA and the signing key.
var outputs = []string{"apiserver.crt", "kubelet-serving.crt", "apiserver-kubelet-client.crt",
	"front-proxy-client.crt", "admin.kubeconfig", "kube-controller-manager.kubeconfig",
	"kube-scheduler.kubeconfig", "kube-proxy.kubeconfig", "kubelet.kubeconfig"}

func allExist(dir string, names []string) bool {
	for _, n := range names {
		if _, err := os.Stat(filepath.Join(dir, n)); err != nil {
			return false
		}
	}
	return true
}

func loadOrCreateCA(dir string) (*x509.Certificate, crypto.Signer, error) {
	certFile, keyFile := filepath.Join(dir, "ca.crt"), filepath.Join(dir, "ca.key")
	if certPEM, err := os.ReadFile(certFile); err == nil {
		keyPEM, err := os.ReadFile(keyFile)
		if err != nil {
			return nil, nil, err
		}
		cb, _ := pem.Decode(certPEM)
		kb, _ := pem.Decode(keyPEM)
		if cb == nil || kb == nil {
			return nil, nil, fmt.Errorf("%s or %s: not PEM", certFile, keyFile)
		}
		cert, err := x509.ParseCertificate(cb.Bytes)
		if err != nil {
			return nil, nil, err
		}
		key, err := x509.ParsePKCS8PrivateKey(kb.Bytes)
		if err != nil {
			return nil, nil, err
		}
		return cert, key.(crypto.Signer), nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "ergon-local-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.AddDate(10, 0, 0),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	if err := writeKey(keyFile, key); err != nil {
		return nil, nil, err
	}
	if err := writePEM(certFile, "CERTIFICATE", der, 0o644); err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	return cert, key, err
}

type leaf struct {
	name, cn string
	orgs     []string
	server   bool
	dns      []string
	ips      []net.IP
}

func (l leaf) pem(ca *x509.Certificate, caKey crypto.Signer) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	usage := x509.ExtKeyUsageClientAuth
	if l.server {
		usage = x509.ExtKeyUsageServerAuth
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: l.cn, Organization: l.orgs},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.AddDate(2, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
		DNSNames:     l.dns,
		IPAddresses:  l.ips,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, nil, err
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), nil
}

func (l leaf) write(dir string, ca *x509.Certificate, caKey crypto.Signer) ([]byte, []byte, error) {
	c, k, err := l.pem(ca, caKey)
	if err != nil {
		return nil, nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, l.name+".key"), k, 0o600); err != nil {
		return nil, nil, err
	}
	return c, k, os.WriteFile(filepath.Join(dir, l.name+".crt"), c, 0o644)
}

func kubeconfig(cluster, server, user string, ca, cert, key []byte) string {
	b64 := base64.StdEncoding.EncodeToString
	var s strings.Builder
	fmt.Fprintf(&s, `apiVersion: v1
kind: Config
clusters:
- name: %[1]s
  cluster:
    server: %[2]s
    certificate-authority-data: %[4]s
users:
- name: %[3]s
  user:
    client-certificate-data: %[5]s
    client-key-data: %[6]s
contexts:
- name: %[1]s
  context:
    cluster: %[1]s
    user: %[3]s
current-context: %[1]s
`, cluster, server, user, b64(ca), b64(cert), b64(key))
	return s.String()
}

func writeKey(path string, k *ecdsa.PrivateKey) error {
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return err
	}
	return writePEM(path, "PRIVATE KEY", der, 0o600)
}

func writePEM(path, typ string, der []byte, mode os.FileMode) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), mode)
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err)
	}
	return n
}
