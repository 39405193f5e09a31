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

package controllers

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/agentspec"
	"github.com/ergon-dev/ergon/internal/compile"
	"github.com/ergon-dev/ergon/internal/naming"
	"github.com/ergon-dev/ergon/internal/outputs/wire"
	"github.com/ergon-dev/ergon/internal/planner"
	"github.com/ergon-dev/ergon/internal/stepcontract"
)

// +kubebuilder:rbac:groups="",resources=configmaps,verbs=update

// The checkpoint of an agent step: a ConfigMap owned by the Run, mounted into each attempt.
const (
	checkpointKey = "checkpoint"
	checkpointDir = "/ergon/checkpoint"
	// defaultProgressInterval is how often a running agent step's log is read.
	defaultProgressInterval = 10 * time.Second
	// lastReadRetry is how soon the log of a pod that ended is read again after a failed
	// read, and lastReadPatience how long: its last checkpoint may list the tool calls the
	// step waits for, or let the next attempt resume, so the pod is kept until it is read.
	lastReadRetry    = 2 * time.Second
	lastReadPatience = time.Minute
)

// progressSeen is what the controller last read of an agent pod's log.
type progressSeen struct {
	run   types.UID
	at    time.Time
	final bool
	// checkpoint is the digest of the last checkpoint kept, so that an unchanged one costs
	// no read of its ConfigMap.
	checkpoint string
	// unreadSince is when the read of the log of a pod that ended first failed; zero while
	// no such read failed.
	unreadSince time.Time
	// conflict is set once a ConfigMap that is not the Run's was found under the checkpoint's
	// name, and told in an Event.
	conflict bool
	// asks are the questions the pod's last progress line says it waits on, and answered the
	// answers last handed to it (run_elicit.go).
	asks     []agentspec.Ask
	answered string
}

// observeAgents reads what the running agent steps say in their logs: their progress, which
// becomes the step's usage so far, and their last checkpoint, which it keeps in the step's
// checkpoint ConfigMap for the next attempt. A running pod's log is read at most once per
// progress interval; a pod that ended or is being deleted (still readable during its grace
// period) is read once more, so a killed pod costs at most the turn it was in. It returns
// when to look again; zero when no agent step runs. A running pod's log that cannot be read is
// no error: the step goes on, and only its progress is older. That last read of a pod that
// ended is tried again for lastReadPatience, and the pod is not cleaned up meanwhile: its
// checkpoint may hold the tool calls its step waits for.
func (r *RunReconciler) observeAgents(ctx context.Context, run *ergonv1alpha1.Run, scene *compile.Scene, f *planner.Facts,
	plan *planner.Plan) time.Duration {
	interval := r.Config.ProgressInterval
	if interval <= 0 {
		interval = defaultProgressInterval
	}
	var requeue time.Duration
	present := map[string]bool{}
	for stepName, pods := range f.Pods {
		step := scene.Steps[stepName]
		if step == nil || step.Spec.Agent == nil {
			continue
		}
		for _, p := range pods {
			present[p.UID] = true
			requeue = sooner(requeue, r.observeAgentPod(ctx, run, step, p, f, interval, plan))
		}
	}
	r.recordCheckpoints(run, &plan.Status)
	// Forget the pods of this Run that are gone.
	r.progress.Range(func(k, v any) bool {
		if v.(progressSeen).run == run.UID && !present[k.(string)] {
			r.progress.Delete(k)
		}
		return true
	})
	return requeue
}

