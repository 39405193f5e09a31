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
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

// kind is how get shows one kind of Ergon object.
type kind struct {
	plural  string
	aliases []string
	newList func() client.ObjectList
	columns []string
	row     func(obj client.Object, now time.Time) []string
}

func age(obj client.Object, now time.Time) string {
	return duration.HumanDuration(now.Sub(obj.GetCreationTimestamp().Time))
}

func timeOrNone(t *metav1.Time, now time.Time) string {
	if t == nil {
		return none
	}
	if t.After(now) {
		return "in " + duration.HumanDuration(t.Sub(now))
	}
	return duration.HumanDuration(now.Sub(t.Time)) + " ago"
}

func orNone(s string) string {
	if s == "" {
		return none
	}
	return s
}

// Kinds are the kinds get lists.
var Kinds = []kind{
	{plural: "runs", aliases: []string{"run", "rn"}, newList: func() client.ObjectList { return &ergonv1alpha1.RunList{} },
		columns: []string{columnName, "SCENE", columnPhase, "STEPS", "STARTED", columnAge},
		row: func(obj client.Object, now time.Time) []string {
			r := obj.(*ergonv1alpha1.Run)
			return []string{r.Name, r.Spec.SceneRef.Name, string(orPending(r.Status.Phase)), orNone(r.Status.Progress),
				timeOrNone(r.Status.StartedAt, now), age(r, now)}
		}},
	{plural: "scenes", aliases: []string{wordScene, "sc"}, newList: func() client.ObjectList { return &ergonv1alpha1.SceneList{} },
		columns: []string{columnName, "STEPS", "PARAMS", "WORKSPACE", columnAge},
		row: func(obj client.Object, now time.Time) []string {
			s := obj.(*ergonv1alpha1.Scene)
			var params []string
			for _, p := range s.Spec.Params {
				params = append(params, p.Name)
			}
			ws := none
			if s.Spec.Workspace != nil {
				ws = s.Spec.Workspace.Name
			}
			return []string{s.Name, fmt.Sprint(len(s.Spec.Steps)), orNone(strings.Join(params, ",")), ws, age(s, now)}
		}},
	{plural: pluralGates, aliases: []string{"gate", "gt"}, newList: func() client.ObjectList { return &ergonv1alpha1.GateList{} },
		columns: []string{columnName, "RUN", "STEP", columnPhase, "DECIDED-BY", columnAge},
		row: func(obj client.Object, now time.Time) []string {
			g := obj.(*ergonv1alpha1.Gate)
			phase := string(g.Status.Phase)
			if phase == "" {
				phase = string(ergonv1alpha1.GatePending)
			}
			return []string{g.Name, g.Spec.RunRef.Name, g.Spec.Step, phase, orNone(g.Status.DecidedBy), age(g, now)}
		}},
	{plural: "triggers", aliases: []string{wordTrigger, "tg"}, newList: func() client.ObjectList { return &ergonv1alpha1.TriggerList{} },
		columns: []string{columnName, "SCENE", "SOURCE", "SUSPENDED", "ACTIVE", "LAST-RUN", "NEXT", columnAge},
		row: func(obj client.Object, now time.Time) []string {
			t := obj.(*ergonv1alpha1.Trigger)
			source := none
			switch {
			case t.Spec.Schedule != nil:
				source = "schedule " + t.Spec.Schedule.Cron
			case t.Spec.Webhook != nil:
				source = "webhook"
			case t.Spec.RunCompleted != nil:
				source = "runCompleted " + t.Spec.RunCompleted.SceneRef.Name
			}
			suspended := t.Spec.Suspend != nil && *t.Spec.Suspend
			return []string{t.Name, t.Spec.SceneRef.Name, source, fmt.Sprint(suspended), fmt.Sprint(t.Status.ActiveCount),
				orNone(t.Status.LastRun), timeOrNone(t.Status.NextScheduleTime, now), age(t, now)}
		}},
	{plural: "workspaces", aliases: []string{"workspace", "ws"}, newList: func() client.ObjectList { return &ergonv1alpha1.WorkspaceList{} },
		columns: []string{columnName, "USER", columnPhase, "POD", columnAge},
		row: func(obj client.Object, now time.Time) []string {
			w := obj.(*ergonv1alpha1.Workspace)
			return []string{w.Name, w.Spec.User, orNone(string(w.Status.Phase)), orNone(w.Status.PodName), age(w, now)}
		}},
}

// KindOf finds a kind by its plural, singular or short name.
func KindOf(name string) (*kind, error) {
	var names []string
	for i := range Kinds {
		k := &Kinds[i]
		if k.plural == name || slices.Contains(k.aliases, name) {
			return k, nil
		}
		names = append(names, k.plural)
	}
	return nil, fmt.Errorf("no kind %q; get lists %s", name, strings.Join(names, ", "))
}

type getOptions struct {
	output   string
	watch    bool
	all      bool
	selector string
}

