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
	"encoding/json"
	"fmt"
	"slices"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

// +kubebuilder:webhook:path=/mutate-ergon-dev-v1alpha1-gate,mutating=true,failurePolicy=fail,sideEffects=None,groups=ergon.dev,resources=gates,verbs=update,versions=v1alpha1,name=mgate.ergon.dev,admissionReviewVersions=v1,timeoutSeconds=5
// +kubebuilder:webhook:path=/validate-ergon-dev-v1alpha1-gate,mutating=false,failurePolicy=fail,sideEffects=None,groups=ergon.dev,resources=gates,verbs=update,versions=v1alpha1,name=vgate.ergon.dev,admissionReviewVersions=v1,timeoutSeconds=5
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// GateWebhook makes a Gate's decision the Kubernetes way. The mutating half stamps who
// decides from the request's authenticated identity, over whatever the client sent; the
// validating half allows the decision only from an approver the Gate lists, or one RBAC
// grants the verb "approve" on the Gate, and only while its Run has not finished.
type GateWebhook struct {
	Client client.Client
	// Reader reads Runs, from the cache first.
	Reader client.Reader
}

// SetupGateWebhookWithManager registers both halves of the Gate webhook.
func SetupGateWebhookWithManager(mgr ctrl.Manager) error {
	w := &GateWebhook{Client: mgr.GetClient(), Reader: newReader(mgr)}
	return ctrl.NewWebhookManagedBy(mgr, &ergonv1alpha1.Gate{}).WithDefaulter(w).WithValidator(w).Complete()
}

// oldGate decodes the object an update replaces.
func oldGate(req admission.Request) (*ergonv1alpha1.Gate, error) {
	old := &ergonv1alpha1.Gate{}
	if len(req.OldObject.Raw) == 0 {
		return old, nil
	}
	return old, json.Unmarshal(req.OldObject.Raw, old)
}

// Default stamps the decision, or each new approval, with the requester's identity.
func (w *GateWebhook) Default(ctx context.Context, gate *ergonv1alpha1.Gate) error {
	req, err := admission.RequestFromContext(ctx)
	if err != nil {
		return err
	}
	old, err := oldGate(req)
	if err != nil {
		return err
	}
	user, groups := req.UserInfo.Username, slices.Clone(req.UserInfo.Groups)
	if d := gate.Spec.Decision; d != nil && old.Spec.Decision == nil {
		d.User, d.Groups = user, groups
	}
	for i := range gate.Spec.Approvals {
		if !hasApproval(old, gate.Spec.Approvals[i].User) {
			gate.Spec.Approvals[i].User, gate.Spec.Approvals[i].Groups = user, groups
		}
	}
	return nil
}

func hasApproval(gate *ergonv1alpha1.Gate, user string) bool {
	return slices.ContainsFunc(gate.Spec.Approvals, func(a ergonv1alpha1.GateApproval) bool { return a.User == user })
}

// ValidateCreate allows the Run controller to create Gates.
func (w *GateWebhook) ValidateCreate(context.Context, *ergonv1alpha1.Gate) (admission.Warnings, error) {
	return nil, nil
}

// ValidateDelete allows every deletion.
func (w *GateWebhook) ValidateDelete(context.Context, *ergonv1alpha1.Gate) (admission.Warnings, error) {
	return nil, nil
}

// ValidateUpdate allows a decision or an approval only from someone allowed to give it.
func (w *GateWebhook) ValidateUpdate(ctx context.Context, old, gate *ergonv1alpha1.Gate) (admission.Warnings, error) {
	newDecision := gate.Spec.Decision != nil && old.Spec.Decision == nil
	added, removed := approvalChanges(old, gate)
	if !newDecision && added == 0 && removed == 0 {
		return nil, nil
	}
	req, err := admission.RequestFromContext(ctx)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	path := field.NewPath("spec", "decision")
	if !newDecision {
		path = field.NewPath("spec", "approvals")
	}
	invalid := func(msg string) error {
		return apierrors.NewInvalid(ergonv1alpha1.GroupVersion.WithKind("Gate").GroupKind(), gate.Name,
			field.ErrorList{field.Forbidden(path, msg)})
	}
	// Every new approval is stamped with the requester, so two new ones in one request are
	// duplicates that the schema refuses (approvals are a map keyed by user).
	if removed > 0 {
		return nil, invalid("approvals are never withdrawn; a Gate keeps every vote it was given")
	}
	run := &ergonv1alpha1.Run{}
	err = w.Reader.Get(ctx, client.ObjectKey{Namespace: gate.Namespace, Name: gate.Spec.RunRef.Name}, run)
	switch {
	case apierrors.IsNotFound(err):
		return nil, invalid(fmt.Sprintf("Run %s no longer exists; there is nothing to decide", gate.Spec.RunRef.Name))
	case err != nil:
		return nil, apierrors.NewInternalError(err)
	case run.Status.Phase.Finished():
		return nil, invalid(fmt.Sprintf("Run %s has finished (%s); its Gate can no longer be decided", run.Name, run.Status.Phase))
	}
	user, groups := req.UserInfo.Username, req.UserInfo.Groups
	if gate.Spec.ForbidSelfApproval && run.Annotations[AnnotationCreatedBy] == user {
		return nil, invalid(fmt.Sprintf("%s created Run %s, and this Gate forbids self-approval; ask another approver", user, run.Name))
	}
	if listedApprover(gate.Spec.Approvers, user, groups) {
		return nil, nil
	}
	allowed, err := w.mayApprove(ctx, gate, req)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	if !allowed {
		return nil, invalid(fmt.Sprintf("%s may not decide this Gate: be listed in spec.approvers, or be granted the verb "+
			"approve on gates.ergon.dev in namespace %s (the ClusterRole ergon-gate-approver does)", user, gate.Namespace))
	}
	return nil, nil
}

// approvalChanges counts the approvals an update adds and removes.
func approvalChanges(old, gate *ergonv1alpha1.Gate) (added, removed int) {
	for _, a := range gate.Spec.Approvals {
		if !hasApproval(old, a.User) {
			added++
		}
	}
	for _, a := range old.Spec.Approvals {
		if !hasApproval(gate, a.User) {
			removed++
		}
	}
	return added, removed
}

// listedApprover reports whether the Gate names the user, or one of the user's groups.
func listedApprover(a *ergonv1alpha1.Approvers, user string, groups []string) bool {
	if a == nil {
		return false
	}
	return slices.Contains(a.Users, user) || slices.ContainsFunc(groups, func(g string) bool { return slices.Contains(a.Groups, g) })
}

// mayApprove asks the API server whether RBAC grants the requester the verb approve on the
// Gate, the way certificate signing requests are approved.
func (w *GateWebhook) mayApprove(ctx context.Context, gate *ergonv1alpha1.Gate, req admission.Request) (bool, error) {
	extra := map[string]authorizationv1.ExtraValue{}
	for k, v := range req.UserInfo.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: req.UserInfo.Username, Groups: req.UserInfo.Groups, UID: req.UserInfo.UID, Extra: extra,
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: gate.Namespace, Verb: "approve", Group: ergonv1alpha1.GroupVersion.Group,
			Resource: "gates", Name: gate.Name,
		},
	}}
	if err := w.Client.Create(ctx, sar); err != nil {
		return false, err
	}
	return sar.Status.Allowed, nil
}
