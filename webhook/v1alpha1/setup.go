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

package v1alpha1

import (
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/ergon-dev/ergon/internal/archive"
)

// Options configure the webhooks.
type Options struct {
	// Archive, when set, is where a Run's spec.retryOf finds a Run that is gone.
	Archive archive.Store
}

// SetupWebhooksWithManager registers the admission webhooks of every kind with the manager's
// webhook server, each refusing a field of the wrong JSON type by its name (decoding.go).
func SetupWebhooksWithManager(mgr ctrl.Manager, o Options) error {
	mgr = explainingManager{mgr}
	for _, setup := range []func(ctrl.Manager) error{
		SetupSceneWebhookWithManager, func(mgr ctrl.Manager) error { return setupRunWebhook(mgr, o) }, SetupTriggerWebhookWithManager,
		SetupGateWebhookWithManager, SetupWorkspaceWebhookWithManager, SetupWorkspacePoolWebhookWithManager,
	} {
		if err := setup(mgr); err != nil {
			return err
		}
	}
	return nil
}
