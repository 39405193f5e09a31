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

package run

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestWhatTheAPIServerRefusesForGood(t *testing.T) {
	pods := schema.GroupResource{Resource: "pods"}
	// As the namespace lifecycle admission plugin refuses a create in a namespace being deleted.
	ending := apierrors.NewForbidden(pods, "p", errors.New("unable to create new content in namespace ns because it is being terminated"))
	ending.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause, Field: "metadata.namespace"}}
	quota := apierrors.NewForbidden(pods, "p", errors.New("exceeded quota: compute, requested: pods=1, used: pods=4, limited: pods=4"))
	for _, tt := range []struct {
		name            string
		err             error
		refused, quotas bool
	}{
		{"invalid", apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "p",
			field.ErrorList{field.Required(field.NewPath("spec"), "")}), true, false},
		{"forbidden by a policy", apierrors.NewForbidden(pods, "p", errors.New("violates PodSecurity \"restricted\"")), true, false},
		{"over a quota", quota, true, true},
		{"in a namespace being deleted", ending, false, false},
		{"a timeout", apierrors.NewTimeoutError("slow", 1), false, false},
		{"a conflict", apierrors.NewConflict(pods, "p", errors.New("changed")), false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := refused(tt.err); got != tt.refused {
				t.Errorf("refused(%v) = %v, want %v", tt.err, got, tt.refused)
			}
			if got := exceededQuota(tt.err); got != tt.quotas {
				t.Errorf("exceededQuota(%v) = %v, want %v", tt.err, got, tt.quotas)
			}
		})
	}
}
