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
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/agent"
	"github.com/ergon-dev/ergon/internal/naming"
	"github.com/ergon-dev/ergon/internal/outputs/wire"
)

// stepContainer is the container of a step pod that runs the step.
const stepContainer = "step"

// apiLogs reads pods/log from the API server.
type apiLogs struct{ o *Options }

func (l apiLogs) Log(ctx context.Context, namespace, pod string, follow bool, tailLines *int64) (io.ReadCloser, error) {
	cfg, err := l.o.restConfig()
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return cs.CoreV1().Pods(namespace).GetLogs(pod, &corev1.PodLogOptions{
		Container: stepContainer, Follow: follow, TailLines: tailLines,
	}).Stream(ctx)
}

func (o *Options) logSource() LogSource {
	if o.Logs != nil {
		return o.Logs
	}
	return apiLogs{o: o}
}

type logsOptions struct {
	attempt    int32
	instance   int32
	follow     bool
	transcript bool
	raw        bool
	tail       int64
}

func newLogsCommand(o *Options) *cobra.Command {
	lo := &logsOptions{}
	cmd := &cobra.Command{
		Use:   "logs RUN [STEP]",
		Short: "Print the log of a step's pod, or an agent step's transcript",
		Long: "Print the log of a step's pod while the pod exists: of the last attempt, or of --attempt N.\n" +
			"For a fan-out step, the logs of its instances' pods that exist, or of --instance N's.\n" +
			"Without STEP, the logs of every step with a pod, each line prefixed by its step. Framed\n" +
			"outputs are shown as one line (read them with kubectl ergon output) unless --raw.\n" +
			"--transcript prints an agent step's transcript: turns, tool calls and usage.",
		Args:              cobra.RangeArgs(1, 2),
		ValidArgsFunction: completeRunAndStep(o),
		RunE: func(cmd *cobra.Command, args []string) error {
			step := ""
			if len(args) == 2 {
				step = args[1]
			}
			return o.logs(cmd.Context(), args[0], step, lo)
		},
	}
	f := cmd.Flags()
	f.Int32Var(&lo.attempt, "attempt", 0, "the attempt whose pod to read, from 1; the last one when 0")
	f.Int32Var(&lo.instance, "instance", -1, "the instance of a fan-out step whose pod to read, from 0; all when -1")
	f.BoolVarP(&lo.follow, "follow", "f", false, "stream the log while the step runs")
	f.BoolVar(&lo.transcript, "transcript", false, "print the agent step's transcript instead of its log")
	f.BoolVar(&lo.raw, "raw", false, "print the log as it is, framed outputs included")
	f.Int64Var(&lo.tail, "tail", -1, "lines of the end of the log to print; all when -1")
	return cmd
}

func (o *Options) getRun(ctx context.Context, name string) (*ergonv1alpha1.Run, error) {
	c, ns, err := o.clientIn()
	if err != nil {
		return nil, err
	}
	run := &ergonv1alpha1.Run{}
	return run, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, run)
}

func findStep(run *ergonv1alpha1.Run, name string) (*ergonv1alpha1.StepStatus, error) {
	for i := range run.Status.Steps {
		if run.Status.Steps[i].Name == name {
			return &run.Status.Steps[i], nil
		}
	}
	var names []string
	for _, s := range run.Status.Steps {
		names = append(names, s.Name)
	}
	return nil, fmt.Errorf("the Run %s has no step %q that started; its steps so far: %s", run.Name, name, strings.Join(names, ", "))
}

// PodOfAttempt is the pod of an attempt of a step, as the Run's status records it; attempt 0
// is the last one.
func PodOfAttempt(s *ergonv1alpha1.StepStatus, attempt int32) (string, error) {
	if attempt == 0 || attempt == s.Attempts {
		if s.PodName == "" {
			return "", fmt.Errorf("step %s has no pod (a %s step)", s.Name, stepKind(s))
		}
		return s.PodName, nil
	}
	for _, h := range s.History {
		if h.Attempt == attempt && h.PodName != "" {
			return h.PodName, nil
		}
	}
	return "", fmt.Errorf("step %s has attempts 1 to %d; attempt %d has no pod recorded", s.Name, s.Attempts, attempt)
}

func stepKind(s *ergonv1alpha1.StepStatus) string {
	switch {
	case s.Gate != "":
		return "gate"
	case s.ChildRun != "":
		return wordScene
	}
	return string(s.Phase)
}

