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

package controllers

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

// Fixtures for webhook Triggers in the controller. The endpoint that accepts their
// deliveries is tested beside it, in internal/hooks.

var hookKey = []byte("hook-signing-key-0123456789")

func createKeySecret(ctx context.Context, ns string) {
	Expect(k8sClient.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "hook-key", Namespace: ns},
		Data: map[string][]byte{"key": hookKey}})).To(Succeed())
}

func webhookTrigger(ctx context.Context, ns, name string, params map[string]string,
	edit ...func(*ergonv1alpha1.Trigger)) *ergonv1alpha1.Trigger {
	t := &ergonv1alpha1.Trigger{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: ergonv1alpha1.TriggerSpec{
			SceneRef: corev1.LocalObjectReference{Name: "on-push"},
			Params:   map[string]string{"fixed": "yes"},
			Webhook: &ergonv1alpha1.WebhookSource{
				SecretRef: corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "hook-key"}, Key: "key"},
				Params:    params,
			},
		}}
	for _, e := range edit {
		e(t)
	}
	Expect(k8sClient.Create(ctx, t)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, t))).To(Succeed()) })
	return t
}
