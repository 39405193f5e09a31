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
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/outputs/wire"
)

// progress remembers what was printed of a Run, to print only what changed.
type progress struct {
	phase ergonv1alpha1.RunPhase
	steps map[string]string
}

// Transitions returns a line per change between what was seen of a Run and its status now:
// the Run's phase, and each step's phase and attempt.
func (p *progress) Transitions(run *ergonv1alpha1.Run) []string {
	if p.steps == nil {
		p.steps = map[string]string{}
	}
	var lines []string
	for _, s := range run.Status.Steps {
		key := fmt.Sprintf("%s/%d", s.Phase, s.Attempts)
		if p.steps[s.Name] == key {
			continue
		}
		p.steps[s.Name] = key
		lines = append(lines, stepLine(run, &s))
	}
	if run.Status.Phase != p.phase && run.Status.Phase != "" {
		p.phase = run.Status.Phase
		line := fmt.Sprintf("Run %s %s", run.Name, run.Status.Phase)
		if run.Status.Progress != "" {
			line += " (" + run.Status.Progress + " steps)"
		}
		if run.Status.Phase.Finished() {
			if c := succeededCondition(run); c != nil && c.Message != "" {
				line += ": " + c.Message
			}
		}
		lines = append(lines, line)
	}
	return lines
}

func stepLine(run *ergonv1alpha1.Run, s *ergonv1alpha1.StepStatus) string {
	line := fmt.Sprintf("step %s %s", s.Name, s.Phase)
	if s.Attempts > 1 {
		line += fmt.Sprintf(" (attempt %d)", s.Attempts)
	}
	switch {
	case s.Gate != "" && s.Phase == ergonv1alpha1.StepWaiting && asksInput(run, s.Name):
		line += fmt.Sprintf(": waiting on Gate %s; answer with: kubectl ergon answer %s %s --set name=value -n %s",
			s.Gate, run.Name, s.Name, run.Namespace)
	case s.Gate != "" && s.Phase == ergonv1alpha1.StepWaiting:
		line += fmt.Sprintf(": waiting on Gate %s; decide with: kubectl ergon approve %s -n %s", s.Gate, s.Gate, run.Namespace)
	case s.Gate != "" && s.Decision != "":
		line += ": " + s.Decision
	case s.ChildRun != "" && !s.Phase.Finished():
		line += ": child Run " + s.ChildRun
	case s.Reason != "" && (s.Phase == ergonv1alpha1.StepFailed || s.Phase == ergonv1alpha1.StepRetrying):
		line += ": " + s.Reason
		if s.Message != "" {
			line += ": " + s.Message
		}
	}
	return line
}

// asksInput says whether a step of the Run is a gate step asking input, as far as the Run's
// status shows its Scene (a large snapshot lives in a ConfigMap: then it says no).
func asksInput(run *ergonv1alpha1.Run, step string) bool {
	if run.Status.SceneSnapshot == nil {
		return false
	}
	for _, st := range slices.Concat(run.Status.SceneSnapshot.Steps, run.Status.SceneSnapshot.Finally) {
		if st.Name == step {
			return st.Gate != nil && st.Gate.Input != nil
		}
	}
	return false
}

func succeededCondition(run *ergonv1alpha1.Run) *metav1.Condition {
	for i := range run.Status.Conditions {
		if run.Status.Conditions[i].Type == ergonv1alpha1.ConditionSucceeded {
			return &run.Status.Conditions[i]
		}
	}
	return nil
}

// PhaseExitCode is the exit code of run --follow for a finished Run.
func PhaseExitCode(phase ergonv1alpha1.RunPhase) int {
	switch phase {
	case ergonv1alpha1.RunSucceeded:
		return ExitSucceeded
	case ergonv1alpha1.RunFailed:
		return ExitFailed
	}
	return ExitIncomplete
}