func (o *Options) logs(ctx context.Context, runName, step string, lo *logsOptions) error {
	run, err := o.getRun(ctx, runName)
	if err != nil {
		return err
	}
	if lo.transcript {
		if step == "" {
			return fmt.Errorf("--transcript needs a STEP")
		}
		return o.transcript(ctx, run, step)
	}
	var tail *int64
	if lo.tail >= 0 {
		tail = &lo.tail
	}
	if step != "" {
		s, err := findStep(run, step)
		if err != nil {
			return err
		}
		if s.Instances != nil {
			return o.instanceLogs(ctx, run, s, lo, tail)
		}
		pod, err := PodOfAttempt(s, lo.attempt)
		if err != nil {
			return err
		}
		return o.copyLog(ctx, run.Namespace, pod, "", lo.follow, lo.raw, tail)
	}
	if lo.follow {
		return fmt.Errorf("-f follows one step's log; name the STEP")
	}
	read := logsRead{o: o}
	for _, s := range run.Status.Steps {
		if s.PodName == "" {
			continue
		}
		read.note("["+s.Name+"] ", o.copyLog(ctx, run.Namespace, s.PodName, "["+s.Name+"] ", false, lo.raw, tail))
	}
	return read.err(run.Name)
}

// logsRead counts the logs of a Run that could be read and those that could not, each told on
// stderr: printing some is success, printing none (every pod gone) is an error.
type logsRead struct {
	o          *Options
	ok, failed int
}

func (r *logsRead) note(prefix string, err error) {
	if err == nil {
		r.ok++
		return
	}
	r.failed++
	_, _ = fmt.Fprintf(r.o.Streams.ErrOut, "%s%v\n", prefix, err)
}

func (r *logsRead) err(run string) error {
	if r.ok == 0 && r.failed > 0 {
		return fmt.Errorf("no log of Run %s could be read (above)", run)
	}
	return nil
}

// instanceLogs prints the logs of a fan-out step's instances: one, or every one that started,
// each line prefixed by its instance. Pods of instances that ended may be gone.
func (o *Options) instanceLogs(ctx context.Context, run *ergonv1alpha1.Run, s *ergonv1alpha1.StepStatus, lo *logsOptions, tail *int64) error {
	pods := InstancePods(run.Name, s)
	if lo.instance >= 0 {
		if int(lo.instance) >= len(pods) {
			return fmt.Errorf("step %s has instances 0 to %d", s.Name, len(pods)-1)
		}
		if pods[lo.instance] == "" {
			return fmt.Errorf("instance %d of step %s has not started", lo.instance, s.Name)
		}
		return o.copyLog(ctx, run.Namespace, pods[lo.instance], "", lo.follow, lo.raw, tail)
	}
	if lo.follow {
		return fmt.Errorf("-f follows one pod's log; step %s fans out: name one with --instance N", s.Name)
	}
	read := logsRead{o: o}
	for i, pod := range pods {
		if pod == "" {
			continue
		}
		prefix := fmt.Sprintf("[%s#%d] ", s.Name, i)
		read.note(prefix, o.copyLog(ctx, run.Namespace, pod, prefix, false, lo.raw, tail))
	}
	return read.err(run.Name)
}

// InstancePods names the pod of each instance of a fan-out step, by index, at its last
// attempt and iteration; "" for an instance that has not started.
func InstancePods(run string, s *ergonv1alpha1.StepStatus) []string {
	in := s.Instances
	pods := make([]string, len(in.States))
	for i, st := range in.States {
		if st == ergonv1alpha1.InstanceNotStarted || st == ergonv1alpha1.InstanceSkipped {
			continue
		}
		attempt, iteration := int32(1), int32(0)
		if i < len(in.Attempts) && in.Attempts[i] > 0 {
			attempt = in.Attempts[i]
		}
		if i < len(in.Iterations) {
			iteration = in.Iterations[i]
		}
		pods[i] = naming.UnitPodName(run, s.Name, int32(i), iteration, attempt)
	}
	return pods
}