// observeAgentPod reads the progress of one agent pod when it is due, as observeAgents says,
// and returns when to look at it again; zero when it needs no second look.
func (r *RunReconciler) observeAgentPod(ctx context.Context, run *ergonv1alpha1.Run, step *compile.Step, p planner.PodState,
	f *planner.Facts, interval time.Duration, plan *planner.Plan) time.Duration {
	stepName, now := step.Name, f.Now
	running := p.Phase == planner.PodRunning
	final := p.Phase == planner.PodFailed || (p.Phase == planner.PodGone && !p.TerminatingUntil.IsZero())
	if !running && !final {
		return 0
	}
	var requeue time.Duration
	if running {
		requeue = interval
	}
	seen, _ := r.progress.Load(p.UID)
	last, _ := seen.(progressSeen)
	if last.final || (running && now.Sub(last.at) < interval) {
		if running && len(last.asks) > 0 {
			// A question's Gate may have been decided since the log was read.
			r.answerAsks(ctx, run, step, p, &last, f, plan)
			r.progress.Store(p.UID, last)
		}
		return requeue
	}
	prog, err := r.readProgress(ctx, run, stepName, p, last.checkpoint)
	kept := last.checkpoint
	switch {
	case err != nil || prog == nil:
	case prog.Reset:
		kept = ""
		r.noteCheckpoint(run, stepName, "")
	case prog.Checkpoint != nil:
		kept = prog.Checkpoint.SHA256
		r.noteCheckpoint(run, stepName, kept)
	}
	next := progressSeen{run: run.UID, at: now, final: final, checkpoint: kept, asks: last.asks, answered: last.answered}
	if prog != nil {
		next.asks = prog.Asks
	}
	if conflict, ok := errors.AsType[*conflictError](err); ok && !last.conflict {
		next.conflict = true
		r.Recorder.Eventf(run, nil, corev1.EventTypeWarning, ergonv1alpha1.ReasonNameConflict, "KeepCheckpoint",
			"Step %s cannot keep its checkpoint: %s", stepName, conflict.Error())
	}
	next.conflict = next.conflict || last.conflict
	switch {
	case err == nil:
	case !final:
		log.FromContext(ctx).V(1).Info("Reading an agent step's progress", "pod", p.Name, "error", err.Error())
	case last.unreadSince.IsZero() || now.Sub(last.unreadSince) < lastReadPatience:
		next.final, next.unreadSince = false, last.unreadSince
		if next.unreadSince.IsZero() {
			next.unreadSince = now
		}
		plan.CleanupPods = slices.DeleteFunc(plan.CleanupPods, func(name string) bool { return name == p.Name })
		requeue = sooner(requeue, lastReadRetry)
		log.FromContext(ctx).V(verbosityOnce(last.unreadSince.IsZero())).Info(
			"Reading the log of an agent pod that ended; trying again", "pod", p.Name, "error", err.Error())
	default:
		log.FromContext(ctx).Info("Gave up reading the log of an agent pod that ended: its last checkpoint is lost",
			"pod", p.Name, "since", last.unreadSince, "error", err.Error())
	}
	if running && len(next.asks) > 0 {
		r.answerAsks(ctx, run, step, p, &next, f, plan)
	}
	r.progress.Store(p.UID, next)
	if prog != nil {
		showProgress(&plan.Status, stepName, prog)
	}
	return requeue
}

// showProgress puts an agent step's progress into its status while it runs: the turns and
// tokens so far, over its attempts.
func showProgress(status *ergonv1alpha1.RunStatus, step string, p *wire.Progress) {
	for i := range status.Steps {
		s := &status.Steps[i]
		if s.Name != step || s.Phase.Finished() {
			continue
		}
		if s.Usage != nil && int(s.Usage.Turns) > p.Turn {
			return // an older line than the one shown
		}
		s.Usage = &ergonv1alpha1.AgentUsage{Turns: int32(p.Turn), PromptTokens: p.PromptTokens,
			CompletionTokens: p.CompletionTokens, TotalTokens: p.TotalTokens, Cost: p.Cost}
	}
}

