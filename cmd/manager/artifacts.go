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

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"

	artifactscontroller "github.com/ergon-dev/ergon/controllers/artifacts"

	runcontroller "github.com/ergon-dev/ergon/controllers/run"
	"github.com/ergon-dev/ergon/internal/artifacts"
	"github.com/ergon-dev/ergon/internal/artifacts/server"
	"github.com/ergon-dev/ergon/internal/artifacts/store"
	"github.com/ergon-dev/ergon/internal/certfiles"
	"github.com/ergon-dev/ergon/internal/shard"
	"github.com/ergon-dev/ergon/internal/workspace"
)

// artifactOptions say where artifacts are kept and how step pods reach them (docs/artifacts.md).
type artifactOptions struct {
	store, endpoint    string
	maxBytes, runBytes int64
	// address is the endpoint's address once config ran.
	address *endpointAddress
}

// workspaceEndpoint is the artifact endpoint as the NetworkPolicies of Workspaces let their
// step pods reach it: the manager's namespace, the Service's address, its port and the webhook
// server's; nil when the manager keeps no artifacts.
func (o *artifactOptions) workspaceEndpoint(namespace string, webhookPort int) func() *workspace.ArtifactEndpoint {
	if o.address == nil {
		return nil
	}
	u, _ := url.Parse(o.endpoint)
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		port = 443
	}
	return func() *workspace.ArtifactEndpoint {
		return &workspace.ArtifactEndpoint{Namespace: namespace, ClusterIP: o.address.address(),
			Ports: []int32{int32(port), int32(webhookPort)}}
	}
}

func (o *artifactOptions) bindFlags() {
	flag.StringVar(&o.store, "artifact-store", os.Getenv("ERGON_ARTIFACT_STORE"), "Where step artifacts are kept: "+
		"file:///DIR (one manager) or s3://BUCKET?region=R&endpoint=URL (credentials from AWS_ACCESS_KEY_ID and "+
		"AWS_SECRET_ACCESS_KEY); empty keeps none, and a step that declares artifacts fails.")
	flag.StringVar(&o.endpoint, "artifact-endpoint", "", "The URL step pods reach the manager's artifact endpoint at: "+
		"its webhook Service, https://SERVICE.NAMESPACE.svc.")
	flag.Int64Var(&o.maxBytes, "max-artifact-bytes", artifacts.DefaultMaxArtifactBytes, "The most bytes one artifact may have.")
	flag.Int64Var(&o.runBytes, "max-run-artifact-bytes", artifacts.DefaultMaxRunArtifactBytes,
		"The most bytes the artifacts of one Run may have, over its steps and attempts.")
}

// config checks the flags and returns the Run controller's part, nil when no store is named.
func (o *artifactOptions) config(webhooks *webhookOptions) (*runcontroller.ArtifactsConfig, error) {
	if o.store == "" {
		return nil, nil
	}
	switch {
	case !webhooks.enabled:
		return nil, errors.New("--artifact-store: the artifact endpoint is served beside the webhooks; set --enable-webhooks")
	case o.endpoint == "":
		return nil, errors.New("--artifact-store needs --artifact-endpoint, the URL step pods reach the manager at")
	case o.maxBytes < 1 || o.runBytes < o.maxBytes:
		return nil, errors.New("--max-artifact-bytes must be at least 1, and --max-run-artifact-bytes at least as much")
	}
	u, err := url.Parse(o.endpoint)
	if err != nil || u.Scheme != "https" || u.Hostname() == "" {
		return nil, fmt.Errorf("--artifact-endpoint %q is not an https URL", o.endpoint)
	}
	ca := &caFile{dir: webhooks.certDir}
	o.address = &endpointAddress{host: u.Hostname()}
	return &runcontroller.ArtifactsConfig{Endpoint: o.endpoint, CA: ca.pem, Address: o.address.address,
		MaxBytes: o.maxBytes, RunBytes: o.runBytes}, nil
}

// setup opens the store and serves the endpoint beside the webhooks.
func (o *artifactOptions) setup(ctx context.Context, mgr ctrl.Manager, webhooks *webhookOptions, runs *runcontroller.RunReconciler,
	owned shard.Shard) error {
	if o.store == "" {
		return nil
	}
	st, err := store.Open(ctx, o.store)
	if err != nil {
		return err
	}
	signer, err := artifacts.NewSigner()
	if err != nil {
		return err
	}
	setupLog.Info("Keeping artifacts", "store", st.String(), "endpoint", o.endpoint)
	h := &server.Handler{Store: st, Signer: signer, Authority: authorityFunc(runs.ArtifactScope), Log: ctrl.Log.WithName("artifacts")}
	webhooks.handlers = append(webhooks.handlers, route{artifacts.PathGrants, h}, route{artifacts.PathBlobs, h})
	runs.Config.Artifacts.Store = st
	// The artifacts of Runs that are gone, from the cluster and the archive, are deleted.
	return mgr.Add(&artifactscontroller.Collector{Store: st, Reader: mgr.GetClient(), APIReader: mgr.GetAPIReader(),
		Archive: webhooks.archive, Clock: clock.RealClock{}, Shard: owned})
}

type authorityFunc func(ctx context.Context, token string) (*artifacts.Scope, error)

func (f authorityFunc) Scope(ctx context.Context, token string) (*artifacts.Scope, error) {
	return f(ctx, token)
}

// caFile reads the CA step pods trust the endpoint by from the webhook certificate's
// directory: ca.crt, or the certificate itself when it signs itself. It is read again at most
// every 30 s, so a renewed CA reaches new pods.
type caFile struct {
	dir  string
	mu   sync.Mutex
	read time.Time
	last string
}

func (c *caFile) pem() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if time.Since(c.read) < 30*time.Second && c.last != "" {
		return c.last
	}
	for _, name := range []string{certfiles.CAKey, "tls.crt"} {
		if b, err := os.ReadFile(filepath.Join(c.dir, name)); err == nil && len(b) > 0 {
			c.last, c.read = string(b), time.Now()
			break
		}
	}
	return c.last
}

// route is a handler the webhook server serves at a path.
type route struct {
	path    string
	handler http.Handler
}

// endpointAddress looks the endpoint's Service up in the cluster's DNS, as the manager's pod
// can, for step pods that cannot: its cluster IP, looked up again at most once a minute.
type endpointAddress struct {
	host string
	mu   sync.Mutex
	at   time.Time
	ip   string
}

func (e *endpointAddress) address() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if time.Since(e.at) < time.Minute {
		return e.ip
	}
	e.at = time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if addrs, err := net.DefaultResolver.LookupHost(ctx, e.host); err == nil && len(addrs) > 0 {
		e.ip = addrs[0]
	}
	return e.ip
}
