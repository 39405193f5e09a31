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
		Short: "Compare two Runs, live or archived: params, steps, outputs, durations, tokens and cost, gate answers",
		Long: "Compare two Runs side by side: the params that differ, then every step's phase, duration,\n" +
			"tokens and cost, and gate decision, and whether its output is the same (by SHA-256). Outputs\n" +
			"that differ are shown as a diff of their JSON fields, or of their lines; the Gates' answers\n" +
			"that differ are listed after.",
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: completeNames(o, "runs"),
		RunE: func(cmd *cobra.Command, args []string) error {
			a, err := o.compareSide(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			b, err := o.compareSide(cmd.Context(), args[1])
			if err != nil {
				return err
			}
			return PrintComparison(o.Streams.Out, Compare(a, b))
		},
	}
}

// PrintComparison writes a comparison as a table of what differs, then the diffs.
func PrintComparison(out io.Writer, c *Comparison) error {
	w := tabwriter.NewWriter(out, 0, 8, 2, ' ', 0)
	row := func(cells ...string) { _, _ = fmt.Fprintln(w, strings.Join(cells, "\t")) }
	name := func(col RunColumn) string {
		if col.Archived {
			return col.Name + " (archived)"
		}
		return col.Name
	}
	row("", name(c.A), name(c.B))
	row(wordScene, c.A.Scene, c.B.Scene)
	row("phase", c.A.Phase, c.B.Phase)
	row("duration", seconds(c.A.Seconds), seconds(c.B.Seconds))
	row("tokens", tokens(c.A.Usage), tokens(c.B.Usage))
	for _, p := range c.Params {
		if !p.Same {
			row("param "+p.Name, quoted(p.A), quoted(p.B))
		}
	}
	row("")
	row("STEP", c.A.Name, c.B.Name, "OUTPUT")
	for _, s := range c.Steps {
		row(s.Name, stepCell(s.A), stepCell(s.B), s.Output)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	for _, s := range c.Steps {
		if s.Output == outputDiffers {
			_, _ = fmt.Fprintf(out, "\n--- %s/%s\n+++ %s/%s\n", c.A.Name, s.Name, c.B.Name, s.Name)
			for _, line := range s.Diff {
				_, _ = fmt.Fprintln(out, line)
			}
			if s.PreviewsOnly {
				_, _ = fmt.Fprintln(out, "(previews only: read the whole outputs with kubectl ergon output)")
			}
		}
		answers := func(cell *StepCell) []string {
			if cell == nil {
				return nil
			}
			var out []string
			for _, a := range cell.Answers {
				line := a.Option
				if a.Values != "" {
					line += " " + a.Values
				}
				out = append(out, strings.TrimSpace(line+" by "+orNone(a.DecidedBy)))
			}
			return out
		}
		aa, ab := answers(s.A), answers(s.B)
		if !slices.Equal(aa, ab) {
			_, _ = fmt.Fprintf(out, "\nanswers to %s\n", s.Name)
			for _, l := range aa {
				_, _ = fmt.Fprintf(out, "- %s: %s\n", c.A.Name, l)
			}
			for _, l := range ab {
				_, _ = fmt.Fprintf(out, "+ %s: %s\n", c.B.Name, l)
			}
		}
	}
	return nil
}

func quoted(v *string) string {
	if v == nil {
		return none
	}
	return fmt.Sprintf("%q", *v)
}

func seconds(s *float64) string {
	if s == nil {
		return none
	}
	return (time.Duration(*s * float64(time.Second))).Round(time.Second).String()
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
func stepCell(s *StepCell) string {
	if s == nil {
		return none
	}
	parts := []string{s.Phase}
	if s.Reason == ergonv1alpha1.ReasonReused {
		parts = append(parts, "reused")
	}
	if s.Seconds != nil {
		parts = append(parts, seconds(s.Seconds))
	}
	if s.Usage != nil {
		parts = append(parts, tokens(s.Usage))
	}
	if s.Decision != "" {
		parts = append(parts, "decision "+s.Decision)
	}
	return strings.Join(parts, " ")
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

// maxLCSCells bounds the table of a line diff (4 bytes a cell): lines that differ beyond it
// are shown as removed, then added.
const maxLCSCells = 4 << 20

// diffLines is a line diff: the lines both start and end with, and between them a longest
// common subsequence.
func diffLines(a, b []string) []string {
	var out []string
	p := 0
	for p < len(a) && p < len(b) && a[p] == b[p] {
		out = append(out, "  "+a[p])
		p++
	}
	e := 0
	for e < len(a)-p && e < len(b)-p && a[len(a)-1-e] == b[len(b)-1-e] {
		e++
	}
	ma, mb := a[p:len(a)-e], b[p:len(b)-e]
	if len(ma)*len(mb) > maxLCSCells {
		for _, l := range ma {
			out = append(out, "- "+l)
		}
		for _, l := range mb {
			out = append(out, "+ "+l)
		}
	} else {
		out = append(out, lcsDiff(ma, mb)...)
	}
	for _, l := range a[len(a)-e:] {
		out = append(out, "  "+l)
	}
	return out
}

func lcsDiff(a, b []string) []string {
	n, m := len(a), len(b)
	lcs := make([][]int32, n+1)
	for i := range lcs {
		lcs[i] = make([]int32, m+1)
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
