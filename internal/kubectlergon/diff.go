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
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
)

func newDiffCommand(o *Options) *cobra.Command {
	return &cobra.Command{
		Use:   "diff RUN1 RUN2",
		Short: "Compare two Runs, live or archived: params, steps, outputs, durations, tokens and cost, gate decisions",
		Long: "Compare two Runs side by side: the params that differ, then every step's phase, duration,\n" +
			"tokens and cost, and gate decision, and whether its output is the same (by SHA-256). Outputs\n" +
			"that differ are shown as a diff of their JSON fields, or of their lines.",
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: completeNames(o, "runs"),
		RunE: func(cmd *cobra.Command, args []string) error {
			a, err := o.liveOrArchivedRun(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			b, err := o.liveOrArchivedRun(cmd.Context(), args[1])
			if err != nil {
				return err
			}
			return DiffRuns(o.Streams.Out, a, b)
		},
	}
}

// DiffRuns writes the differences of two Runs.
func DiffRuns(out io.Writer, a, b *ergonv1alpha1.Run) error {
	w := tabwriter.NewWriter(out, 0, 8, 2, ' ', 0)
	row := func(cells ...string) { _, _ = fmt.Fprintln(w, strings.Join(cells, "\t")) }
	row("", a.Name, b.Name)
	row(wordScene, a.Spec.SceneRef.Name, b.Spec.SceneRef.Name)
	row("phase", string(a.Status.Phase), string(b.Status.Phase))
	row("duration", runDuration(a), runDuration(b))
	row("tokens", tokens(totalUsage(a)), tokens(totalUsage(b)))
	keys := slices.Sorted(maps.Keys(a.Spec.Params))
	for k := range b.Spec.Params {
		if _, ok := a.Spec.Params[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		va, oka := a.Spec.Params[k]
		vb, okb := b.Spec.Params[k]
		if va != vb || oka != okb {
			row("param "+k, paramOrNone(va, oka), paramOrNone(vb, okb))
		}
	}
	row("")
	row("STEP", a.Name, b.Name, "OUTPUT")
	steps := stepsOf(a)
	for _, s := range stepsOf(b) {
		if !slices.Contains(steps, s) {
			steps = append(steps, s)
		}
	}
	var changed []string
	for _, name := range steps {
		sa, sb := stepOf(a, name), stepOf(b, name)
		same := "same"
		switch {
		case sa == nil || sb == nil:
			same = none
		case sa.Output == nil && sb.Output == nil:
			same = none
		case sa.Output == nil || sb.Output == nil || sa.Output.SHA256 != sb.Output.SHA256 || sa.Output.Preview != sb.Output.Preview:
			same = "differs"
			changed = append(changed, name)
		}
		row(name, stepCell(sa), stepCell(sb), same)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	for _, name := range changed {
		sa, sb := stepOf(a, name), stepOf(b, name)
		_, _ = fmt.Fprintf(out, "\n--- %s/%s\n+++ %s/%s\n", a.Name, name, b.Name, name)
		va, vb := previewOf(sa.Output), previewOf(sb.Output)
		for _, line := range DiffValues(va, vb) {
			_, _ = fmt.Fprintln(out, line)
		}
		if (sa.Output != nil && sa.Output.Ref != nil) || (sb.Output != nil && sb.Output.Ref != nil) {
			_, _ = fmt.Fprintln(out, "(previews only: read the whole outputs with kubectl ergon output)")
		}
	}
	return nil
}

func paramOrNone(v string, ok bool) string {
	if !ok {
		return none
	}
	return fmt.Sprintf("%q", v)
}

func stepsOf(run *ergonv1alpha1.Run) []string {
	var out []string
	for _, s := range run.Status.Steps {
		out = append(out, s.Name)
	}
	return out
}

func stepOf(run *ergonv1alpha1.Run, name string) *ergonv1alpha1.StepStatus {
	for i := range run.Status.Steps {
		if run.Status.Steps[i].Name == name {
			return &run.Status.Steps[i]
		}
	}
	return nil
}

// stepCell is a step's phase, duration, usage and decision, in one cell.
func stepCell(s *ergonv1alpha1.StepStatus) string {
	if s == nil {
		return none
	}
	parts := []string{string(s.Phase)}
	if s.Reason == ergonv1alpha1.ReasonReused {
		parts = append(parts, "reused")
	}
	if s.StartedAt != nil && s.FinishedAt != nil {
		parts = append(parts, s.FinishedAt.Sub(s.StartedAt.Time).Round(time.Second).String())
	}
	if s.Usage != nil {
		parts = append(parts, tokens(s.Usage))
	}
	if s.Decision != "" {
		parts = append(parts, "decision "+s.Decision)
	}
	return strings.Join(parts, " ")
}

func runDuration(run *ergonv1alpha1.Run) string {
	if run.Status.StartedAt == nil || run.Status.FinishedAt == nil {
		return none
	}
	return run.Status.FinishedAt.Sub(run.Status.StartedAt.Time).Round(time.Second).String()
}

func totalUsage(run *ergonv1alpha1.Run) *ergonv1alpha1.AgentUsage {
	var u *ergonv1alpha1.AgentUsage
	for _, s := range run.Status.Steps {
		if s.Usage == nil {
			continue
		}
		if u == nil {
			u = &ergonv1alpha1.AgentUsage{}
		}
		u.TotalTokens += s.Usage.TotalTokens
	}
	return u
}

func tokens(u *ergonv1alpha1.AgentUsage) string {
	if u == nil {
		return none
	}
	t := fmt.Sprintf("%d tokens", u.TotalTokens)
	if u.Cost != "" {
		t += " $" + u.Cost
	}
	return t
}

func previewOf(v *ergonv1alpha1.OutputValue) string {
	if v == nil {
		return ""
	}
	return v.Preview
}

// DiffValues compares two outputs: field by field when both are JSON objects or arrays
// ("~ path: old -> new", "- path: old", "+ path: new"), else line by line ("-", "+", and "  "
// for lines both share).
func DiffValues(a, b string) []string {
	var ja, jb any
	if json.Unmarshal([]byte(a), &ja) == nil && json.Unmarshal([]byte(b), &jb) == nil && isContainer(ja) && isContainer(jb) {
		fa, fb := map[string]string{}, map[string]string{}
		flatten("", ja, fa)
		flatten("", jb, fb)
		paths := slices.Sorted(maps.Keys(fa))
		for p := range fb {
			if _, ok := fa[p]; !ok {
				paths = append(paths, p)
			}
		}
		slices.Sort(paths)
		var out []string
		for _, p := range paths {
			va, oka := fa[p]
			vb, okb := fb[p]
			switch {
			case !okb:
				out = append(out, fmt.Sprintf("- %s: %s", p, va))
			case !oka:
				out = append(out, fmt.Sprintf("+ %s: %s", p, vb))
			case va != vb:
				out = append(out, fmt.Sprintf("~ %s: %s -> %s", p, va, vb))
			}
		}
		return out
	}
	return diffLines(strings.Split(a, "\n"), strings.Split(b, "\n"))
}

func isContainer(v any) bool {
	k := reflect.ValueOf(v).Kind()
	return k == reflect.Map || k == reflect.Slice
}

// flatten writes every leaf of a JSON value by its path: .key and [index].
func flatten(path string, v any, into map[string]string) {
	switch v := v.(type) {
	case map[string]any:
		if len(v) == 0 {
			into[path] = "{}"
		}
		for k, e := range v {
			flatten(path+"."+k, e, into)
		}
	case []any:
		if len(v) == 0 {
			into[path] = "[]"
		}
		for i, e := range v {
			flatten(fmt.Sprintf("%s[%d]", path, i), e, into)
		}
	default:
		b, _ := json.Marshal(v)
		into[path] = string(b)
	}
}

// diffLines is a line diff by longest common subsequence; outputs are previews, a few KiB.
func diffLines(a, b []string) []string {
	n, m := len(a), len(b)
	lcs := make([][]int, n+1)
	for i := range lcs {
		lcs[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out []string
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && a[i] == b[j]:
			out = append(out, "  "+a[i])
			i, j = i+1, j+1
		case i < n && (j == m || lcs[i+1][j] >= lcs[i][j+1]):
			out = append(out, "- "+a[i])
			i++
		default:
			out = append(out, "+ "+b[j])
			j++
		}
	}
	return out
}