// follow prints a Run's transitions until it finishes or timeout passes.
func (o *Options) follow(ctx context.Context, run *ergonv1alpha1.Run, timeout time.Duration, tail int64) error {
	c, err := o.Client()
	if err != nil {
		return err
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	ctx, stopLogs := context.WithCancel(ctx) // the log followers end with the command
	defer stopLogs()
	p := &progress{}
	logs := newTails(o.logSource(), int(tail), o.podStarted)
	show := func(run *ergonv1alpha1.Run) bool {
		if tail > 0 {
			logs.follow(ctx, run)
		}
		return o.show(p, run)
	}
	key := client.ObjectKeyFromObject(run)
	for {
		if err := c.Get(ctx, key, run); err != nil {
			return o.waitError(ctx, run, timeout, err)
		}
		if done := show(run); done {
			return o.finish(ctx, run, logs)
		}
		w, err := c.Watch(ctx, &ergonv1alpha1.RunList{}, client.InNamespace(key.Namespace),
			client.MatchingFields{"metadata.name": key.Name},
			&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: run.ResourceVersion}})
		if err != nil {
			return o.waitError(ctx, run, timeout, err)
		}
		for ev := range w.ResultChan() {
			switch ev.Type {
			case watch.Deleted:
				w.Stop()
				return fmt.Errorf("the Run %s was deleted", key.Name)
			case watch.Added, watch.Modified:
				if r, ok := ev.Object.(*ergonv1alpha1.Run); ok {
					run = r
					if show(run) {
						w.Stop()
						return o.finish(ctx, run, logs)
					}
				}
			}
		}
		w.Stop()
		if ctx.Err() != nil {
			return o.waitError(ctx, run, timeout, ctx.Err())
		}
	}
}

func (o *Options) show(p *progress, run *ergonv1alpha1.Run) bool {
	for _, line := range p.Transitions(run) {
		_, _ = fmt.Fprintf(o.Streams.Out, "%s %s\n", o.now().Format(time.TimeOnly), line)
	}
	return run.Status.Phase.Finished()
}

func (o *Options) waitError(ctx context.Context, run *ergonv1alpha1.Run, timeout time.Duration, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return &ExitError{Code: ExitIncomplete, Message: fmt.Sprintf(
			"gave up waiting after %s: Run %s is %s and goes on", timeout, run.Name, orPending(run.Status.Phase))}
	}
	return err
}

func orPending(p ergonv1alpha1.RunPhase) ergonv1alpha1.RunPhase {
	if p == "" {
		return ergonv1alpha1.RunPending
	}
	return p
}

// finish explains a Run that did not succeed and returns its exit code.
func (o *Options) finish(ctx context.Context, run *ergonv1alpha1.Run, logs *tails) error {
	code := PhaseExitCode(run.Status.Phase)
	if run.Status.Phase == ergonv1alpha1.RunFailed {
		for i := range run.Status.Steps {
			s := &run.Status.Steps[i]
			if s.Phase != ergonv1alpha1.StepFailed {
				continue
			}
			_, _ = fmt.Fprintf(o.Streams.Out, "step %s failed: %s: %s\n", s.Name, s.Reason, s.Message)
			if s.PodName != "" && logs.n > 0 {
				o.printTail(ctx, run.Namespace, s.PodName, logs)
			}
		}
	}
	if code == ExitSucceeded {
		return nil
	}
	return &ExitError{Code: code}
}

// printTail prints the last lines of a step pod's log, without the framed outputs: as
// followed while the pod ran, else as read now. A follow that saw nothing (its stream began
// before the container wrote, and ended with it) is read again now too.
func (o *Options) printTail(ctx context.Context, namespace, pod string, logs *tails) {
	last, ok := logs.get(pod)
	if !ok || len(last) == 0 {
		rc, err := o.logSource().Log(ctx, namespace, pod, false, nil)
		if err != nil {
			_, _ = fmt.Fprintf(o.Streams.Out, "(the log of pod %s cannot be read: %v)\n", pod, err)
			return
		}
		defer func() { _ = rc.Close() }()
		last = Tail(wire.StripFrames(rc), logs.n)
	}
	_, _ = fmt.Fprintf(o.Streams.Out, "last %d lines of the log of pod %s:\n", len(last), pod)
	for _, l := range last {
		_, _ = fmt.Fprintln(o.Streams.Out, "  "+l)
	}
}

// Tail is the last n lines, without trailing empty ones.
func Tail(lines []string, n int) []string {
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return lines
}

// tails follows the logs of a Run's step pods while they run and keeps their last lines.
// Ergon deletes the pod of a failed attempt once its step has ended (unless the manager runs
// with --keep-failed-pods), often before the Run ends: its log must be read while it runs.
type tails struct {
	logOpener
	n     int
	mu    sync.Mutex
	lines map[string][]string
	done  map[string]chan struct{}
}

func newTails(src LogSource, n int, started func(ctx context.Context, namespace, pod string) error) *tails {
	return &tails{logOpener: newLogOpener(src, started), n: n, lines: map[string][]string{}, done: map[string]chan struct{}{}}
}

