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
	"maps"
	"slices"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/gatepolicy"
	"github.com/ergon-dev/ergon/internal/humaninput"
)

// +kubebuilder:webhook:path=/mutate-ergon-dev-v1alpha1-gate,mutating=true,failurePolicy=fail,sideEffects=None,groups=ergon.dev,resources=gates,verbs=update,versions=v1alpha1,name=mgate.ergon.dev,admissionReviewVersions=v1,timeoutSeconds=5
// +kubebuilder:webhook:path=/validate-ergon-dev-v1alpha1-gate,mutating=false,failurePolicy=fail,sideEffects=None,groups=ergon.dev,resources=gates,verbs=create;update,versions=v1alpha1,name=vgate.ergon.dev,admissionReviewVersions=v1,timeoutSeconds=5
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// GateWebhook makes a Gate's decision the Kubernetes way. The mutating half stamps who
// decides from the request's authenticated identity, over whatever the client sent; the
// validating half allows the decision only while the Gate is pending and its Run has not
// finished, when internal/gatepolicy says it counts (not the person behind the Run where the
// Gate forbids self-approval, one vote a person, only votes on a quorum Gate), and only from an
// approver the Gate lists or one RBAC grants the verb "approve" on the Gate. Only the
// manager creates Gates; what ties a Gate to its Run (labels, owner references, runRef, step)
// and every vote cast never change, and a quorum is reached only by that many votes.
type GateWebhook struct {
	Client client.Client
	// Reader reads Runs, from the cache first.
	Reader  client.Reader
	Manager manager
}

// SetupGateWebhookWithManager registers both halves of the Gate webhook.
func SetupGateWebhookWithManager(mgr ctrl.Manager) error {
	m, err := managerOf(mgr)
	if err != nil {
		return err
	}
	w := &GateWebhook{Client: mgr.GetClient(), Reader: newReader(mgr), Manager: m}
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

// Default stamps the decision, or each vote added after the ones cast, with the requester's
// identity, and completes the answer to an input Gate: the option defaults to the Gate's first
// that approves, and the values of an approving answer take the input's defaults for the
// fields they leave out. Votes already cast are left as they are, for validation to compare.
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
	form := inputOf(gate)
	if d := gate.Spec.Decision; d != nil && old.Spec.Decision == nil {
		d.User, d.Groups = user, groups
		d.Option, d.Values = completeAnswer(gate, form, d.Option, d.Values)
	}
	for i := len(old.Spec.Approvals); i < len(gate.Spec.Approvals); i++ {
		a := &gate.Spec.Approvals[i]
		a.User, a.Groups = user, groups
		a.Option, a.Values = completeAnswer(gate, form, a.Option, a.Values)
	}
	return nil
}

// inputOf parses an input Gate's schema; nil for a Gate that asks no input, or whose input
// does not parse (validation then refuses every approving answer, naming why).
func inputOf(gate *ergonv1alpha1.Gate) *humaninput.Field {
	if gate.Spec.Input == nil {
		return nil
	}
	form, errs := humaninput.Parse(gate.Spec.Input.Raw, field.NewPath("spec", "input"))
	if len(errs) > 0 {
		return nil
	}
	return form
}

// completeAnswer gives an answer to an input Gate its default option and values.
func completeAnswer(gate *ergonv1alpha1.Gate, form *humaninput.Field, option string,
	values *apiextensionsv1.JSON) (string, *apiextensionsv1.JSON) {
	if form == nil {
		return option, values
	}
	if option == "" {
		option = approvingOption(gate.Spec.Options)
	}
	if option == gatepolicy.OptionReject {
		return option, values
	}
	var v any
	if values != nil && len(values.Raw) > 0 {
		decoded, err := humaninput.DecodeValues(values.Raw)
		if err != nil {
			return option, values // validation says what is wrong
		}
		v = decoded
	}
	raw, err := json.Marshal(form.Complete(v))
	if err != nil {
		return option, values
	}
	return option, &apiextensionsv1.JSON{Raw: raw}
}

// approvingOption is the first of a Gate's options that approves.
func approvingOption(options []string) string {
	for _, o := range options {
		if o != gatepolicy.OptionReject {
			return o
		}
	}
	return gatepolicy.OptionApprove
}

