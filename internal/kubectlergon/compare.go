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
	"maps"
	"slices"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/planner"
)

// MaxDiffBytes bounds each whole value a comparison reads to diff, and MaxCompareBytes all
// of them together; beyond either, outputs are diffed by their previews (a Run of many steps
// with large outputs costs a comparison a bounded amount).
const (
	MaxDiffBytes    = 256 << 10
	MaxCompareBytes = 4 << 20
)

// CompareSide is one of the Runs a comparison reads: the Run, its Gates, and how to read a
// step's whole output (nil: only previews).
type CompareSide struct {
	Run      *ergonv1alpha1.Run
	Gates    []ergonv1alpha1.Gate
	Archived bool
	Value    func(step string, v *ergonv1alpha1.OutputValue) ([]byte, error)
}

// Comparison is two Runs side by side, as kubectl ergon diff prints it and the console's
// compare view shows it.
type Comparison struct {
	A RunColumn `json:"a"`
	B RunColumn `json:"b"`
	// Params are the params either Run has, by name; Same when equal.
	Params []ParamRow `json:"params"`
	// Steps are the steps either Run has, in A's order then B's new ones.
	Steps []StepRow `json:"steps"`
}

// RunColumn is one Run's head: who, what and how long.
type RunColumn struct {
	Namespace string                    `json:"namespace"`
	Name      string                    `json:"name"`
	UID       string                    `json:"uid"`
	Scene     string                    `json:"scene"`
	Phase     string                    `json:"phase"`
	Archived  bool                      `json:"archived,omitempty"`
	StartedBy string                    `json:"startedBy,omitempty"`
	Seconds   *float64                  `json:"seconds,omitempty"`
	Usage     *ergonv1alpha1.AgentUsage `json:"usage,omitempty"`
}

// ParamRow is a param of either Run.
type ParamRow struct {
	Name string  `json:"name"`
	A    *string `json:"a,omitempty"`
	B    *string `json:"b,omitempty"`
	Same bool    `json:"same"`
}

// StepRow is a step of either Run.
type StepRow struct {
	Name string    `json:"name"`
	A    *StepCell `json:"a,omitempty"`
	B    *StepCell `json:"b,omitempty"`
	// Output is "same", "differs" or "none" (neither has one, or one lacks the step).
	Output string `json:"output"`
	// Diff is DiffValues of the two outputs when they differ.
	Diff []string `json:"diff,omitempty"`
	// PreviewsOnly says the diff is of previews: a whole value was too large or unreadable.
	PreviewsOnly bool `json:"previewsOnly,omitempty"`
}

// StepCell is one Run's side of a step.
type StepCell struct {
	Phase    string                    `json:"phase"`
	Reason   string                    `json:"reason,omitempty"`
	Attempts int32                     `json:"attempts,omitempty"`
	Seconds  *float64                  `json:"seconds,omitempty"`
	Usage    *ergonv1alpha1.AgentUsage `json:"usage,omitempty"`
	Decision string                    `json:"decision,omitempty"`
	// Answers are the step's Gates as decided: option, who, comment and values.
	Answers []GateAnswer `json:"answers,omitempty"`
	Preview string       `json:"preview,omitempty"`
}

// GateAnswer is a decided Gate of a step.
type GateAnswer struct {
	Gate      string `json:"gate"`
	Option    string `json:"option,omitempty"`
	DecidedBy string `json:"decidedBy,omitempty"`
	Comment   string `json:"comment,omitempty"`
	Values    string `json:"values,omitempty"`
}

const (
	outputSame    = "same"
	outputDiffers = "differs"
)

