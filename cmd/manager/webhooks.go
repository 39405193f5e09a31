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
	"errors"
	"flag"
	"fmt"
	"net/http"
	"sync/atomic"

	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/ergon-dev/ergon/internal/archive"
	"github.com/ergon-dev/ergon/internal/archiveapi"
	"github.com/ergon-dev/ergon/internal/certfiles"
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
	// archive is the Run archive (--archive-url), nil without one: retries find Runs that
	// are gone in it.
	archive archive.Store
	// handlers are served beside the webhooks, with their certificate: the artifact endpoint.
	handlers []route
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
		if err := webhookv1alpha1.SetupWebhooksWithManager(mgr, webhookv1alpha1.Options{Archive: o.archive}); err != nil {
			return err
		}
		if o.archive != nil {
			// The archive's API (archive.ergon.dev), which the API server's aggregator
			// forwards to this server, is served beside the webhooks, with their certificate.
			mgr.GetWebhookServer().Register(archiveapi.Prefix, &archiveapi.Server{Store: o.archive,
				Authenticator: &archiveapi.FrontProxy{Reader: mgr.GetAPIReader()},
				Client:        mgr.GetClient(), Reader: mgr.GetAPIReader()})
		}
		for _, h := range o.handlers {
			mgr.GetWebhookServer().Register(h.path, h.handler)
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
		Webhooks:       o.injected(),
	}); err != nil {
		return err
	}
	// The rotator fills the Secret; the copier puts it where the webhook server reads it.
	if err := mgr.Add(&certfiles.Copier{Reader: mgr.GetAPIReader(),
		Secret: types.NamespacedName{Namespace: o.namespace, Name: o.secret}, Dir: o.certDir}); err != nil {
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

// injected are the objects whose CA bundle the rotator keeps: the webhook configurations, and
// the archive's APIService when the archive is on.
func (o *webhookOptions) injected() []rotator.WebhookInfo {
	objects := []rotator.WebhookInfo{
		{Name: o.validatingName, Type: rotator.Validating},
		{Name: o.mutatingName, Type: rotator.Mutating},
	}
	if o.archive != nil {
		objects = append(objects, rotator.WebhookInfo{Name: archiveapi.Version + "." + archiveapi.Group, Type: rotator.APIService})
	}
	return objects
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