func newGetCommand(o *Options) *cobra.Command {
	g := &getOptions{}
	cmd := &cobra.Command{
		Use:   "get runs|scenes|gates|triggers|workspaces [NAME...]",
		Short: "List Ergon objects with useful columns",
		Args:  cobra.MinimumNArgs(1),
		ValidArgsFunction: func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
			if len(args) == 0 {
				var plurals []string
				for _, k := range Kinds {
					plurals = append(plurals, k.plural)
				}
				return plurals, cobra.ShellCompDirectiveNoFileComp
			}
			return completeNames(o, args[0])(cmd, args[1:], toComplete)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			k, err := KindOf(args[0])
			if err != nil {
				return err
			}
			return o.get(cmd.Context(), k, args[1:], g)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&g.output, "output", "o", "", "output format: json, yaml or name; a table when empty")
	f.BoolVarP(&g.watch, "watch", "w", false, "after listing, watch for changes")
	f.BoolVarP(&g.all, "all-namespaces", "A", false, "list the objects of every namespace")
	f.StringVarP(&g.selector, "selector", "l", "", "label selector, e.g. ergon.dev/scene=report")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{formatJSON, formatYAML, "name"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func printerFor(output string) (printers.ResourcePrinter, error) {
	switch output {
	case formatJSON:
		return &printers.JSONPrinter{}, nil
	case "yaml":
		return &printers.YAMLPrinter{}, nil
	case "name":
		return &printers.NamePrinter{}, nil
	case "":
		return nil, nil
	}
	return nil, fmt.Errorf("-o %s: the formats are json, yaml and name", output)
}

func (o *Options) get(ctx context.Context, k *kind, names []string, g *getOptions) error {
	printer, err := printerFor(g.output)
	if err != nil {
		return err
	}
	c, err := o.Client()
	if err != nil {
		return err
	}
	var opts []client.ListOption
	if !g.all {
		ns, err := o.Namespace()
		if err != nil {
			return err
		}
		opts = append(opts, client.InNamespace(ns))
	}
	if g.selector != "" {
		sel, err := labels.Parse(g.selector)
		if err != nil {
			return err
		}
		opts = append(opts, client.MatchingLabelsSelector{Selector: sel})
	}
	list := k.newList()
	if err := c.List(ctx, list, opts...); err != nil {
		return err
	}
	objs, err := meta.ExtractList(list)
	if err != nil {
		return err
	}
	objs, err = pick(objs, names, k.plural)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(o.Streams.Out, 0, 8, 3, ' ', 0)
	if printer == nil {
		cols := k.columns
		if g.all {
			cols = append([]string{"NAMESPACE"}, cols...)
		}
		_, _ = fmt.Fprintln(tw, strings.Join(cols, "\t"))
		for _, obj := range objs {
			o.printRow(tw, k, obj.(client.Object), g.all)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	} else if err := printObjects(printer, objs, len(names) == 1, o.Streams.Out); err != nil {
		return err
	}
	if !g.watch {
		return nil
	}
	w, err := c.Watch(ctx, k.newList(), append(opts, &client.ListOptions{Raw: &metav1.ListOptions{
		ResourceVersion: list.GetResourceVersion()}})...)
	if err != nil {
		return err
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		obj, ok := ev.Object.(client.Object)
		if !ok || ev.Type == watch.Bookmark || ev.Type == watch.Error {
			continue
		}
		if len(names) > 0 && !slices.Contains(names, obj.GetName()) {
			continue
		}
		if printer != nil {
			if err := printObjects(printer, []runtime.Object{obj}, true, o.Streams.Out); err != nil {
				return err
			}
			continue
		}
		o.printRow(tw, k, obj, g.all)
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}

func (o *Options) printRow(w io.Writer, k *kind, obj client.Object, all bool) {
	row := k.row(obj, o.now())
	if all {
		row = append([]string{obj.GetNamespace()}, row...)
	}
	_, _ = fmt.Fprintln(w, strings.Join(row, "\t"))
}

// pick keeps the named objects, in the order named; all of them when no name is given.
func pick(objs []runtime.Object, names []string, plural string) ([]runtime.Object, error) {
	if len(names) == 0 {
		return objs, nil
	}
	byName := map[string]runtime.Object{}
	for _, obj := range objs {
		byName[obj.(client.Object).GetName()] = obj
	}
	picked := make([]runtime.Object, 0, len(names))
	for _, n := range names {
		obj, ok := byName[n]
		if !ok {
			return nil, fmt.Errorf("%s.%s %q not found", plural, ergonv1alpha1.GroupVersion.Group, n)
		}
		picked = append(picked, obj)
	}
	return picked, nil
}

// printObjects prints objects with their kinds set, as a List unless single.
func printObjects(p printers.ResourcePrinter, objs []runtime.Object, single bool, w io.Writer) error {
	for _, obj := range objs {
		gvk, err := apiutil.GVKForObject(obj, Scheme)
		if err != nil {
			return err
		}
		obj.GetObjectKind().SetGroupVersionKind(gvk)
		// As kubectl does unless --show-managed-fields: they are noise to people.
		if m, ok := obj.(metav1.Object); ok {
			m.SetManagedFields(nil)
		}
	}
	if _, isName := p.(*printers.NamePrinter); isName || (single && len(objs) == 1) {
		for _, obj := range objs {
			if err := p.PrintObj(obj, w); err != nil {
				return err
			}
		}
		return nil
	}
	list := &corev1.List{TypeMeta: metav1.TypeMeta{Kind: "List", APIVersion: "v1"}}
	for _, obj := range objs {
		list.Items = append(list.Items, runtime.RawExtension{Object: obj})
	}
	return p.PrintObj(list, w)
}