// ValidateCreate allows only the manager, whose Run controller asks the question, to create
// a Gate: a Gate made by anyone else could pose as a Run's and be decided as they like.
func (w *GateWebhook) ValidateCreate(ctx context.Context, gate *ergonv1alpha1.Gate) (admission.Warnings, error) {
	req, err := admission.RequestFromContext(ctx)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	if !w.Manager.is(req) {
		return nil, apierrors.NewForbidden(ergonv1alpha1.GroupVersion.WithResource("gates").GroupResource(), gate.Name,
			fmt.Errorf("only Ergon creates Gates, for the gate steps of Runs; %s may decide one but not create it", req.UserInfo.Username))
	}
	return nil, nil
}

// ValidateDelete allows every deletion.
func (w *GateWebhook) ValidateDelete(context.Context, *ergonv1alpha1.Gate) (admission.Warnings, error) {
	return nil, nil
}

// ValidateUpdate keeps a Gate tied to its Run and every cast vote as it was, for everyone,
// and allows a decision or a new vote only from someone allowed to give it.
func (w *GateWebhook) ValidateUpdate(ctx context.Context, old, gate *ergonv1alpha1.Gate) (admission.Warnings, error) {
	invalid := func(errs field.ErrorList) error {
		return apierrors.NewInvalid(ergonv1alpha1.GroupVersion.WithKind("Gate").GroupKind(), gate.Name, errs)
	}
	if errs := append(fixedMetadata(old, gate), castVotes(old, gate)...); len(errs) > 0 {
		return nil, invalid(errs)
	}
	if !equality.Semantic.DeepEqual(old.Spec.Input, gate.Spec.Input) {
		return nil, invalid(field.ErrorList{field.Forbidden(field.NewPath("spec", "input"),
			"only decision and approvals of a Gate can change; the question is set by its Run")})
	}
	newDecision := gate.Spec.Decision != nil && old.Spec.Decision == nil
	added := len(gate.Spec.Approvals) - len(old.Spec.Approvals)
	if !newDecision && added == 0 {
		return nil, nil
	}
	path := field.NewPath("spec", "decision")
	if !newDecision {
		path = field.NewPath("spec", "approvals")
	}
	forbidden := func(msg string) error { return invalid(field.ErrorList{field.Forbidden(path, msg)}) }
	if msg := finalGate(old); msg != "" {
		return nil, forbidden(msg)
	}
	req, err := admission.RequestFromContext(ctx)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	run := &ergonv1alpha1.Run{}
	err = w.Reader.Get(ctx, client.ObjectKey{Namespace: gate.Namespace, Name: gate.Spec.RunRef.Name}, run)
	switch {
	case apierrors.IsNotFound(err):
		return nil, forbidden(fmt.Sprintf("Run %s no longer exists; there is nothing to decide", gate.Spec.RunRef.Name))
	case err != nil:
		return nil, apierrors.NewInternalError(err)
	case run.Status.Phase.Finished():
		return nil, forbidden(fmt.Sprintf("Run %s has finished (%s); its Gate can no longer be decided", run.Name, run.Status.Phase))
	}
	// The answers given now are the decision, when it is new, and the last vote, when one was
	// added (castVotes allows one); both are the requester's, stamped by Default. Whether they
	// count is gatepolicy's to say, as it is when the Gate controller counts them; the timeout
	// is the controller's alone, so no time is needed here.
	answers := gatepolicy.AnswersOf(gate)
	d := gatepolicy.Decide(gatepolicy.QuestionOf(gate, nil), gatepolicy.PersonOf(run), answers, time.Time{})
	var given []gatepolicy.Verdict
	if newDecision {
		given = append(given, d.Verdicts[0])
		if errs := valuesSize(gate.Spec.Decision.Values, field.NewPath("spec", "decision", "values")); len(errs) > 0 {
			return nil, invalid(errs)
		}
	}
	if added > 0 {
		given = append(given, d.Verdicts[len(answers)-1])
		last := len(gate.Spec.Approvals) - 1
		if errs := valuesSize(gate.Spec.Approvals[last].Values, field.NewPath("spec", "approvals").Index(last).Child("values")); len(errs) > 0 {
			return nil, invalid(errs)
		}
	}
	needsRBAC := false
	for _, v := range given {
		if len(v.Invalid) > 0 {
			return nil, invalid(v.Invalid)
		}
		if v.Refused != "" {
			return nil, forbidden(v.Refused)
		}
		needsRBAC = needsRBAC || v.NeedsRBAC
	}
	if !needsRBAC {
		return nil, nil
	}
	allowed, err := w.mayApprove(ctx, gate, req)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	if !allowed {
		return nil, forbidden(fmt.Sprintf("%s may not decide this Gate: be listed in spec.approvers, or be granted the verb "+
			"approve on gates.ergon.dev in namespace %s (the ClusterRole ergon-gate-approver does)", req.UserInfo.Username, gate.Namespace))
	}
	return nil, nil
}