// logOpener opens pods' logs to follow once their container has started.
type logOpener struct {
	src LogSource
	// started, when set, waits until a pod's step container has started or the pod is gone;
	// between tries to follow a log whose container has not started, else wait retry.
	started func(ctx context.Context, namespace, pod string) error
	retry   time.Duration
}

func newLogOpener(src LogSource, started func(ctx context.Context, namespace, pod string) error) logOpener {
	return logOpener{src: src, started: started, retry: 250 * time.Millisecond}
}

// follow starts following the log of each step pod of the Run not followed yet.
func (t *tails) follow(ctx context.Context, run *ergonv1alpha1.Run) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, s := range run.Status.Steps {
		if s.PodName == "" || s.Phase.Finished() || t.done[s.PodName] != nil {
			continue
		}
		done := make(chan struct{})
		t.done[s.PodName] = done
		go func(pod string) {
			defer close(done)
			rc, err := t.open(ctx, run.Namespace, pod, nil)
			if err != nil {
				return // gone, or the command ends: read again at the end
			}
			defer func() { _ = rc.Close() }()
			last := Tail(wire.StripFrames(rc), t.n)
			t.mu.Lock()
			defer t.mu.Unlock()
			t.lines[pod] = last
		}(s.PodName)
	}
}

// open follows a pod's log once its container has started. Until then the API server
// answers 400 ("container ... is waiting to start"): a step pod is Pending for a while after
// its name reaches the Run's status, and a failed one may be deleted soon after it ends, so
// its log is read on the first chance, not at the Run's end. A pod that is gone is not
// waited for, nor is a log the API server still refuses refusedAfterStart times after the pod
// said its container started (a pod that ended without ever starting it).
func (o logOpener) open(ctx context.Context, namespace, pod string, tailLines *int64) (io.ReadCloser, error) {
	for refused := 0; ; {
		rc, err := o.src.Log(ctx, namespace, pod, true, tailLines)
		if err == nil || apierrors.IsNotFound(err) {
			return rc, err
		}
		if o.started != nil {
			if err := o.started(ctx, namespace, pod); err == nil || apierrors.IsNotFound(err) {
				// Started, or gone: Log says which.
				if rc, err = o.src.Log(ctx, namespace, pod, true, tailLines); err == nil || apierrors.IsNotFound(err) {
					return rc, err
				}
				if refused++; refused >= refusedAfterStart {
					return nil, err
				}
			}
		}
		select { // the log is still refused: try again in a while, not at once
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(o.retry):
		}
	}
}

// refusedAfterStart bounds the refusals of a log after its pod said the container started,
// each a retry interval apart: about 5 s at the default interval.
const refusedAfterStart = 20

// podStarted waits, watching the pod, until its step container has started (or the pod has
// ended without it) or the pod is gone (a NotFound error).
func (o *Options) podStarted(ctx context.Context, namespace, name string) error {
	c, err := o.Client()
	if err != nil {
		return err
	}
	pod := &corev1.Pod{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, pod); err != nil {
		return err
	}
	if containerStarted(pod) {
		return nil
	}
	w, err := c.Watch(ctx, &corev1.PodList{}, client.InNamespace(namespace),
		client.MatchingFields{"metadata.name": name},
		&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: pod.ResourceVersion}})
	if err != nil {
		return err
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		switch ev.Type {
		case watch.Deleted:
			return apierrors.NewNotFound(corev1.Resource("pods"), name)
		case watch.Added, watch.Modified:
			if p, ok := ev.Object.(*corev1.Pod); ok && containerStarted(p) {
				return nil
			}
		case watch.Error:
			return apierrors.FromObject(ev.Object)
		}
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return fmt.Errorf("the watch of pod %s ended", name)
}

// containerStarted reports whether a pod's step container has a log to follow: it runs or
// ran, or the pod ended without it.
func containerStarted(pod *corev1.Pod) bool {
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return true
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name == stepContainer && (cs.State.Running != nil || cs.State.Terminated != nil) {
			return true
		}
	}
	return false
}

// get returns the last lines of a pod's log once its stream has ended, waiting a little for
// the end, which follows the container's.
func (t *tails) get(pod string) ([]string, bool) {
	t.mu.Lock()
	done := t.done[pod]
	t.mu.Unlock()
	if done == nil {
		return nil, false
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		return nil, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	lines, ok := t.lines[pod]
	return lines, ok
}
