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
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/dag"
	"github.com/ergon-dev/ergon/internal/outputs"
)

// maxTreeDepth bounds how deep child Runs are followed.
const maxTreeDepth = 10

// Tree is a Run with what its tree shows: the order of its steps, its Gates and its child
// Runs, each a Tree.
type Tree struct {
	Run *ergonv1alpha1.Run
	// Order is the steps in graph order; nil when the Run has no snapshot yet.
	Order    []string
	Gates    map[string]*ergonv1alpha1.Gate
	Children map[string]*Tree
}

func newTreeCommand(o *Options) *cobra.Command {
	return &cobra.Command{
		Use:   "tree RUN",
		Short: "Show a Run as a tree: steps, attempts, pods, Gates and child Runs",
		Long: "Show a Run as a tree: its steps in graph order, each attempt and its pod, the Gates and who\n" +
			"decided them, and child Runs recursively. Phases are coloured on a terminal only.",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeNames(o, "runs"),
		RunE: func(cmd *cobra.Command, args []string) error {
			run, err := o.getRun(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			c, _ := o.Client()
			t, err := GatherTree(cmd.Context(), c, run, 0)
			if err != nil {
				return err
			}
			RenderTree(o.Streams.Out, t, o.terminal(), o.now())
			return nil
		},
	}
}

// GatherTree reads what the tree of a Run shows.
func GatherTree(ctx context.Context, c client.Client, run *ergonv1alpha1.Run, depth int) (*Tree, error) {
	t := &Tree{Run: run, Gates: map[string]*ergonv1alpha1.Gate{}, Children: map[string]*Tree{}}
	spec, err := snapshot(ctx, c, run)
	if err != nil {
		return nil, err
	}
	if spec != nil {
		nodes := make([]dag.Node, len(spec.Steps))
		for i, s := range spec.Steps {
			nodes[i] = dag.Node{Name: s.Name, DependsOn: s.DependsOn}
		}
		if g, err := dag.Build(nodes); err == nil {
			t.Order = g.TopologicalOrder()
		}
	}
	for _, s := range run.Status.Steps {
		if s.Gate != "" {
			g := &ergonv1alpha1.Gate{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: run.Namespace, Name: s.Gate}, g); err == nil {
				t.Gates[s.Gate] = g
			} else if !apierrors.IsNotFound(err) {
				return nil, err
			}
		}
		if s.ChildRun != "" && depth < maxTreeDepth {
			child := &ergonv1alpha1.Run{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: run.Namespace, Name: s.ChildRun}, child); err == nil {
				ct, err := GatherTree(ctx, c, child, depth+1)
				if err != nil {
					return nil, err
				}
				t.Children[s.ChildRun] = ct
			} else if !apierrors.IsNotFound(err) {
				return nil, err
			}
		}
	}
	return t, nil
}

// snapshot is the Scene spec a Run executes: in its status, or in the ConfigMap it names.
func snapshot(ctx context.Context, c client.Client, run *ergonv1alpha1.Run) (*ergonv1alpha1.SceneSpec, error) {
	if run.Status.SceneSnapshot != nil {
		return run.Status.SceneSnapshot, nil
	}
	ref := run.Status.SceneSnapshotRef
	if ref == nil {
		return nil, nil
	}
	cm := &corev1.ConfigMap{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: run.Namespace, Name: ref.ConfigMap}, cm); err != nil {
		return nil, err
	}
	value, _ := outputs.ConfigMapValue(cm, ref.Key)
	raw := []byte(value)
	if sum := sha256.Sum256(raw); hex.EncodeToString(sum[:]) != run.Status.SceneSnapshotSHA256 {
		return nil, fmt.Errorf("ConfigMap %s does not hold the snapshot Run %s recorded (SHA-256 %s)",
			cm.Name, run.Name, run.Status.SceneSnapshotSHA256)
	}
	spec := &ergonv1alpha1.SceneSpec{}
	if err := json.Unmarshal(raw, spec); err != nil {
		return nil, fmt.Errorf("the snapshot of Run %s in ConfigMap %s: %w", run.Name, cm.Name, err)
	}
	return spec, nil
}

