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

package run

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/controllers/internal/shared"
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
)

// agentSeen is what the controller last read of an agent pod's log, and the Run of the pod.
type agentSeen struct {
	run types.UID
	planner.AgentSeen
}

// gatherAgents reads, after Decide, what the Run's agent pods say in their logs when they are
// due (planner.AgentLogDue), and the checkpoint ConfigMaps of the checkpoints they name:
// planner.ObserveAgents decides what that changes. It does not write. A log that cannot be
// read is no error but a fact: the step goes on, and only its progress is older.
func (r *RunReconciler) gatherAgents(ctx context.Context, run *ergonv1alpha1.Run, scene *compile.Scene, f *planner.Facts) {
	f.ProgressInterval = r.Config.ProgressInterval
	for _, stepName := range slices.Sorted(maps.Keys(f.Pods)) {
		step := scene.Steps[stepName]
		if step == nil || step.Spec.Agent == nil {
			continue
		}
		for _, p := range f.Pods[stepName] {
			a := planner.AgentPodFacts{Step: stepName, Pod: p}
			if v, ok := r.progress.Load(p.UID); ok {
				a.Seen = v.(agentSeen).AgentSeen
			}
			if planner.AgentLogDue(p, a.Seen, f.Now, f.ProgressInterval) {
				a.Read = true
				if err := r.readAgentLog(ctx, run, &a); err != nil {
					a.ReadErr = err.Error()
					log.FromContext(ctx).V(1).Info("Reading an agent step's progress", "pod", p.Name, "error", a.ReadErr)
				}
			}
			f.Agents = append(f.Agents, a)
		}
	}
}

// settleAgents remembers, once act carried the plan out, what the pass read of the agent pods'
// logs and the checkpoints it kept, and forgets the pods of the Run that are gone.
func (r *RunReconciler) settleAgents(run *ergonv1alpha1.Run, f *planner.Facts, plan *planner.Plan) {
	for uid, seen := range plan.AgentsSeen {
		r.progress.Store(uid, agentSeen{run: run.UID, AgentSeen: seen})
	}
	for step, sum := range plan.NoteCheckpoints {
		r.noteCheckpoint(run, step, sum)
	}
	present := map[string]bool{}
	for _, a := range f.Agents {
		present[a.Pod.UID] = true
	}
	r.progress.Range(func(k, v any) bool {
		if v.(agentSeen).run == run.UID && !present[k.(string)] {
			r.progress.Delete(k)
		}
		return true
	})
}

// readAgentLog reads the last progress line of an agent pod's log and, when it names a
// checkpoint other than the one kept, or a reset, the step's checkpoint ConfigMap and, when
// that does not hold the checkpoint, the checkpoint from the log. The log of a pod that ended
// goes on past the line with the entrypoint's frames (the transcript, a framed output), which
// the read reaches past. A checkpoint the line names that is not in the log's end is an error
// (FindFrames), never an empty checkpoint: the one kept before stays.
func (r *RunReconciler) readAgentLog(ctx context.Context, run *ergonv1alpha1.Run, a *planner.AgentPodFacts) error {
	rc, err := r.Logs.Read(ctx, run.Namespace, a.Pod.Name, shared.StepContainer, wire.ProgressTail.Plus(a.Pod.Frames))
	if err != nil {
		return err
	}
	prog, err := wire.LastProgress(rc)
	_ = rc.Close()
	a.Progress = prog
	if prog == nil || err != nil {
		return err
	}
	sum := ""
	switch {
	case prog.Reset:
	case prog.Checkpoint == nil || prog.Checkpoint.SHA256 == a.Seen.Checkpoint:
		return nil
	default:
		sum = prog.Checkpoint.SHA256
	}
	cf, err := r.checkpointFacts(ctx, run, a.Step, sum)
	if err != nil {
		return err
	}
	a.Checkpoint = cf
	if prog.Reset || cf.Holds || cf.Conflict != "" {
		return nil
	}
	tail := wire.CheckpointTail(*prog.Checkpoint).Plus(a.Pod.Frames)
	found, err := r.findFrame(ctx, run, a.Pod, tail, *prog.Checkpoint)
	if err != nil && !errors.Is(err, context.Canceled) {
		// More lines came after the checkpoint than the progress tail allows for (a tool's or
		// a server's messages): read a wider end of the log once before giving up.
		found, err = r.findFrame(ctx, run, a.Pod, tail.Plus(checkpointWideTail), *prog.Checkpoint)
	}
	cf.Content = found
	return err
}

