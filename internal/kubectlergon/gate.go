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

package kubectlergon

import (
	"context"
	"fmt"
	"slices"
	"text/tabwriter"

	"github.com/spf13/cobra"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/gatepolicy"
)

func newDecideCommand(o *Options, verb string) *cobra.Command {
	var comment, option string
	cmd := &cobra.Command{
		Use:   verb + " GATE",
		Short: map[string]string{optionApprove: "Approve a Gate", optionReject: "Reject a Gate"}[verb],
		Long: "Decide a Gate as yourself. The admission webhook stamps who decided and refuses anyone not\n" +
			"allowed to; its refusal is printed as it is. On a Gate that needs several approvals, this\n" +
			"adds your vote.",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completePendingGates(o),
		RunE: func(cmd *cobra.Command, args []string) error {
			opt := verb
			if option != "" {
				opt = option
			}
			return o.decide(cmd.Context(), args[0], opt, comment, nil)
		},
	}
	cmd.Flags().StringVarP(&comment, "message", "m", "", "a comment kept with the decision")
	if verb == optionApprove {
		cmd.Flags().StringVar(&option, "option", "", "the option to choose, for a Gate whose options are not approve and reject")
	}
	return cmd
}

// RefusedError is Decide's refusal: the answer does not fit the Gate as it is (no such
// option, values for a Gate that asks none, already decided). It is about the Gate's state,
// not the API server's answer, so the console answers it with 409 Conflict.
type RefusedError struct{ msg string }

func (e *RefusedError) Error() string { return e.msg }

func refused(format string, args ...any) error {
	return &RefusedError{msg: fmt.Sprintf(format, args...)}
}

// Decide sets a Gate's decision or, when it needs more than one approval, adds a vote. User
// and groups are left for the webhook to stamp. Values answer an input Gate; with them the
// option may be empty, and the webhook takes the Gate's first approving one. A refusal is a
// *RefusedError.
func Decide(gate *ergonv1alpha1.Gate, option, comment string, values *apiextensionsv1.JSON) error {
	if !slices.Contains(gate.Spec.Options, option) && len(gate.Spec.Options) > 0 && (option != "" || values == nil) {
		return refused("no option %q on Gate %s; its options: %v", option, gate.Name, gate.Spec.Options)
	}
	if values != nil && gate.Spec.Input == nil {
		return refused("the Gate %s asks no input: approve or reject it without values", gate.Name)
	}
	if gate.Spec.Decision != nil {
		return refused("the Gate %s was already decided: %s by %s", gate.Name, gate.Spec.Decision.Option, gate.Spec.Decision.User)
	}
	if gate.Spec.MinApprovals != nil && *gate.Spec.MinApprovals > 1 {
		gate.Spec.Approvals = append(gate.Spec.Approvals,
			ergonv1alpha1.GateApproval{User: "-", Option: option, Comment: comment, Values: values})
		return nil
	}
	gate.Spec.Decision = &ergonv1alpha1.GateDecision{Option: option, Comment: comment, Values: values}
	return nil
}

// DecideGate answers a Gate as c's user: it reads the Gate, decides it with Decide, and
// patches it (which the role ergon-gate-approver grants) guarded by the resourceVersion it
// read, again on a conflict. The admission webhook stamps who decided and refuses whoever may
// not; its refusal is returned as it is. The plugin, the console and the protocol endpoints
// all answer Gates this way.
func DecideGate(ctx context.Context, c client.Client, key client.ObjectKey, option, comment string,
	values *apiextensionsv1.JSON) (*ergonv1alpha1.Gate, error) {
	gate := &ergonv1alpha1.Gate{}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.Get(ctx, key, gate); err != nil {
			return err
		}
		orig := gate.DeepCopy()
		if err := Decide(gate, option, comment, values); err != nil {
			return err
		}
		return c.Patch(ctx, gate, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
	})
	return gate, err
}

func (o *Options) decide(ctx context.Context, name, option, comment string, values *apiextensionsv1.JSON) error {
	c, ns, err := o.clientIn()
	if err != nil {
		return err
	}
	if _, err := DecideGate(ctx, c, client.ObjectKey{Namespace: ns, Name: name}, option, comment, values); err != nil {
		return err
	}
	switch {
	case option == optionReject:
		_, _ = fmt.Fprintf(o.Streams.Out, "gate.ergon.dev/%s rejected\n", name)
	case values != nil:
		_, _ = fmt.Fprintf(o.Streams.Out, "gate.ergon.dev/%s answered\n", name)
	default:
		_, _ = fmt.Fprintf(o.Streams.Out, "gate.ergon.dev/%s decided %s\n", name, option)
	}
	return nil
}

func newGatesCommand(o *Options) *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   pluralGates,
		Short: "List the pending Gates you may decide",
		Long: "List the Gates still waiting for a decision that you may decide: those listing you or one of\n" +
			"your groups as approvers, and those RBAC lets you approve (asked with a\n" +
			"SelfSubjectAccessReview). Your identity is asked with a SelfSubjectReview.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.gates(cmd.Context(), all)
		},
	}
	cmd.Flags().BoolVarP(&all, "all-namespaces", "A", false, "list Gates of every namespace")
	return cmd
}