// RenderTree prints a Tree; color uses ANSI colours for phases.
func RenderTree(w io.Writer, t *Tree, color bool, now time.Time) {
	r := &treeRenderer{w: w, color: color, now: now}
	_, _ = fmt.Fprintln(w, r.runLine(t.Run))
	if line := storageLine(t.Run.Status.Storage); line != "" {
		_, _ = fmt.Fprintln(w, line)
	}
	r.steps(t, "")
}

// storageLine says what a Run keeps in ConfigMaps for its outputs against the manager's limits
// (docs/limits.md); "" when it keeps nothing.
func storageLine(s *ergonv1alpha1.StorageStatus) string {
	if s == nil || (s.Bytes == 0 && s.ConfigMaps == 0) {
		return ""
	}
	limit := func(n int64, unit func(int64) string) string {
		if n <= 0 {
			return "no limit"
		}
		return "limit " + unit(n)
	}
	count := func(n int64) string { return fmt.Sprint(n) }
	return fmt.Sprintf("Keeps %s of outputs (%s) in %d ConfigMaps (%s); a step at most %s",
		bytesOf(s.Bytes), limit(s.MaxBytes, bytesOf), s.ConfigMaps, limit(int64(s.MaxConfigMaps), count),
		limitOrNone(s.MaxStepBytes))
}

func limitOrNone(n int64) string {
	if n <= 0 {
		return "without limit"
	}
	return bytesOf(n)
}