// Compare sets two Runs side by side.
func Compare(a, b CompareSide) *Comparison {
	c := &Comparison{A: column(a), B: column(b)}
	keys := slices.Sorted(maps.Keys(a.Run.Spec.Params))
	for k := range b.Run.Spec.Params {
		if _, ok := a.Run.Spec.Params[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		row := ParamRow{Name: k}
		if v, ok := a.Run.Spec.Params[k]; ok {
			row.A = &v
		}
		if v, ok := b.Run.Spec.Params[k]; ok {
			row.B = &v
		}
		row.Same = row.A != nil && row.B != nil && *row.A == *row.B
		c.Params = append(c.Params, row)
	}
	steps := stepsOf(a.Run)
	for _, s := range stepsOf(b.Run) {
		if !slices.Contains(steps, s) {
			steps = append(steps, s)
		}
	}
	budget := int64(MaxCompareBytes)
	for _, name := range steps {
		sa, sb := stepOf(a.Run, name), stepOf(b.Run, name)
		row := StepRow{Name: name, A: cell(sa, a.Gates), B: cell(sb, b.Gates), Output: none}
		switch {
		case sa == nil || sb == nil, sa.Output == nil && sb.Output == nil:
		case sa.Output == nil || sb.Output == nil || sa.Output.SHA256 != sb.Output.SHA256 || sa.Output.Preview != sb.Output.Preview:
			row.Output = outputDiffers
			va, fullA := wholeValue(a, name, sa.Output, &budget)
			vb, fullB := wholeValue(b, name, sb.Output, &budget)
			row.Diff, row.PreviewsOnly = DiffValues(va, vb), !fullA || !fullB
		default:
			row.Output = outputSame
		}
		c.Steps = append(c.Steps, row)
	}
	return c
}

func column(s CompareSide) RunColumn {
	r := s.Run
	col := RunColumn{Namespace: r.Namespace, Name: r.Name, UID: string(r.UID), Scene: r.Spec.SceneRef.Name,
		Phase: string(r.Status.Phase), Archived: s.Archived, StartedBy: r.Annotations[ergonv1alpha1.AnnotationCreatedBy],
		Usage: planner.RunUsage(r.Status.Steps, nil)}
	if r.Status.StartedAt != nil && r.Status.FinishedAt != nil {
		d := r.Status.FinishedAt.Sub(r.Status.StartedAt.Time).Seconds()
		col.Seconds = &d
	}
	return col
}

func cell(s *ergonv1alpha1.StepStatus, gates []ergonv1alpha1.Gate) *StepCell {
	if s == nil {
		return nil
	}
	c := &StepCell{Phase: string(s.Phase), Reason: s.Reason, Attempts: s.Attempts, Usage: s.Usage, Decision: s.Decision}
	if s.StartedAt != nil && s.FinishedAt != nil {
		d := s.FinishedAt.Sub(s.StartedAt.Time).Seconds()
		c.Seconds = &d
	}
	if s.Output != nil {
		c.Preview = s.Output.Preview
	}
	for i := range gates {
		g := &gates[i]
		if g.Spec.Step != s.Name || g.Status.DecidedBy == "" && g.Spec.Decision == nil {
			continue
		}
		ans := GateAnswer{Gate: g.Name, Option: g.Status.Option, DecidedBy: g.Status.DecidedBy}
		if d := g.Spec.Decision; d != nil {
			ans.Comment = d.Comment
			if ans.Option == "" {
				ans.Option = d.Option
			}
		}
		if v := g.Status.Values; v != nil {
			ans.Values = string(v.Raw)
		} else if d := g.Spec.Decision; d != nil && d.Values != nil {
			ans.Values = string(d.Values.Raw)
		}
		c.Answers = append(c.Answers, ans)
	}
	slices.SortStableFunc(c.Answers, func(x, y GateAnswer) int {
		return compareGateTimes(gates, x.Gate, y.Gate)
	})
	return c
}

// compareGateTimes orders a step's Gates as they were made (a conversation's turns).
func compareGateTimes(gates []ergonv1alpha1.Gate, x, y string) int {
	var tx, ty int64
	for i := range gates {
		switch gates[i].Name {
		case x:
			tx = gates[i].CreationTimestamp.UnixNano()
		case y:
			ty = gates[i].CreationTimestamp.UnixNano()
		}
	}
	switch {
	case tx < ty:
		return -1
	case tx > ty:
		return 1
	}
	return 0
}

// wholeValue is an output's whole value when it can be read, is at most MaxDiffBytes and
// fits what is left of the comparison's budget (which it spends), else its preview (full
// false).
func wholeValue(s CompareSide, step string, v *ergonv1alpha1.OutputValue, budget *int64) (value string, full bool) {
	if v == nil {
		return "", true
	}
	if v.Ref == nil {
		return v.Preview, true
	}
	if s.Value == nil || v.Size > MaxDiffBytes || v.Size > *budget {
		return v.Preview, false
	}
	*budget -= v.Size
	b, err := s.Value(step, v)
	if err != nil {
		return v.Preview, false
	}
	return string(b), true
}
