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
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	webhookv1alpha1 "github.com/ergon-dev/ergon/webhook/v1alpha1"
)

// The manager's rights on webhook configurations are not kubebuilder markers: it may change only
// its own two (resourceNames), which markers cannot say. config/rbac/webhook_configuration_role.yaml
// and the chart's webhook.yaml grant them, with list and watch of all, which the certificate
// rotator's informers need and which change nothing.

// webhookOptions say how the manager serves its admission webhooks.
type webhookOptions struct {
	enabled bool
	// certMode is "self" (the manager makes and rotates its own CA and serving certificate,
	// and injects the CA into its webhook configurations) or "external" (cert-manager or
	// another party mounts the certificate in certDir).
	certMode                            string
	certDir, namespace, service, secret string
	validatingName, mutatingName        string
	ready                               atomic.Bool
}

func (o *webhookOptions) bindFlags() {
	flag.BoolVar(&o.enabled, "enable-webhooks", false, "Serve the admission webhooks.")
	flag.StringVar(&o.certMode, "webhook-cert-mode", "self",
		"self: make and rotate the webhook certificate; external: use the one mounted in --webhook-cert-path.")
	flag.StringVar(&o.namespace, "namespace", "", "The manager's namespace, for its webhook Service and Secret.")
	flag.StringVar(&o.service, "webhook-service", "ergon-webhook", "The Service in front of the webhook server.")
	flag.StringVar(&o.secret, "webhook-secret", "ergon-webhook-tls", "The Secret that keeps the self-managed certificate.")
	flag.StringVar(&o.validatingName, "validating-webhook-configuration", "ergon-validating",
		"The ValidatingWebhookConfiguration whose CA bundle the manager keeps.")
	flag.StringVar(&o.mutatingName, "mutating-webhook-configuration", "ergon-mutating",
		"The MutatingWebhookConfiguration whose CA bundle the manager keeps.")
}

// setup registers the webhooks: at once with external certificates, or once the rotator
// has written self-managed ones, since the webhook server cannot start without them.
func (o *webhookOptions) setup(mgr ctrl.Manager) error {
	if !o.enabled {
		o.ready.Store(true)
		return nil
	}
	register := func() error {
		for _, setup := range []func(ctrl.Manager) error{
			webhookv1alpha1.SetupSceneWebhookWithManager, webhookv1alpha1.SetupRunWebhookWithManager,
			webhookv1alpha1.SetupTriggerWebhookWithManager, webhookv1alpha1.SetupGateWebhookWithManager,
			webhookv1alpha1.SetupWorkspaceWebhookWithManager,
		} {
			if err := setup(mgr); err != nil {
				return err
			}
		}
		o.ready.Store(true)
		return nil
	}
	switch o.certMode {
	case "external":
		return register()
	case "self":
	default:
		return fmt.Errorf("--webhook-cert-mode must be self or external, not %q", o.certMode)
	}
	if o.namespace == "" {
		return errors.New("--namespace is needed for self-managed webhook certificates")
	}
	certsReady := make(chan struct{})
	if err := rotator.AddRotator(mgr, &rotator.CertRotator{
		SecretKey:      types.NamespacedName{Namespace: o.namespace, Name: o.secret},
		CertDir:        o.certDir,
		CAName:         "ergon-webhook-ca",
		CAOrganization: "ergon",
		DNSName:        fmt.Sprintf("%s.%s.svc", o.service, o.namespace),
		IsReady:        certsReady,
		Webhooks: []rotator.WebhookInfo{
			{Name: o.validatingName, Type: rotator.Validating},
			{Name: o.mutatingName, Type: rotator.Mutating},
		},
	}); err != nil {
		return err
	}
	// The rotator fills the Secret; certFiles puts it where the webhook server reads it.
	if err := mgr.Add(&certFiles{reader: mgr.GetAPIReader(), key: types.NamespacedName{Namespace: o.namespace, Name: o.secret},
		dir: o.certDir}); err != nil {
		return err
	}
	go func() {
		<-certsReady
		setupLog.Info("Webhook certificates are ready; serving the admission webhooks")
		if err := register(); err != nil {
			setupLog.Error(err, "Failed to register the admission webhooks")
		}
	}()
	return nil
}

// readyz fails until the webhooks serve, so the Deployment is Ready only when admission works.
func (o *webhookOptions) readyz(mgr ctrl.Manager) func(*http.Request) error {
	return func(req *http.Request) error {
		if !o.ready.Load() {
			return errors.New("the admission webhooks are not serving yet")
		}
		if !o.enabled {
			return nil
		}
		return mgr.GetWebhookServer().StartedChecker()(req)
	}
}

// certFiles copies the self-managed certificate from its Secret into the webhook server's
// certificate directory, and again whenever the rotator renews it. A Secret volume would do
// the same, but the kubelet refreshes one only at its next sync of the pod, a minute or more
// after the manager first fills the Secret, and readiness waited on that. controller-runtime's
// certificate watcher loads the new files.
type certFiles struct {
	reader client.Reader
	key    types.NamespacedName
	dir    string
}

// NeedLeaderElection is false: every replica serves the webhooks.
func (c *certFiles) NeedLeaderElection() bool { return false }

// Start polls the Secret, each second until the certificate is there, then each half minute.
func (c *certFiles) Start(ctx context.Context) error {
	log := ctrl.Log.WithName("webhook-certs")
	if err := os.MkdirAll(c.dir, 0o700); err != nil {
		return fmt.Errorf("the webhook certificate directory: %w", err)
	}
	var written []byte
	for {
		secret := &corev1.Secret{}
		err := c.reader.Get(ctx, c.key, secret)
		cert, key := secret.Data["tls.crt"], secret.Data["tls.key"]
		switch {
		case err != nil && !apierrors.IsNotFound(err):
			log.Error(err, "Reading the webhook certificate's Secret", "secret", c.key)
		case err == nil && len(cert) > 0 && len(key) > 0 && !bytes.Equal(cert, written):
			if err := c.write(key, cert); err != nil {
				return err
			}
			written = cert
			log.Info("Wrote the webhook certificate", "dir", c.dir)
		}
		wait := 30 * time.Second
		if written == nil {
			wait = time.Second
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
}

// write replaces the key, then the certificate, each by a rename, so the watcher never reads
// half a file.
func (c *certFiles) write(key, cert []byte) error {
	for _, f := range []struct {
		name string
		data []byte
	}{{"tls.key", key}, {"tls.crt", cert}} {
		tmp := filepath.Join(c.dir, "."+f.name)
		if err := os.WriteFile(tmp, f.data, 0o600); err != nil {
			return err
		}
		if err := os.Rename(tmp, filepath.Join(c.dir, f.name)); err != nil {
			return err
		}
	}
	return nil
}