// bytesOf is a size in bytes, KiB or MiB, whichever reads best.
func bytesOf(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

type treeRenderer struct {
	w     io.Writer
	color bool
	now   time.Time
}

func (r *treeRenderer) runLine(run *ergonv1alpha1.Run) string {
	line := fmt.Sprintf("Run %s (Scene %s) %s", run.Name, run.Spec.SceneRef.Name, r.phase(string(orPending(run.Status.Phase))))
	if run.Status.Progress != "" {
		line += " " + run.Status.Progress
	}
	if d := r.took(run.Status.StartedAt, run.Status.FinishedAt); d != "" {
		line += " " + d
	}
	if c := succeededCondition(run); c != nil && run.Status.Phase.Finished() && c.Message != "" {
		line += ": " + c.Message
	}
	return line
}

func (r *treeRenderer) steps(t *Tree, prefix string) {
	byName := map[string]*ergonv1alpha1.StepStatus{}
	for i := range t.Run.Status.Steps {
		byName[t.Run.Status.Steps[i].Name] = &t.Run.Status.Steps[i]
	}
	order := slices.Clone(t.Order)
	for _, s := range t.Run.Status.Steps { // steps the snapshot does not know, if any
		if !slices.Contains(order, s.Name) {
			order = append(order, s.Name)
		}
	}
	for i, name := range order {
		last := i == len(order)-1
		branch, next := "├── ", "│   "
		if last {
			branch, next = "└── ", "    "
		}
		s := byName[name]
		if s == nil {
			// A step the Run has no record of has not started; once the Run ended, it never will.
			phase := string(ergonv1alpha1.StepPending)
			if t.Run.Status.Phase.Finished() {
				phase = notStarted
			}
			_, _ = fmt.Fprintf(r.w, "%s%s%s %s\n", prefix, branch, name, r.phase(phase))
			continue
		}
		_, _ = fmt.Fprintf(r.w, "%s%s%s\n", prefix, branch, r.stepLine(s))
		r.stepChildren(t, s, prefix+next)
	}
}

func (r *treeRenderer) stepLine(s *ergonv1alpha1.StepStatus) string {
	line := fmt.Sprintf("%s %s", s.Name, r.phase(string(s.Phase)))
	if d := r.took(s.StartedAt, s.FinishedAt); d != "" {
		line += " " + d
	}
	if s.Reason != "" && s.Phase != ergonv1alpha1.StepSucceeded {
		line += " " + s.Reason
		if s.Message != "" {
			line += ": " + firstLine(s.Message, 100)
		}
	}
	if s.Usage != nil {
		line += fmt.Sprintf(" [%d turns, %d tokens]", s.Usage.Turns, s.Usage.TotalTokens)
	}
	if s.Output != nil && s.Output.Size > 0 {
		line += fmt.Sprintf(" output %d bytes", s.Output.Size)
	}
	return line
}

func (r *treeRenderer) stepChildren(t *Tree, s *ergonv1alpha1.StepStatus, prefix string) {
	var lines []string
	var child *Tree
	current := s.PodName != ""
	for _, h := range s.History {
		// The attempt a failed step ended with is in its history already.
		current = current && h.PodName != s.PodName
		l := fmt.Sprintf("attempt %d %s", h.Attempt, r.phase(string(h.Phase)))
		if h.PodName != "" {
			l += " pod " + h.PodName
		}
		if h.Reason != "" {
			l += " " + h.Reason
		}
		if h.ExitCode != nil {
			l += fmt.Sprintf(" (exit %d)", *h.ExitCode)
		}
		lines = append(lines, l)
	}
	if current {
		lines = append(lines, fmt.Sprintf("attempt %d %s pod %s", max(s.Attempts, 1), r.phase(string(s.Phase)), s.PodName))
	}
	if s.Gate != "" {
		lines = append(lines, r.gateLine(t.Gates[s.Gate], s))
	}
	if s.ChildRun != "" {
		child = t.Children[s.ChildRun]
		if child == nil {
			lines = append(lines, "Run "+s.ChildRun+" (gone)")
		}
	}
	for i, l := range lines {
		branch := "├── "
		if i == len(lines)-1 && child == nil {
			branch = "└── "
		}
		_, _ = fmt.Fprintf(r.w, "%s%s%s\n", prefix, branch, l)
	}
	if child != nil {
		_, _ = fmt.Fprintf(r.w, "%s└── %s\n", prefix, r.runLine(child.Run))
		r.steps(child, prefix+"    ")
	}
}

func (r *treeRenderer) gateLine(g *ergonv1alpha1.Gate, s *ergonv1alpha1.StepStatus) string {
	if g == nil {
		return strings.TrimSpace(fmt.Sprintf("Gate %s (gone) %s", s.Gate, s.Decision))
	}
	phase := g.Status.Phase
	if phase == "" {
		phase = ergonv1alpha1.GatePending
	}
	line := fmt.Sprintf("Gate %s %s", g.Name, r.phase(string(phase)))
	if g.Status.DecidedBy != "" {
		line += fmt.Sprintf(" %s by %s", g.Status.Option, g.Status.DecidedBy)
	}
	if d := g.Spec.Decision; d != nil && d.Comment != "" {
		line += fmt.Sprintf(" %q", firstLine(d.Comment, 80))
	}
	if phase == ergonv1alpha1.GatePending && g.Spec.Message != "" {
		line += ": " + firstLine(g.Spec.Message, 80)
	}
	return line
}

// took is how long something ran, or has been running: "" before it started.
func (r *treeRenderer) took(start, end *metav1.Time) string {
	if start == nil {
		return ""
	}
	until := r.now
	if end != nil {
		until = end.Time
	}
	return duration.HumanDuration(until.Sub(start.Time))
}

// notStarted is shown for a step of a Run that ended before the step started.
const notStarted = "NotStarted"

// The colours of phases on a terminal.
var phaseColors = map[string]string{
	"Succeeded": "32", "Approved": "32",
	"Failed": "31", "Rejected": "31", "TimedOut": "31",
	"Running": "34", "Retrying": "33", "Waiting": "33", "Pending": "33",
	"Skipped": "90", "Cancelled": "90", "Closed": "90", notStarted: "90",
}

func (r *treeRenderer) phase(p string) string {
	if c, ok := phaseColors[p]; ok && r.color {
		return "\x1b[" + c + "m" + p + "\x1b[0m"
	}
	return p
}

// firstLine is the first line of s, cut to n runes.
func firstLine(s string, n int) string {
	s, _, cut := strings.Cut(s, "\n")
	s = printable(s)
	rs := []rune(s)
	if len(rs) > n {
		return string(rs[:n-1]) + "…"
	}
	if cut {
		return s + " …"
	}
	return s
}

// printable drops control characters (escape sequences among them) from text that people or
// models wrote, before it reaches a terminal.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) && r != '\t' {
			return -1
		}
		return r
	}, s)
}
