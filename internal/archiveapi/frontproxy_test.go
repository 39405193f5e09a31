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

package archiveapi

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// configMapReader serves the one ConfigMap the front proxy reads.
type configMapReader struct{ cm *corev1.ConfigMap }

func (r configMapReader) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	if key.Namespace != authConfigMapNamespace || key.Name != authConfigMapName {
		panic("unexpected read of " + key.String())
	}
	r.cm.DeepCopyInto(obj.(*corev1.ConfigMap))
	return nil
}

func (configMapReader) List(context.Context, client.ObjectList, ...client.ListOption) error {
	panic("not used")
}

type keyPair struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newCert(t *testing.T, cn string, ca *keyPair, usage x509.ExtKeyUsage) *keyPair {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{usage}}
	parent, signer := tmpl, key
	if ca == nil {
		tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
	} else {
		parent, signer = ca.cert, ca.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &keyPair{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// TestFrontProxy sends requests over TLS, with and without the aggregator's client
// certificate, and checks who they are taken to come from.
func TestFrontProxy(t *testing.T) {
	ca := newCert(t, "front-proxy-ca", nil, x509.ExtKeyUsageAny)
	otherCA := newCert(t, "someone-else", nil, x509.ExtKeyUsageAny)
	proxy := newCert(t, "front-proxy-client", ca, x509.ExtKeyUsageClientAuth)
	wrongName := newCert(t, "mallory", ca, x509.ExtKeyUsageClientAuth)
	forged := newCert(t, "front-proxy-client", otherCA, x509.ExtKeyUsageClientAuth)
	cm := &corev1.ConfigMap{Data: map[string]string{
		"requestheader-client-ca-file":       string(ca.pem),
		"requestheader-allowed-names":        `["front-proxy-client"]`,
		"requestheader-username-headers":     `["X-Remote-User"]`,
		"requestheader-group-headers":        `["X-Remote-Group"]`,
		"requestheader-extra-headers-prefix": `["X-Remote-Extra-"]`,
	}}
	fp := &FrontProxy{Reader: configMapReader{cm}}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		who, err := fp.Authenticate(r)
		if err != nil {
			http.Error(w, "refused", http.StatusUnauthorized)
			return
		}
		_, _ = io.WriteString(w, who.GetName()+" "+strings.Join(who.GetGroups(), ","))
	}))
	srv.TLS = &tls.Config{ClientAuth: tls.RequestClientCert}
	srv.StartTLS()
	defer srv.Close()

	cases := []struct {
		name string
		cert *keyPair
		want string
	}{
		{"the aggregator's certificate carries the caller in headers", proxy, "alice team-a,system:authenticated"},
		{"headers without a certificate prove nothing", nil, "refused"},
		{"a certificate of the CA with a name not allowed is refused", wrongName, "refused"},
		{"a certificate of another CA is refused", forged, "refused"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			transport := srv.Client().Transport.(*http.Transport).Clone()
			if tc.cert != nil {
				transport.TLSClientConfig.Certificates = []tls.Certificate{{Certificate: [][]byte{tc.cert.cert.Raw}, PrivateKey: tc.cert.key}}
			}
			req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
			req.Header.Set("X-Remote-User", "alice")
			req.Header.Add("X-Remote-Group", "team-a")
			req.Header.Add("X-Remote-Group", "system:authenticated")
			resp, err := (&http.Client{Transport: transport}).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = resp.Body.Close() }()
			body, _ := io.ReadAll(resp.Body)
			if got := strings.TrimSpace(string(body)); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestQueryOf(t *testing.T) {
	cases := []struct {
		query, wantErr string
	}{
		{"scene=report&phase=Failed&labelSelector=team%3Da&since=24h&limit=10", ""},
		{"phase=Running", "phase: archived Runs have ended"},
		{"limit=x", "limit: want a count"},
		{"since=yesterday", "since: want an RFC 3339 time"},
		{"labelSelector=team+in+(a)", "labelSelector: only key=value"},
	}
	for _, tc := range cases {
		t.Run(tc.query, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/x?"+tc.query, nil)
			q, err := queryOf(r)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("unexpected error %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("got error %v, want %q", err, tc.wantErr)
			case tc.wantErr == "" && (q.Scene != "report" || q.Labels["team"] != "a" || q.Limit != 10 || q.Since.IsZero()):
				t.Fatalf("query %+v", q)
			}
		})
	}
}
