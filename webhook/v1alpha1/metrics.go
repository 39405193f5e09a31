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
	"context"

	"github.com/prometheus/client_golang/prometheus"
	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

// admissionRefusals counts what the admission webhooks refused. controller-runtime's own
// controller_runtime_webhook_requests_total counts every answer as HTTP 200, allowed or not.
var admissionRefusals = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "ergon_admission_refusals_total",
	Help: "Requests Ergon's admission webhooks refused, by kind and operation.",
}, []string{"kind", "operation"})

func init() { metrics.Registry.MustRegister(admissionRefusals) }

// countRefusals counts the refusals of the admission handler it wraps.
type countRefusals struct{ admission.Handler }

func (h countRefusals) Handle(ctx context.Context, req admission.Request) admission.Response {
	resp := h.Handler.Handle(ctx, req)
	if !resp.Allowed {
		admissionRefusals.WithLabelValues(refusedKind(req), refusedOperation(req.Operation)).Inc()
	}
	return resp
}

// refusedKind is the kind of a request's object as the label carries it: one of Ergon's, or
// other. Anyone who reaches the webhook port may send a request, and a label takes no value a
// caller chose.
func refusedKind(req admission.Request) string {
	if req.Kind.Group == ergonv1alpha1.GroupVersion.Group {
		switch req.Kind.Kind {
		case "Scene", "Run", "Gate", "Trigger", "Workspace":
			return req.Kind.Kind
		}
	}
	return "other"
}

// refusedOperation is the request's operation as the label carries it.
func refusedOperation(op admissionv1.Operation) string {
	switch op {
	case admissionv1.Create, admissionv1.Update, admissionv1.Delete, admissionv1.Connect:
		return string(op)
	}
	return "other"
}
