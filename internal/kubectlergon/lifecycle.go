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
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/naming"
)

func newCancelCommand(o *Options) *cobra.Command {
	return &cobra.Command{
		Use:               "cancel RUN...",
		Short:             "Cancel Runs: their pods stop and they end Cancelled",
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: completeNames(o, "runs"),
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, name := range args {
				if err := o.patch(cmd.Context(), &ergonv1alpha1.Run{}, name, `{"spec":{"cancel":true}}`); err != nil {
					return err
				}
				_, _ = fmt.Fprintf(o.Streams.Out, "run.ergon.dev/%s cancelled\n", name)
			}
			return nil
		},
	}
}

func newSuspendCommand(o *Options, suspend bool) *cobra.Command {
	verb := map[bool]string{true: "suspend", false: "resume"}[suspend]
	return &cobra.Command{
		Use:               verb + " TRIGGER...",
		Short:             map[bool]string{true: "Suspend Triggers: they start no Runs", false: "Resume suspended Triggers"}[suspend],
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: completeNames(o, "triggers"),
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, name := range args {
				if err := o.patch(cmd.Context(), &ergonv1alpha1.Trigger{}, name,
					fmt.Sprintf(`{"spec":{"suspend":%t}}`, suspend)); err != nil {
					return err
				}
				_, _ = fmt.Fprintf(o.Streams.Out, "trigger.ergon.dev/%s %s\n", name, map[bool]string{true: "suspended", false: "resumed"}[suspend])
			}
			return nil
		},
	}
}

func (o *Options) patch(ctx context.Context, obj client.Object, name, patch string) error {
	c, ns, err := o.clientIn()
	if err != nil {
		return err
	}
	obj.SetNamespace(ns)
	obj.SetName(name)
	return c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, []byte(patch)))
}

type startOptions struct {
	follow  bool
	timeout time.Duration
	tail    int64
}

func (so *startOptions) flags(cmd *cobra.Command) {
	cmd.Flags().BoolVarP(&so.follow, "follow", "f", false, "wait for the new Run to finish, as run --follow does")
	cmd.Flags().DurationVar(&so.timeout, "timeout", 0, "with --follow, stop waiting after this long and exit 2")
	cmd.Flags().Int64Var(&so.tail, "tail", 20, "with --follow, lines of the failed step's log to print")
}

type rerunOptions struct {
	from   string
	params []string
	latest bool
	name   string
	startOptions
}

