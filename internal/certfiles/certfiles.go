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

// Package certfiles keeps the webhook server's certificate files in step with the Secret the
// manager's certificate rotator fills.
package certfiles

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// CAKey is the key of the CA's certificate in the Secret, as the rotator and cert-manager
// write it; step pods trust the manager's artifact endpoint by it.
const CAKey = "ca.crt"

// Copier copies a TLS Secret's tls.crt and tls.key into a directory, and again whenever the
// certificate changes. A Secret volume would do the same, but the kubelet refreshes one only
// at its next sync of the pod, a minute or more after the manager first fills the Secret, and
// readiness waited on that. controller-runtime's certificate watcher loads the new files.
// It is a manager Runnable.
type Copier struct {
	Reader client.Reader
	Secret types.NamespacedName
	Dir    string
	// Wait and Refresh are how often the Secret is read until the certificate is there, and
	// after: a second and half a minute when zero.
	Wait, Refresh time.Duration
}

// NeedLeaderElection is false: every replica serves the webhooks.
func (c *Copier) NeedLeaderElection() bool { return false }

// Start polls the Secret until ctx ends. It fails only when it cannot write the files.
func (c *Copier) Start(ctx context.Context) error {
	log := ctrl.Log.WithName("webhook-certs")
	if err := os.MkdirAll(c.Dir, 0o700); err != nil {
		return fmt.Errorf("the webhook certificate directory: %w", err)
	}
	wait, refresh := orDefault(c.Wait, time.Second), orDefault(c.Refresh, 30*time.Second)
	var written []byte
	for {
		secret := &corev1.Secret{}
		err := c.Reader.Get(ctx, c.Secret, secret)
		cert, key, ca := secret.Data[corev1.TLSCertKey], secret.Data[corev1.TLSPrivateKeyKey], secret.Data[CAKey]
		switch {
		case err != nil && !apierrors.IsNotFound(err) && ctx.Err() == nil:
			log.Error(err, "Reading the webhook certificate's Secret", "secret", c.Secret)
		case err == nil && len(cert) > 0 && len(key) > 0 && !bytes.Equal(cert, written):
			if err := c.write(key, cert, ca); err != nil {
				return err
			}
			written = cert
			log.Info("Wrote the webhook certificate", "dir", c.Dir)
		}
		next := refresh
		if written == nil {
			next = wait
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(next):
		}
	}
}

// write replaces the CA (when the Secret has one), the key, then the certificate, each by a
// rename, so the watcher never reads half a file.
func (c *Copier) write(key, cert, ca []byte) error {
	type file struct {
		name string
		data []byte
	}
	var files []file
	if len(ca) > 0 {
		files = append(files, file{CAKey, ca})
	}
	files = append(files, file{corev1.TLSPrivateKeyKey, key}, file{corev1.TLSCertKey, cert})
	for _, f := range files {
		tmp := filepath.Join(c.Dir, "."+f.name)
		if err := os.WriteFile(tmp, f.data, 0o600); err != nil {
			return err
		}
		if err := os.Rename(tmp, filepath.Join(c.Dir, f.name)); err != nil {
			return err
		}
	}
	return nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}
