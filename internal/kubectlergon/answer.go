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
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/humaninput"
	"github.com/ergon-dev/ergon/internal/naming"
)

type answerOptions struct {
	sets            []string
	file            string
	option, comment string
	gate            string
}

func newAnswerCommand(o *Options) *cobra.Command {
	a := &answerOptions{}
	cmd := &cobra.Command{
		Use:   "answer RUN STEP",
		Short: "Answer the question a step of a Run waits on",
		Long: "Answer, as yourself, the input Gate a step of a Run waits on: a gate step with input, or an\n" +
			"agent's ask_human. Give the values with --set name=value (a dotted name reaches a nested\n" +
			"field; an array takes a,b,c or JSON) and/or -f a JSON or YAML file (- reads stdin); --set\n" +
			"wins over the file. Fields left out take the question's defaults. The values are checked\n" +
			"against the question's schema here, then by the admission webhook, which stamps who\n" +
			"answered and refuses anyone not allowed to. Without values, the defaults are the answer.",
		Example: "  kubectl ergon answer release-x7k2 plan --set version=1.4.2 --set notify=true\n" +
			"  kubectl ergon answer release-x7k2 plan -f answer.yaml -m 'checked with QA'",
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: completeRunAndStep(o),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.answer(cmd.Context(), args[0], args[1], a)
		},
	}
	cmd.Flags().StringArrayVar(&a.sets, "set", nil, "a field's value, as name=value (repeatable)")
	cmd.Flags().StringVarP(&a.file, "filename", "f", "", "a JSON or YAML file of values; - reads stdin")
	cmd.Flags().StringVar(&a.option, "option", "", "the option to answer with, when the Gate has several approving ones")
	cmd.Flags().StringVarP(&a.comment, "message", "m", "", "a comment kept with the answer")
	cmd.Flags().StringVar(&a.gate, "gate", "", "the Gate to answer, when the step waits on several")
	return cmd
}

func (o *Options) answer(ctx context.Context, run, step string, a *answerOptions) error {
	gate, err := o.waitingGate(ctx, run, step, a.gate)
	if err != nil {
		return err
	}
	if gate.Spec.Input == nil {
		return fmt.Errorf("the Gate %s of step %s asks a decision, not input: kubectl ergon approve %s, or reject it",
			gate.Name, step, gate.Name)
	}
	form, errs := humaninput.Parse(gate.Spec.Input.Raw, field.NewPath("spec", "input"))
	if len(errs) > 0 {
		return fmt.Errorf("the question of Gate %s cannot be read: %v", gate.Name, errs.ToAggregate())
	}
	values, err := a.values(form, o.Streams.In)
	if err != nil {
		return err
	}
	// The webhook decides; checking here first names every wrong field at once, before a write.
	if errs := form.Validate(form.Complete(values), field.NewPath("values")); len(errs) > 0 {
		return fmt.Errorf("the answer does not fit the question of Gate %s: %v", gate.Name, errs.ToAggregate())
	}
	raw, err := json.Marshal(values)
	if err != nil {
		return err
	}
	return o.decide(ctx, gate.Name, a.option, a.comment, &apiextensionsv1.JSON{Raw: raw})
}

// values builds an answer from the file, then the --set assignments.
func (a *answerOptions) values(form *humaninput.Field, stdin io.Reader) (map[string]any, error) {
	values := map[string]any{}
	if a.file != "" {
		var data []byte
		var err error
		if a.file == "-" {
			data, err = io.ReadAll(io.LimitReader(stdin, humaninput.MaxValuesBytes*4))
		} else {
			data, err = os.ReadFile(a.file)
		}
		if err != nil {
			return nil, err
		}
		js, err := yaml.YAMLToJSON(data)
		if err != nil {
			return nil, fmt.Errorf("%s is neither JSON nor YAML: %w", a.file, err)
		}
		v, err := humaninput.DecodeValues(js)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", a.file, err)
		}
		m, ok := v.(map[string]any)
		if !ok && v != nil {
			return nil, fmt.Errorf("%s holds no object of fields: an answer is name: value pairs", a.file)
		}
		if m != nil {
			values = m
		}
	}
	for _, s := range a.sets {
		if err := form.Set(values, s); err != nil {
			return nil, fmt.Errorf("--set %w", err)
		}
	}
	return values, nil
}

