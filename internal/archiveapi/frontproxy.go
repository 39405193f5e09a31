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
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apiserver/pkg/authentication/request/headerrequest"
	"k8s.io/apiserver/pkg/authentication/user"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The ConfigMap in which the API server publishes how its aggregator (the front proxy)
// authenticates to the servers behind it, as every aggregated API server reads it.
const (
	authConfigMapNamespace = "kube-system"
	authConfigMapName      = "extension-apiserver-authentication"
)

// FrontProxy authenticates the requests the API server's aggregator forwards: they carry a
// client certificate signed by the request-header CA (with an allowed common name) and the
// caller's identity in headers, as the API server authenticated it. Anything else, a request
// sent straight to the manager's port included, is refused: headers alone prove nothing.
type FrontProxy struct {
	// Reader reads the extension-apiserver-authentication ConfigMap (around the cache).
	Reader client.Reader
	// TTL is how long a read of the ConfigMap is used; 30 s when zero.
	TTL time.Duration

	mu     sync.Mutex
	read   time.Time
	config *frontProxyConfig
}

type frontProxyConfig struct {
	roots                                    *x509.CertPool
	names, users, uids, groups, extraHeaders []string
}

// errUnauthenticated is a request that does not come from the API server's front proxy.
var errUnauthenticated = errors.New("the archive's API is served through the Kubernetes API server: " +
	"use kubectl get --raw /apis/archive.ergon.dev/v1alpha1/..., kubectl ergon history or the console")

// Authenticate returns the person behind a request the aggregator forwarded.
func (f *FrontProxy) Authenticate(r *http.Request) (user.Info, error) {
	cfg, err := f.current(r.Context())
	if err != nil {
		return nil, err
	}
	static := func(v []string) headerrequest.StringSliceProvider { return headerrequest.StaticStringSlice(v) }
	verify := func() (x509.VerifyOptions, bool) {
		return x509.VerifyOptions{Roots: cfg.roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}, true
	}
	auth := headerrequest.NewDynamicVerifyOptionsSecure(verify, static(cfg.names), static(cfg.users), static(cfg.uids),
		static(cfg.groups), static(cfg.extraHeaders))
	resp, ok, err := auth.AuthenticateRequest(r)
	if err != nil || !ok {
		return nil, errUnauthenticated
	}
	return resp.User, nil
}

// current returns the front proxy's configuration, read again after TTL. A failed read keeps
// the last good one.
func (f *FrontProxy) current(ctx context.Context) (*frontProxyConfig, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ttl := f.TTL
	if ttl == 0 {
		ttl = 30 * time.Second
	}
	if f.config != nil && time.Since(f.read) < ttl {
		return f.config, nil
	}
	cfg, err := f.load(ctx)
	if err != nil {
		if f.config != nil {
			return f.config, nil
		}
		return nil, err
	}
	f.config, f.read = cfg, time.Now()
	return cfg, nil
}

func (f *FrontProxy) load(ctx context.Context) (*frontProxyConfig, error) {
	cm := &corev1.ConfigMap{}
	if err := f.Reader.Get(ctx, client.ObjectKey{Namespace: authConfigMapNamespace, Name: authConfigMapName}, cm); err != nil {
		return nil, fmt.Errorf("reading the API server's front proxy configuration (%s/%s): %w",
			authConfigMapNamespace, authConfigMapName, err)
	}
	ca := cm.Data["requestheader-client-ca-file"]
	if ca == "" {
		return nil, fmt.Errorf("the API server has no front proxy (%s/%s has no requestheader-client-ca-file): "+
			"start it with --requestheader-client-ca-file to serve aggregated APIs", authConfigMapNamespace, authConfigMapName)
	}
	cfg := &frontProxyConfig{roots: x509.NewCertPool()}
	if !cfg.roots.AppendCertsFromPEM([]byte(ca)) {
		return nil, errors.New("the API server's requestheader-client-ca-file holds no certificate")
	}
	for key, into := range map[string]*[]string{
		"requestheader-allowed-names":        &cfg.names,
		"requestheader-username-headers":     &cfg.users,
		"requestheader-uid-headers":          &cfg.uids,
		"requestheader-group-headers":        &cfg.groups,
		"requestheader-extra-headers-prefix": &cfg.extraHeaders,
	} {
		if v := cm.Data[key]; v != "" {
			if err := json.Unmarshal([]byte(v), into); err != nil {
				return nil, fmt.Errorf("%s/%s: %s: %w", authConfigMapNamespace, authConfigMapName, key, err)
			}
		}
	}
	if len(cfg.users) == 0 {
		return nil, fmt.Errorf("%s/%s names no requestheader-username-headers", authConfigMapNamespace, authConfigMapName)
	}
	return cfg, nil
}