// valuesSize refuses an answer's values larger than humaninput.MaxValuesBytes.
func valuesSize(values *apiextensionsv1.JSON, path *field.Path) field.ErrorList {
	if values != nil && len(values.Raw) > humaninput.MaxValuesBytes {
		return field.ErrorList{field.TooLong(path, "", humaninput.MaxValuesBytes)}
	}
	return nil
}

// finalGate says why a Gate whose status is final takes no decision or vote: it was decided,
// or closed when its Run ended before anyone decided. Empty while it is pending.
func finalGate(gate *ergonv1alpha1.Gate) string {
	switch st := gate.Status; {
	case st.Phase.Open():
		return ""
	case st.Phase == ergonv1alpha1.GateClosed:
		return fmt.Sprintf("Gate %s is Closed: its Run %s ended before anyone decided, so it can no longer be decided",
			gate.Name, gate.Spec.RunRef.Name)
	default:
		return fmt.Sprintf("Gate %s is %s already (by %s); it can no longer be decided", gate.Name, st.Phase, st.DecidedBy)
	}
}

// fixedMetadata refuses changes to what ties a Gate to its Run: its labels and owner
// references. The CRD's rules keep spec.runRef and spec.step.
func fixedMetadata(old, gate *ergonv1alpha1.Gate) field.ErrorList {
	var errs field.ErrorList
	meta := field.NewPath("metadata")
	if !maps.Equal(old.Labels, gate.Labels) {
		errs = append(errs, field.Forbidden(meta.Child("labels"), "the labels of a Gate are set by Ergon and never change"))
	}
	for _, key := range []string{ergonv1alpha1.AnnotationToolCall, ergonv1alpha1.AnnotationConversation} {
		if old.Annotations[key] != gate.Annotations[key] {
			errs = append(errs, field.Forbidden(meta.Child("annotations").Key(key),
				"what a Gate asks about (a tool call, a conversation) is set by Ergon and never changes"))
		}
	}
	if !equality.Semantic.DeepEqual(old.OwnerReferences, gate.OwnerReferences) {
		errs = append(errs, field.Forbidden(meta.Child("ownerReferences"), "the owner of a Gate is its Run and never changes"))
	}
	return errs
}

// castVotes refuses an update that edits, reorders or withdraws a vote: the old approvals
// must stay, as they were and in their order, ahead of at most one new vote.
func castVotes(old, gate *ergonv1alpha1.Gate) field.ErrorList {
	path := field.NewPath("spec", "approvals")
	if len(gate.Spec.Approvals) < len(old.Spec.Approvals) {
		return field.ErrorList{field.Forbidden(path, "approvals are never withdrawn, edited or reordered; a Gate keeps every vote it was given")}
	}
	for i, was := range old.Spec.Approvals {
		if !equality.Semantic.DeepEqual(was, gate.Spec.Approvals[i]) {
			return field.ErrorList{field.Forbidden(path.Index(i), fmt.Sprintf("approvals are never withdrawn, edited or reordered; "+
				"this is %s's vote, and yours goes after the %d cast", was.User, len(old.Spec.Approvals)))}
		}
	}
	if len(gate.Spec.Approvals) > len(old.Spec.Approvals)+1 {
		return field.ErrorList{field.Forbidden(path.Index(len(old.Spec.Approvals)+1), "one request casts one vote, its requester's")}
	}
	return nil
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
