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

package trigger

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

// secretRecheck is how soon a webhook Trigger looks at its key Secret again, whether it was
// missing or there: the manager does not watch Secrets, to hold none of them in memory.
const secretRecheck = time.Minute

// reconcileWebhook reports where a webhook Trigger listens and whether its key Secret is
// there. The hooks server starts its Runs.
func (r *TriggerReconciler) reconcileWebhook(ctx context.Context, trigger *ergonv1alpha1.Trigger,
	status *ergonv1alpha1.TriggerStatus) (ctrl.Result, error) {
	status.WebhookPath = fmt.Sprintf("/hooks/%s/%s", trigger.Namespace, trigger.Name)
	if ptr.Deref(trigger.Spec.Suspend, false) {
		setTriggerReady(status, trigger, metav1.ConditionTrue, ergonv1alpha1.ReasonSuspended,
			"spec.suspend is set; deliveries are refused with 409 until it is cleared")
		return ctrl.Result{}, nil
	}
	ready := meta.FindStatusCondition(status.Conditions, ergonv1alpha1.ConditionReady)
	key := client.ObjectKeyFromObject(trigger).String()
	if last, ok := r.secretChecked.Load(key); ok && ready != nil && ready.Reason == ergonv1alpha1.ReasonListening &&
		ready.ObservedGeneration == trigger.Generation && r.Clock.Since(last.(time.Time)) < secretRecheck {
		// Every Run of the Trigger that changes reconciles it; the Secret was there a moment ago.
		return ctrl.Result{}, nil
	}
	ref := trigger.Spec.Webhook.SecretRef
	secret := &corev1.Secret{}
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: trigger.Namespace, Name: ref.Name}, secret)
	switch {
	case apierrors.IsNotFound(err):
		setTriggerReady(status, trigger, metav1.ConditionFalse, ergonv1alpha1.ReasonSecretNotFound,
			fmt.Sprintf("spec.webhook.secretRef: Secret %q does not exist; create it with the signing key under %q", ref.Name, ref.Key))
		return ctrl.Result{RequeueAfter: secretRecheck}, nil
	case apierrors.IsForbidden(err):
		// The install lets the manager read key Secrets in some namespaces only.
		setTriggerReady(status, trigger, metav1.ConditionFalse, ergonv1alpha1.ReasonSecretNotFound,
			fmt.Sprintf("spec.webhook.secretRef: the manager may not read Secrets in namespace %s; "+
				"ask the cluster admin to add it to the chart's hooks.keySecrets.namespaces", trigger.Namespace))
		return ctrl.Result{RequeueAfter: secretRecheck}, nil
	case err != nil:
		return ctrl.Result{}, err
	case len(secret.Data[ref.Key]) == 0:
		setTriggerReady(status, trigger, metav1.ConditionFalse, ergonv1alpha1.ReasonSecretNotFound,
			fmt.Sprintf("spec.webhook.secretRef: Secret %q has no key %q; add the signing key under it", ref.Name, ref.Key))
		return ctrl.Result{RequeueAfter: secretRecheck}, nil
	}
	r.secretChecked.Store(key, r.Clock.Now())
	setTriggerReady(status, trigger, metav1.ConditionTrue, ergonv1alpha1.ReasonListening,
		"Accepting signed deliveries at "+status.WebhookPath)
	return ctrl.Result{}, nil
}