// readProgress reads the last progress line of an agent pod's log and, when it names a
// checkpoint the step's ConfigMap does not hold yet, the checkpoint, and keeps it. The log of
// a pod that ended goes on past the line with the entrypoint's frames (the transcript, a
// framed output), which the read reaches past. A checkpoint the line names that is not in the
// log's end is an error (FindFrames), never an empty checkpoint: the one kept before stays.
func (r *RunReconciler) readProgress(ctx context.Context, run *ergonv1alpha1.Run, step string, pod planner.PodState,
	kept string) (*wire.Progress, error) {
	rc, err := r.Logs.Read(ctx, run.Namespace, pod.Name, stepContainer, wire.ProgressTail.Plus(pod.Frames))
	if err != nil {
		return nil, err
	}
	prog, err := wire.LastProgress(rc)
	_ = rc.Close()
	if prog == nil || err != nil {
		return prog, err
	}
	switch {
	case prog.Reset:
		return prog, r.keepCheckpoint(ctx, run, step, nil)
	case prog.Checkpoint == nil || prog.Checkpoint.SHA256 == kept:
		return prog, nil
	}
	cm := &corev1.ConfigMap{}
	name := naming.CheckpointConfigMapName(run.Name, step)
	err = r.APIReader.Get(ctx, client.ObjectKey{Namespace: run.Namespace, Name: name}, cm)
	if err == nil {
		if _, err := verifyInternal(cm, checkpointWants(run, step, prog.Checkpoint.SHA256)); err == nil {
			return prog, nil // kept by an earlier read
		}
	}
	tail := wire.CheckpointTail(*prog.Checkpoint).Plus(pod.Frames)
	found, err := r.findFrame(ctx, run, pod, tail, *prog.Checkpoint)
	if err != nil && !errors.Is(err, context.Canceled) {
		// More lines came after the checkpoint than the progress tail allows for (a tool's or
		// a server's messages): read a wider end of the log once before giving up.
		found, err = r.findFrame(ctx, run, pod, tail.Plus(checkpointWideTail), *prog.Checkpoint)
	}
	if err != nil {
		return prog, err
	}
	return prog, r.keepCheckpoint(ctx, run, step, found)
}

// checkpointWideTail is what a second read of an agent pod's log adds to the tail it reads
// for a checkpoint, when the first did not reach its frame.
var checkpointWideTail = wire.Tail{Lines: 4096, Bytes: 8 << 20}

// findFrame reads the end of an agent pod's log and finds one framed value in it.
func (r *RunReconciler) findFrame(ctx context.Context, run *ergonv1alpha1.Run, pod planner.PodState, tail wire.Tail,
	want wire.Part) ([]byte, error) {
	rc, err := r.Logs.Read(ctx, run.Namespace, pod.Name, stepContainer, tail)
	if err != nil {
		return nil, err
	}
	defer func() { _ = rc.Close() }()
	found, err := wire.FindFrames(rc, want)
	return found[want.SHA256], err
}

// keepCheckpoint writes a step's checkpoint ConfigMap; an empty checkpoint means the next
// attempt starts afresh. A ConfigMap under the name that is not the Run's internal state is
// left alone and is a conflictError: the next attempt then starts afresh too, for the runtime
// reads only the checkpoint whose digest the status records.
func (r *RunReconciler) keepCheckpoint(ctx context.Context, run *ergonv1alpha1.Run, step string, checkpoint []byte) error {
	name := naming.CheckpointConfigMapName(run.Name, step)
	cm := &corev1.ConfigMap{}
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: run.Namespace, Name: name}, cm)
	switch {
	case apierrors.IsNotFound(err):
		if checkpoint == nil {
			return nil
		}
		cm = markInternal(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: run.Namespace,
			Labels: childLabels(run, step), OwnerReferences: []metav1.OwnerReference{ownerRef(run)}},
			Data: map[string]string{checkpointKey: string(checkpoint)}})
		return r.Create(ctx, cm)
	case err != nil:
		return err
	}
	if _, err := verifyInternal(cm, checkpointWants(run, step, "")); err != nil {
		return err
	}
	if cm.Data[checkpointKey] == string(checkpoint) {
		return nil
	}
	cm.Data = map[string]string{checkpointKey: string(checkpoint)}
	return r.Update(ctx, cm)
}

// checkpointWants is what a step's checkpoint ConfigMap must be: the Run's internal state,
// holding the checkpoint of digest sum (any, when sum is empty).
func checkpointWants(run *ergonv1alpha1.Run, step, sum string) internalWant {
	want := runWants(run, "the checkpoint of step "+step, checkpointKey)
	want.sha256 = sum
	return want
}