// checkpointFacts reads a step's checkpoint ConfigMap, for the checkpoint of digest sum ("" for
// a reset). A ConfigMap under the name that is not the Run's internal state is a conflict: it
// is left alone, and the next attempt starts afresh, for the runtime reads only the checkpoint
// whose digest the status records.
func (r *RunReconciler) checkpointFacts(ctx context.Context, run *ergonv1alpha1.Run, step, sum string) (*planner.CheckpointFacts, error) {
	cf := &planner.CheckpointFacts{ConfigMap: naming.CheckpointConfigMapName(run.Name, step)}
	cm := &corev1.ConfigMap{}
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: run.Namespace, Name: cf.ConfigMap}, cm)
	switch {
	case apierrors.IsNotFound(err):
		return cf, nil
	case err != nil:
		return nil, err
	}
	cf.Exists, cf.UID, cf.ResourceVersion = true, string(cm.UID), cm.ResourceVersion
	if _, err := shared.VerifyInternal(cm, checkpointWants(run, step, "")); err != nil {
		cf.Conflict = err.Error()
		return cf, nil
	}
	if sum == "" {
		cf.Holds = cm.Data[checkpointKey] == ""
	} else {
		_, err := shared.VerifyInternal(cm, checkpointWants(run, step, sum))
		cf.Holds = err == nil // kept by an earlier pass
	}
	return cf, nil
}

// keepCheckpoints writes the checkpoints the plan keeps (planner.ObserveAgents), before the
// pods that resume from them are created: a new ConfigMap, or an update of the very one
// gather read. One the API server refuses for good is lost: the step's status keeps the
// digest it recorded before, so the next attempt resumes from that one or starts afresh.
func (a *runActor) keepCheckpoints(ctx context.Context, run *ergonv1alpha1.Run, plan *planner.Plan) error {
	for _, w := range slices.Clone(plan.KeepCheckpoints) {
		err := a.put(ctx, stepState(run, w.Step, w.ConfigMap, checkpointKey, w.Content, w.UID, w.ResourceVersion))
		switch {
		case err == nil:
		case apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) || apierrors.IsNotFound(err):
			return &contendedError{what: "the checkpoint of step " + w.Step, err: err}
		case refused(err):
			plan.KeepLost(w)
			a.Recorder.Eventf(run, nil, corev1.EventTypeWarning, "CheckpointLost", "KeepCheckpoint",
				"Step %s cannot keep its checkpoint in ConfigMap %s: %v", w.Step, w.ConfigMap, err)
		default:
			return fmt.Errorf("keeping the checkpoint of step %s: %w", w.Step, err)
		}
	}
	return nil
}

// checkpointWideTail is what a second read of an agent pod's log adds to the tail it reads
// for a checkpoint, when the first did not reach its frame.
var checkpointWideTail = wire.Tail{Lines: 4096, Bytes: 8 << 20}

// findFrame reads the end of an agent pod's log and finds one framed value in it.
func (r *RunReconciler) findFrame(ctx context.Context, run *ergonv1alpha1.Run, pod planner.PodState, tail wire.Tail,
	want wire.Part) ([]byte, error) {
	rc, err := r.Logs.Read(ctx, run.Namespace, pod.Name, shared.StepContainer, tail)
	if err != nil {
		return nil, err
	}
	defer func() { _ = rc.Close() }()
	found, err := wire.FindFrames(rc, want)
	return found[want.SHA256], err
}

// checkpointWants is what a step's checkpoint ConfigMap must be: the Run's internal state,
// holding the checkpoint of digest sum (any, when sum is empty).
func checkpointWants(run *ergonv1alpha1.Run, step, sum string) shared.Want {
	want := shared.RunWants(run, "the checkpoint of step "+step, checkpointKey)
	want.SHA256 = sum
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

// notedCheckpoints are the digests noted for the Run's steps that its stored status does not
// record yet (planner.Facts.NotedCheckpoints); those it records are forgotten.
func (r *RunReconciler) notedCheckpoints(run *ergonv1alpha1.Run) map[string]string {
	v, ok := r.checkpoints.Load(client.ObjectKeyFromObject(run).String())
	if !ok {
		return nil
	}
	kept := v.(*keptCheckpoints)
	kept.mu.Lock()
	defer kept.mu.Unlock()
	if kept.run != run.UID {
		return nil
	}
	stored := map[string]string{}
	for _, s := range run.Status.Steps {
		stored[s.Name] = s.CheckpointSHA256
	}
	noted := map[string]string{}
	for step, sum := range kept.steps {
		if recorded, ok := stored[step]; ok && recorded == sum {
			delete(kept.steps, step)
			continue
		}
		noted[step] = sum
	}
	return noted
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