func (o *Options) gates(ctx context.Context, all bool) error {
	c, err := o.Client()
	if err != nil {
		return err
	}
	ns := ""
	if !all {
		if ns, err = o.Namespace(); err != nil {
			return err
		}
	}
	pending, err := PendingFor(ctx, c, ns)
	if err != nil {
		return err
	}
	if len(pending) == 0 {
		_, _ = fmt.Fprintln(o.Streams.ErrOut, "No pending Gates you may decide.")
		return nil
	}
	w := tabwriter.NewWriter(o.Streams.Out, 0, 8, 3, ' ', 0)
	_, _ = fmt.Fprintln(w, "NAMESPACE\tNAME\tRUN\tSTEP\tOPTIONS\tAGE\tMESSAGE")
	for _, g := range pending {
		_, _ = fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%v\t%s\t%s\n", g.Namespace, g.Name, g.Spec.RunRef.Name, g.Spec.Step,
			g.Spec.Options, duration.HumanDuration(o.now().Sub(g.CreationTimestamp.Time)), firstLine(g.Spec.Message, 60))
	}
	return w.Flush()
}

// PendingFor lists the open Gates of a namespace ("" for all) that the user may decide:
// those listing them or one of their groups as approvers, and those RBAC lets them approve.
func PendingFor(ctx context.Context, c client.Client, ns string) ([]*ergonv1alpha1.Gate, error) {
	pending, _, err := PendingForAtMost(ctx, c, ns, 0)
	return pending, err
}

// PendingForAtMost is PendingFor that asks RBAC about at most limit Gates (0: no limit), the
// oldest first, and says how many it asked about: a caller that answers many viewers at once
// bounds what each costs.
func PendingForAtMost(ctx context.Context, c client.Client, ns string, limit int) ([]*ergonv1alpha1.Gate, int, error) {
	gates := &ergonv1alpha1.GateList{}
	if err := c.List(ctx, gates, client.InNamespace(ns)); err != nil {
		return nil, 0, err
	}
	return PendingAmong(ctx, c, gates.Items, limit)
}

// PendingAmong is PendingForAtMost over the Gates given, for example those of one Run.
func PendingAmong(ctx context.Context, c client.Client, gates []ergonv1alpha1.Gate, limit int) ([]*ergonv1alpha1.Gate, int, error) {
	user, groups := identity(ctx, c)
	return PendingAmongFor(ctx, c, user, groups, gates, limit)
}

// PendingAmongFor is PendingAmong for a caller whose identity is known already (the API server
// said who c's user is): it asks the API server about the Gates only.
func PendingAmongFor(ctx context.Context, c client.Client, user string, groups []string, gates []ergonv1alpha1.Gate,
	limit int) ([]*ergonv1alpha1.Gate, int, error) {
	slices.SortFunc(gates, func(a, b ergonv1alpha1.Gate) int { return a.CreationTimestamp.Compare(b.CreationTimestamp.Time) })
	var pending []*ergonv1alpha1.Gate
	asked := 0
	// spend says whether one more Gate may cost an API request.
	spend := func() bool {
		if asked++; limit > 0 && asked > limit {
			asked = limit
			return false
		}
		return true
	}
	persons := map[string]string{}
	for i := range gates {
		g := &gates[i]
		if g.Spec.Decision != nil || !g.Status.Phase.Open() || voted(g, user) {
			continue
		}
		// Whom the Gate asks, and whether the user may answer it, are the webhook's rule
		// (gatepolicy.Who); the person behind the Run matters only where it changes that.
		q := gatepolicy.QuestionOf(g, nil)
		spent, person := false, ""
		if user != "" && (q.Self == gatepolicy.SelfForbidden || q.Asks()) {
			key := g.Namespace + "/" + g.Spec.RunRef.Name
			p, known := persons[key]
			if !known {
				if !spend() {
					break
				}
				spent, p = true, personOf(ctx, c, g)
				persons[key] = p
			}
			person = p
		}
		who := gatepolicy.Who(q, person, user, groups)
		if who.Refused != "" {
			continue
		}
		if who.NeedsRBAC {
			if !spent && !spend() {
				break
			}
			ok, err := mayApprove(ctx, c, g)
			if err != nil {
				return nil, asked, err
			}
			if !ok {
				continue
			}
		}
		pending = append(pending, g)
	}
	return pending, asked, nil
}

// personOf is the person behind the Run that controls the Gate; empty when the user may not
// read that Run or it does not control the Gate.
func personOf(ctx context.Context, c client.Client, g *ergonv1alpha1.Gate) string {
	run := &ergonv1alpha1.Run{}
	if c.Get(ctx, client.ObjectKey{Namespace: g.Namespace, Name: g.Spec.RunRef.Name}, run) != nil || !controlled(g, run) {
		return ""
	}
	return gatepolicy.PersonOf(run)
}

// controlled says whether the Run controls the Gate, as the Run controller made it.
func controlled(g *ergonv1alpha1.Gate, run *ergonv1alpha1.Run) bool {
	ref := metav1.GetControllerOf(g)
	return ref != nil && ref.UID == run.UID
}

// voted says whether the user already gave one of the approvals a Gate needs several of.
func voted(g *ergonv1alpha1.Gate, user string) bool {
	return user != "" && slices.ContainsFunc(g.Spec.Approvals, func(a ergonv1alpha1.GateApproval) bool { return a.User == user })
}

// mayApprove asks whether RBAC grants the verb approve on the Gate, as its webhook does.
func mayApprove(ctx context.Context, c client.Client, g *ergonv1alpha1.Gate) (bool, error) {
	review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: g.Namespace, Verb: "approve", Group: ergonv1alpha1.GroupVersion.Group, Resource: pluralGates, Name: g.Name,
		},
	}}
	if err := c.Create(ctx, review); err != nil {
		return false, err
	}
	return review.Status.Allowed, nil
}

// identity is who the API server takes the user for; empty when it does not say.
func identity(ctx context.Context, c client.Client) (string, []string) {
	review := &authenticationv1.SelfSubjectReview{}
	if err := c.Create(ctx, review); err != nil {
		return "", nil
	}
	return review.Status.UserInfo.Username, review.Status.UserInfo.Groups
}