func (o *Options) copyLog(ctx context.Context, namespace, pod, prefix string, follow, raw bool, tail *int64) error {
	var rc io.ReadCloser
	var err error
	if follow {
		rc, err = o.followLog(ctx, namespace, pod, tail)
	} else {
		rc, err = o.logSource().Log(ctx, namespace, pod, false, tail)
	}
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("pod %s is gone: Ergon deletes a step's pod once the Run's status records its end "+
			"(the output stays: kubectl ergon output; the manager's --keep-failed-pods keeps failed ones)", pod)
	}
	if err != nil {
		return fmt.Errorf("reading the log of pod %s: %w", pod, err)
	}
	defer func() { _ = rc.Close() }()
	if raw && prefix == "" {
		_, err := io.Copy(o.Streams.Out, rc)
		return err
	}
	if raw {
		sc := bufio.NewScanner(rc)
		sc.Buffer(make([]byte, 64*1024), 1<<20)
		for sc.Scan() {
			_, _ = fmt.Fprintln(o.Streams.Out, prefix+sc.Text())
		}
		return sc.Err()
	}
	for _, line := range wire.StripFrames(rc) {
		_, _ = fmt.Fprintln(o.Streams.Out, prefix+line)
	}
	return nil
}

// followLog opens a pod's log to follow, waiting first for a Pending pod's container to start,
// as run --follow does: a step's pod exists, named in the Run's status, a while before it runs.
func (o *Options) followLog(ctx context.Context, namespace, pod string, tail *int64) (io.ReadCloser, error) {
	var once sync.Once
	started := func(ctx context.Context, namespace, pod string) error {
		once.Do(func() {
			_, _ = fmt.Fprintf(o.Streams.ErrOut, "pod %s has not started its container yet: waiting for it\n", pod)
		})
		return o.podStarted(ctx, namespace, pod)
	}
	return newLogOpener(o.logSource(), started).open(ctx, namespace, pod, tail)
}

func (o *Options) transcript(ctx context.Context, run *ergonv1alpha1.Run, step string) error {
	s, err := findStep(run, step)
	if err != nil {
		return err
	}
	if s.Transcript == nil {
		return fmt.Errorf("step %s has no transcript: only agent steps have one, once an attempt ended", step)
	}
	raw, err := o.readValue(ctx, run.Namespace, s.Transcript, "")
	if err != nil {
		return err
	}
	var t agent.Transcript
	if err := json.Unmarshal(raw, &t); err != nil {
		return fmt.Errorf("the transcript of step %s is not one this plugin reads: %w", step, err)
	}
	RenderTranscript(o.Streams.Out, &t)
	return nil
}

// RenderTranscript prints an agent transcript for people: a header, then each message by
// turn, with tool calls and their results.
func RenderTranscript(w io.Writer, t *agent.Transcript) {
	_, _ = fmt.Fprintf(w, "model %s, %s", t.Model, t.Outcome)
	if t.Message != "" {
		_, _ = fmt.Fprintf(w, ": %s", t.Message)
	}
	_, _ = fmt.Fprintf(w, "\n%d turns, %d tokens (%d prompt, %d completion), %s\n",
		t.Usage.Turns, t.Usage.TotalTokens, t.Usage.PromptTokens, t.Usage.CompletionTokens,
		t.FinishedAt.Sub(t.StartedAt).Round(1e6))
	turn := -1
	for _, e := range t.Entries {
		if e.Turn != turn {
			turn = e.Turn
			_, _ = fmt.Fprintf(w, "\n--- turn %d ---\n", turn)
		}
		switch e.Role {
		case agent.RoleTool:
			label := "result"
			if e.Error {
				label = "error"
			}
			_, _ = fmt.Fprintf(w, "tool %s %s (%s):\n%s\n", e.Tool, label, e.ToolCallID, indent(e.Content))
			if e.Truncated > 0 {
				_, _ = fmt.Fprintf(w, "  [cut from %d bytes]\n", e.Truncated)
			}
		default:
			if e.Content != "" {
				_, _ = fmt.Fprintf(w, "%s:\n%s\n", e.Role, indent(e.Content))
			}
			for _, call := range e.ToolCalls {
				_, _ = fmt.Fprintf(w, "%s calls %s(%s) [%s]\n", e.Role, call.Name, call.Arguments, call.ID)
			}
			if e.Usage != nil {
				_, _ = fmt.Fprintf(w, "  (%d tokens, %d ms)\n", e.Usage.TotalTokens, e.DurationMS)
			}
		}
	}
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ")
}
