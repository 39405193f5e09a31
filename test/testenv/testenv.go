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

// Package testenv starts what Ergon's envtest suites share: a real kube-apiserver and etcd with
// Ergon's CRDs (and, when asked, its admission webhooks from config/webhook and its admission
// policies from config/policies), a manager whose webhook server those webhooks call, and the
// wait until that server answers. Suites keep only what they test differently: which
// controllers run, and as whom.
package testenv

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

// Scheme knows the built-in kinds and Ergon's.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(ergonv1alpha1.AddToScheme(s))
	return s
}

// Environment is a started envtest API server with Ergon's CRDs.
type Environment struct {
	*envtest.Environment
	// Config is the administrator's (system:masters) connection.
	Config *rest.Config
}

// ManagerUsername is the manager's identity as config/default installs it, which the admission
// policies of config/policies exempt: a suite whose manager runs as anyone else but a cluster
// administrator (system:masters) has its status writes refused.
const ManagerUsername = "system:serviceaccount:ergon-system:ergon-controller-manager"

// Start starts kube-apiserver and etcd (from KUBEBUILDER_ASSETS) with the CRDs of
// config/crd/bases installed and, with webhooks, the admission webhooks of config/webhook
// pointed at a local webhook server, which ManagerOptions configures, and the admission
// policies of config/policies (see InstallPolicies).
func Start(webhooks bool) (*Environment, error) {
	root, err := moduleRoot()
	if err != nil {
		return nil, err
	}
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join(root, "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		// kube-apiserver drains its open watches before it exits, which on a busy machine
		// takes longer than envtest's default 20 s.
		ControlPlaneStopTimeout: 90 * time.Second,
	}
	if webhooks {
		env.WebhookInstallOptions = envtest.WebhookInstallOptions{Paths: []string{filepath.Join(root, "config", "webhook")}}
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("starting kube-apiserver and etcd (is KUBEBUILDER_ASSETS set? make test sets it): %w", err)
	}
	e := &Environment{Environment: env, Config: cfg}
	if webhooks {
		if err := e.InstallPolicies(filepath.Join(root, "config", "policies")); err != nil {
			_ = env.Stop()
			return nil, err
		}
	}
	return e, nil
}

// moduleRoot finds the repository's root, the folder of go.mod, above the working directory
// (a test's working directory is its package's folder).
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// ManagerOptions are a manager's options for this environment: no metrics listener, and a
// webhook server where the installed webhooks call. Callers add their cache options
// (controllers.CacheOptions for a manager like the real one).
func (e *Environment) ManagerOptions(scheme *runtime.Scheme) ctrl.Options {
	opts := &e.WebhookInstallOptions
	return ctrl.Options{
		Scheme:  scheme,
		Metrics: metricsserver.Options{BindAddress: "0"},
		WebhookServer: webhook.NewServer(webhook.Options{
			Host: opts.LocalServingHost, Port: opts.LocalServingPort, CertDir: opts.LocalServingCertDir,
		}),
	}
}

// StartManager runs mgr in the background. The returned function stops it and returns once it
// has stopped, with the error it stopped with before it was asked to (nil if none). With webhooks
// installed, StartManager returns once the webhook server answers TLS, or fails after a minute.
func (e *Environment) StartManager(mgr ctrl.Manager) (stop func() error, err error) {
	ctx, cancel := context.WithCancel(context.Background())
	var (
		wg     sync.WaitGroup
		runErr error
	)
	wg.Go(func() {
		// A manager may report trouble while it stops (a leader stopped without releasing
		// its Lease reports the lost election): only an error before the stop counts.
		if err := mgr.Start(ctx); ctx.Err() == nil {
			runErr = err
		}
	})
	stop = func() error {
		cancel()
		wg.Wait()
		return runErr
	}
	if len(e.WebhookInstallOptions.Paths) == 0 {
		return stop, nil
	}
	if err := e.waitWebhookServer(time.Minute); err != nil {
		_ = stop()
		return nil, err
	}
	return stop, nil
}

// waitWebhookServer dials the webhook server until it completes a TLS handshake.
func (e *Environment) waitWebhookServer(timeout time.Duration) error {
	opts := &e.WebhookInstallOptions
	addr := net.JoinHostPort(opts.LocalServingHost, fmt.Sprint(opts.LocalServingPort))
	deadline := time.Now().Add(timeout)
	for {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", addr,
			&tls.Config{InsecureSkipVerify: true}) //nolint:gosec // a handshake with the test's own server, to see it serve
		if err == nil {
			return conn.Close()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the webhook server at %s does not serve: %w", addr, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