func newRerunCommand(o *Options) *cobra.Command {
	ro := &rerunOptions{}
	cmd := &cobra.Command{
		Use:   "rerun RUN",
		Short: "Run a Run's snapshot again, all of it or from one step, with edited params",
		Long: "Start a new Run of the snapshot RUN ran (not of today's Scene), live or archived. Without\n" +
			"--from every step runs again (a replay). With --from STEP, the steps upstream of STEP that\n" +
			"succeeded are not run again: they take RUN's outputs, verified by digest; STEP and every step\n" +
			"downstream of it run with the new Run's params: RUN's, with --set applied. --latest runs\n" +
			"today's Scene with RUN's params instead.",
		Example: "  kubectl ergon rerun report-7x2k --from summarize --set tone=formal --follow\n" +
			"  kubectl ergon rerun report-7x2k",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeNames(o, "runs"),
		RunE: func(cmd *cobra.Command, args []string) error {
			old, err := o.liveOrArchivedRun(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			params, err := ParseParams(nil, ro.params)
			if err != nil {
				return err
			}
			run, err := Rerun(old, ro.name, params, ro.from, ro.latest)
			if err != nil {
				return err
			}
			return o.start(cmd.Context(), run, &ro.startOptions)
		},
	}
	f := cmd.Flags()
	f.StringVar(&ro.from, "from", "", "the step to run again, with every step downstream of it; the others are reused")
	f.StringArrayVar(&ro.params, "set", nil, "change a param as key=value; repeat for more")
	f.BoolVar(&ro.latest, "latest", false, "run today's Scene with RUN's params instead of RUN's snapshot")
	f.StringVar(&ro.name, "name", "", "name of the new Run; generated from the Scene's name when empty")
	ro.flags(cmd)
	return cmd
}

// Rerun is a new Run of old's snapshot with its params changed by set: from the step from,
// reusing the steps upstream of it, or all of it (a replay) when from is empty; with latest,
// of today's Scene instead. name is generated from the Scene's when empty.
func Rerun(old *ergonv1alpha1.Run, name string, set map[string]string, from string, latest bool) (*ergonv1alpha1.Run, error) {
	merged := maps.Clone(old.Spec.Params)
	if merged == nil {
		merged = map[string]string{}
	}
	maps.Copy(merged, set)
	if len(merged) == 0 {
		merged = nil
	}
	run := newRun(old.Namespace, name, old.Spec.SceneRef.Name, merged)
	run.Spec.Timeout = old.Spec.Timeout
	run.Spec.TTLSecondsAfterFinished = old.Spec.TTLSecondsAfterFinished
	switch {
	case latest && from != "":
		return nil, errors.New("--latest runs today's Scene from its start; it cannot be combined with --from")
	case latest:
	case from != "":
		run.Spec.RetryOf = &ergonv1alpha1.RetryReference{Name: old.Name, From: from}
	default:
		run.Spec.RetryOf = &ergonv1alpha1.RetryReference{Name: old.Name, Replay: true}
	}
	return run, nil
}

func newRetryCommand(o *Options) *cobra.Command {
	so := &startOptions{}
	cmd := &cobra.Command{
		Use:   "retry RUN",
		Short: "Retry a failed or cancelled Run: run only the steps that did not succeed",
		Long: "Start a new Run of the snapshot RUN ran, live or archived, with its params: the steps that\n" +
			"succeeded in RUN (and whose dependencies did) take its outputs, verified by digest; the others run.",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeNames(o, "runs"),
		RunE: func(cmd *cobra.Command, args []string) error {
			old, err := o.liveOrArchivedRun(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			run := newRun(old.Namespace, "", old.Spec.SceneRef.Name, maps.Clone(old.Spec.Params))
			run.Spec.Timeout = old.Spec.Timeout
			run.Spec.TTLSecondsAfterFinished = old.Spec.TTLSecondsAfterFinished
			run.Spec.RetryOf = &ergonv1alpha1.RetryReference{Name: old.Name}
			return o.start(cmd.Context(), run, so)
		},
	}
	so.flags(cmd)
	return cmd
}

func newTriggerCommand(o *Options) *cobra.Command {
	cmd := &cobra.Command{Use: wordTrigger, Short: "Work with Triggers"}
	so := &startOptions{}
	run := &cobra.Command{
		Use:   "run TRIGGER",
		Short: "Start a Trigger's Scene now, with the Trigger's params",
		Long: "Start a Run of the Trigger's Scene now, with the Trigger's params, labelled as the Trigger's\n" +
			"own Runs are: it counts in the Trigger's history and concurrency like a scheduled one.",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeNames(o, "triggers"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ns, err := o.clientIn()
			if err != nil {
				return err
			}
			t := &ergonv1alpha1.Trigger{}
			if err := c.Get(cmd.Context(), client.ObjectKey{Namespace: ns, Name: args[0]}, t); err != nil {
				return err
			}
			r := newRun(ns, "", t.Spec.SceneRef.Name, maps.Clone(t.Spec.Params))
			r.GenerateName = t.Name[:min(len(t.Name), 52)] + "-"
			r.Labels = map[string]string{ergonv1alpha1.LabelTrigger: naming.LabelValue(t.Name)}
			return o.start(cmd.Context(), r, so)
		},
	}
	so.flags(run)
	cmd.AddCommand(run)
	return cmd
}

func (o *Options) start(ctx context.Context, run *ergonv1alpha1.Run, so *startOptions) error {
	c, err := o.Client()
	if err != nil {
		return err
	}
	if err := c.Create(ctx, run); err != nil {
		return err
	}
	_, _ = fmt.Fprintf(o.Streams.Out, "run.ergon.dev/%s created\n", run.Name)
	if !so.follow {
		return nil
	}
	return o.follow(ctx, run, so.timeout, so.tail)
}
