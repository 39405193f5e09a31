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
	"fmt"
	"io"
	"net/url"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/archive"
	"github.com/ergon-dev/ergon/internal/archiveapi"
	"github.com/ergon-dev/ergon/internal/naming"
	"github.com/ergon-dev/ergon/internal/outputs"
)

type historyOptions struct {
	all                                        bool
	scene, phase, startedBy, trigger, selector string
	since, until, text, output, continueToken  string
	limit                                      int
}

func newHistoryCommand(o *Options) *cobra.Command {
	h := &historyOptions{}
	cmd := &cobra.Command{
		Use:   "history",
		Short: "List the Runs that ended, from the archive, with filters",
		Long: "List archived Runs, newest first: every Run that ended is archived, and stays listed after\n" +
			"Kubernetes deletes it. You see the Runs of the namespaces where you may get Runs. Filters\n" +
			"combine; --text finds words in names, params, outputs and error messages.",
		Example: "  kubectl ergon history --scene report --phase Failed --since 168h\n" +
			"  kubectl ergon history -A --started-by alice@example.com -o yaml",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.history(cmd.Context(), h)
		},
	}
	f := cmd.Flags()
	f.BoolVarP(&h.all, "all-namespaces", "A", false, "list the Runs of every namespace you may read")
	f.StringVar(&h.scene, wordScene, "", "only Runs of this Scene")
	f.StringVar(&h.phase, "phase", "", "only Runs that ended so: Succeeded, Failed or Cancelled")
	f.StringVar(&h.startedBy, "started-by", "", "only Runs this user started")
	f.StringVar(&h.trigger, wordTrigger, "", "only Runs this Trigger started")
	f.StringVarP(&h.selector, "selector", "l", "", "only Runs with these labels (key=value,...)")
	f.StringVar(&h.since, "since", "", "only Runs that finished since: a duration back from now (24h) or an RFC 3339 time")
	f.StringVar(&h.until, "until", "", "only Runs that finished before: a duration back from now or an RFC 3339 time")
	f.StringVar(&h.text, "text", "", "only Runs whose name, params, outputs or messages contain this text")
	f.IntVar(&h.limit, "limit", 50, "Runs per page (at most 500)")
	f.StringVar(&h.continueToken, "continue", "", "the token a previous page printed, for the next page")
	f.StringVarP(&h.output, "output", "o", "", "output format: json or yaml; a table when empty")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{formatJSON, formatYAML}, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("phase", cobra.FixedCompletions([]string{"Succeeded", "Failed", "Cancelled"},
		cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// archiveREST is a client of the archive's API, through the API server, as the user.
func (o *Options) archiveREST() (rest.Interface, error) {
	cfg, err := o.restConfig()
	if err != nil {
		return nil, err
	}
	// The core client decodes the Status of a refusal into its message.
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return cs.CoreV1().RESTClient(), nil
}

// archiveError says what a failed read of the archive means to the user: a 404 that does
// not come from the archive itself means its API is not installed.
func archiveError(err error) error {
	if archiveapi.Unreachable(err) {
		return fmt.Errorf("the Run archive is not reachable (%v): is Ergon installed with archive.store sqlite or postgres?", err)
	}
	return err
}

func (o *Options) history(ctx context.Context, h *historyOptions) error {
	if h.output != "" && h.output != formatJSON && h.output != formatYAML {
		return fmt.Errorf("-o %s: the formats are json and yaml", h.output)
	}
	rc, err := o.archiveREST()
	if err != nil {
		return err
	}
	ns := ""
	if !h.all {
		if ns, err = o.Namespace(); err != nil {
			return err
		}
	}
	params := url.Values{}
	for k, v := range map[string]string{wordScene: h.scene, "phase": h.phase, "startedBy": h.startedBy, wordTrigger: h.trigger,
		"labelSelector": h.selector, "since": h.since, "until": h.until, "text": h.text, "continue": h.continueToken} {
		params.Set(k, v)
	}
	if h.limit > 0 {
		params.Set("limit", strconv.Itoa(h.limit))
	}
	list, err := archiveapi.List(ctx, rc, ns, params)
	if err != nil {
		return archiveError(err)
	}
	switch h.output {
	case formatJSON:
		return printJSON(o.Streams.Out, list)
	case formatYAML:
		return printYAML(o.Streams.Out, list)
	}
	printHistory(o.Streams.Out, list, h.all, o.now())
	if list.Continue != "" {
		_, _ = fmt.Fprintf(o.Streams.ErrOut, "more Runs: add --continue %s\n", list.Continue)
	}
	return nil
}

// printHistory writes a page of archived Runs as a table.
func printHistory(out io.Writer, list *archiveapi.ArchivedRunList, all bool, now time.Time) {
	if len(list.Items) == 0 {
		_, _ = fmt.Fprintln(out, "No archived Runs found.")
		return
	}
	w := tabwriter.NewWriter(out, 0, 8, 3, ' ', 0)
	if all {
		_, _ = fmt.Fprint(w, "NAMESPACE\t")
	}
	_, _ = fmt.Fprintln(w, "NAME\tSCENE\tPHASE\tSTARTED BY\tTRIGGER\tDURATION\tFINISHED")
	for _, it := range list.Items {
		s := it.Summary
		if all {
			_, _ = fmt.Fprintf(w, "%s\t", s.Namespace)
		}
		duration := none
		if !s.FinishedAt.IsZero() && !s.CreatedAt.IsZero() {
			duration = s.FinishedAt.Sub(s.CreatedAt).Round(time.Second).String()
		}
		finished := none
		if !s.FinishedAt.IsZero() {
			finished = humanAge(now.Sub(s.FinishedAt)) + " ago"
		}
		_, _ = fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.Name, s.Scene, s.Phase, orNone(s.StartedBy), orNone(s.Trigger),
			duration, finished)
	}
	_ = w.Flush()
}

func humanAge(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

func printJSON(out io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "    ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(out, string(b))
	return err
}

func printYAML(out io.Writer, v any) error {
	b, err := yaml.Marshal(v)
	if err != nil {
		return err
	}
	_, err = out.Write(b)
	return err
}

// archivedRun reads the newest archived Run of a name in the current namespace.
func (o *Options) archivedRun(ctx context.Context, name string) (*archiveapi.ArchivedRun, error) {
	rc, err := o.archiveREST()
	if err != nil {
		return nil, err
	}
	ns, err := o.Namespace()
	if err != nil {
		return nil, err
	}
	return archiveapi.Get(ctx, rc, ns, name, "")
}

// liveOrArchivedRun reads a Run from the cluster, else from the archive.
func (o *Options) liveOrArchivedRun(ctx context.Context, name string) (*ergonv1alpha1.Run, error) {
	side, err := o.compareSide(ctx, name)
	if err != nil {
		return nil, err
	}
	return side.Run, nil
}

// compareSide reads a Run from the cluster with its Gates, else from the archive with its
// record's Gates and values.
func (o *Options) compareSide(ctx context.Context, name string) (CompareSide, error) {
	run, err := o.getRun(ctx, name)
	if err == nil {
		side := CompareSide{Run: run, Value: func(_ string, v *ergonv1alpha1.OutputValue) ([]byte, error) {
			return o.readValue(ctx, run.Namespace, v, "")
		}}
		c, cerr := o.Client()
		if cerr != nil {
			return side, cerr
		}
		gates := &ergonv1alpha1.GateList{}
		if c.List(ctx, gates, client.InNamespace(run.Namespace),
			client.MatchingLabels{ergonv1alpha1.LabelRun: naming.LabelValue(run.Name)}) == nil {
			for _, g := range gates.Items {
				if metav1.IsControlledBy(&g, run) {
					side.Gates = append(side.Gates, g)
				}
			}
		}
		return side, nil
	}
	if !apierrors.IsNotFound(err) {
		return CompareSide{}, err
	}
	item, aerr := o.archivedRun(ctx, name)
	if aerr != nil {
		if apierrors.IsNotFound(aerr) {
			return CompareSide{}, fmt.Errorf("run %s is neither in the cluster nor in the archive", name)
		}
		return CompareSide{}, fmt.Errorf("run %s is not in the cluster, and reading the archive failed: %w", name, archiveError(aerr))
	}
	return ArchivedSide(item.Record), nil
}

// ArchivedSide is an archived Run as one side of a comparison: its record's Gates and values.
func ArchivedSide(rec *archive.Record) CompareSide {
	return CompareSide{Run: rec.Original(), Gates: rec.Gates, Archived: true,
		Value: func(step string, v *ergonv1alpha1.OutputValue) ([]byte, error) {
			return outputs.Archived(rec, step, "", v)
		}}
}