// noteCheckpoint remembers the digest of the checkpoint just kept for a step (empty: none to
// resume from) until a status write records it. The status is where the digest is trusted
// from; a write that is lost (a conflict) must not lose it, while the pod whose log it came
// from may be gone by the next pass.
func (r *RunReconciler) noteCheckpoint(run *ergonv1alpha1.Run, step, sum string) {
	key := client.ObjectKeyFromObject(run).String()
	v, _ := r.checkpoints.LoadOrStore(key, &keptCheckpoints{run: run.UID, steps: map[string]string{}})
	kept := v.(*keptCheckpoints)
	kept.mu.Lock()
	defer kept.mu.Unlock()
	if kept.run != run.UID {
		kept.run, kept.steps = run.UID, map[string]string{}
	}
	kept.steps[step] = sum
}

// keptCheckpoints are the checkpoint digests of one Run's steps that its stored status may
// not record yet.
type keptCheckpoints struct {
	mu    sync.Mutex
	run   types.UID
	steps map[string]string
}

// keptCheckpoint is the digest of the checkpoint kept for a step: the one noted and not yet
// recorded, or the one the status records.
func (r *RunReconciler) keptCheckpoint(run *ergonv1alpha1.Run, s *ergonv1alpha1.StepStatus) string {
	if v, ok := r.checkpoints.Load(client.ObjectKeyFromObject(run).String()); ok {
		kept := v.(*keptCheckpoints)
		kept.mu.Lock()
		defer kept.mu.Unlock()
		if sum, noted := kept.steps[s.Name]; noted && kept.run == run.UID {
			return sum
		}
	}
	return s.CheckpointSHA256
}

// recordCheckpoints puts the noted digests into the status about to be written, and forgets
// those the stored status records already.
func (r *RunReconciler) recordCheckpoints(run *ergonv1alpha1.Run, status *ergonv1alpha1.RunStatus) {
	v, ok := r.checkpoints.Load(client.ObjectKeyFromObject(run).String())
	if !ok {
		return
	}
	kept := v.(*keptCheckpoints)
	kept.mu.Lock()
	defer kept.mu.Unlock()
	if kept.run != run.UID {
		return
	}
	stored := map[string]string{}
	for _, s := range run.Status.Steps {
		stored[s.Name] = s.CheckpointSHA256
	}
	for i := range status.Steps {
		s := &status.Steps[i]
		sum, noted := kept.steps[s.Name]
		if !noted {
			continue
		}
		if recorded, ok := stored[s.Name]; ok && recorded == sum {
			delete(kept.steps, s.Name)
			continue
		}
		s.CheckpointSHA256 = sum
	}
}

// mountCheckpoint gives an agent pod its step's checkpoint, if there is one by the time the
// pod starts: an optional ConfigMap volume, named by $ERGON_CHECKPOINT. The runtime resumes
// from it only when it has the digest pinned in $ERGON_CHECKPOINT_SHA256 (pinAgentState).
func mountCheckpoint(pod *corev1.Pod, run *ergonv1alpha1.Run, step string) {
	file := mountOptionalKey(pod, "ergon-checkpoint", naming.CheckpointConfigMapName(run.Name, step),
		checkpointKey, checkpointKey, checkpointDir)
	c := &pod.Spec.Containers[0]
	c.Env = append(c.Env, corev1.EnvVar{Name: stepcontract.EnvCheckpoint, Value: file})
}

// mountOptionalKey mounts one key of a ConfigMap that may not exist yet (an optional volume)
// read-only into the step container, as file in dir, and returns the file's path.
func mountOptionalKey(pod *corev1.Pod, volume, configMap, key, file, dir string) string {
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: volume, VolumeSource: corev1.VolumeSource{
		ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: configMap},
			Optional:             new(true),
			Items:                []corev1.KeyToPath{{Key: key, Path: file}},
		}}})
	c := &pod.Spec.Containers[0]
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: volume, MountPath: dir, ReadOnly: true})
	return dir + "/" + file
}

// verbosityOnce logs the first of a series of like lines at the default level, the others
// at debug level.
func verbosityOnce(first bool) int {
	if first {
		return 0
	}
	return 1
}