// waitingGate finds the open Gate a step of a Run waits on: named, or the only one.
func (o *Options) waitingGate(ctx context.Context, run, step, name string) (*ergonv1alpha1.Gate, error) {
	c, ns, err := o.clientIn()
	if err != nil {
		return nil, err
	}
	if name != "" {
		gate := &ergonv1alpha1.Gate{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, gate); err != nil {
			return nil, err
		}
		if gate.Spec.RunRef.Name != run || gate.Spec.Step != step {
			return nil, fmt.Errorf("the Gate %s belongs to step %s of Run %s, not to step %s of Run %s",
				name, gate.Spec.Step, gate.Spec.RunRef.Name, step, run)
		}
		return gate, nil
	}
	gates := &ergonv1alpha1.GateList{}
	if err := c.List(ctx, gates, client.InNamespace(ns),
		client.MatchingLabels{ergonv1alpha1.LabelRun: naming.LabelValue(run), ergonv1alpha1.LabelStep: naming.LabelValue(step)}); err != nil {
		return nil, err
	}
	var open []*ergonv1alpha1.Gate
	for i := range gates.Items {
		g := &gates.Items[i]
		if g.Spec.RunRef.Name == run && g.Spec.Step == step && g.Spec.Decision == nil && g.Status.Phase.Open() {
			open = append(open, g)
		}
	}
	switch len(open) {
	case 1:
		return open[0], nil
	case 0:
		if _, err := o.getRun(ctx, run); apierrors.IsNotFound(err) {
			return nil, err
		}
		return nil, fmt.Errorf("step %s of Run %s waits on no question (kubectl ergon get %s shows its steps)", step, run, run)
	}
	names := make([]string, len(open))
	for i, g := range open {
		names[i] = g.Name
	}
	return nil, errors.New("step " + step + " of Run " + run + " waits on several Gates; name one with --gate: " +
		strings.Join(names, ", "))
}

func newInboxCommand(o *Options) *cobra.Command {
	return &cobra.Command{
		Use:   "inbox",
		Short: "List what waits on you: questions to answer and Gates to decide, in every namespace",
		Long: "List the open Gates you may answer or decide, in every namespace you may list Gates in (the\n" +
			"current one when you may not list them cluster-wide), oldest first, each with what it asks:\n" +
			"input fields to answer with kubectl ergon answer, or options to decide with approve and reject.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.inbox(cmd.Context())
		},
	}
}

func (o *Options) inbox(ctx context.Context) error {
	c, err := o.Client()
	if err != nil {
		return err
	}
	pending, err := PendingFor(ctx, c, "")
	if apierrors.IsForbidden(err) {
		ns, nsErr := o.Namespace()
		if nsErr != nil {
			return nsErr
		}
		_, _ = fmt.Fprintf(o.Streams.ErrOut, "You may not list Gates in every namespace; namespace %s only.\n", ns)
		pending, err = PendingFor(ctx, c, ns)
	}
	if err != nil {
		return err
	}
	if len(pending) == 0 {
		_, _ = fmt.Fprintln(o.Streams.ErrOut, "Nothing waits on you.")
		return nil
	}
	slices.SortFunc(pending, func(a, b *ergonv1alpha1.Gate) int {
		return a.CreationTimestamp.Compare(b.CreationTimestamp.Time)
	})
	w := tabwriter.NewWriter(o.Streams.Out, 0, 8, 3, ' ', 0)
	_, _ = fmt.Fprintln(w, "NAMESPACE\tRUN\tSTEP\tASKS\tAGE\tQUESTION")
	for _, g := range pending {
		_, _ = fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", g.Namespace, g.Spec.RunRef.Name, g.Spec.Step, asks(g),
			duration.HumanDuration(o.now().Sub(g.CreationTimestamp.Time)), firstLine(g.Spec.Message, 60))
	}
	return w.Flush()
}

// asks says what a Gate asks for: the fields of its input, or the options to decide among.
func asks(g *ergonv1alpha1.Gate) string {
	if g.Spec.Input != nil {
		if form, errs := humaninput.Parse(g.Spec.Input.Raw, nil); len(errs) == 0 {
			return "input: " + strings.Join(form.Names(), ",")
		}
		return "input"
	}
	options := g.Spec.Options
	if len(options) == 0 {
		options = []string{optionApprove, optionReject}
	}
	return "decision: " + strings.Join(options, "|")
}
