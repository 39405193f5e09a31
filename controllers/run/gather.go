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
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/controllers/internal/shared"
	"github.com/ergon-dev/ergon/internal/agentspec"
	"github.com/ergon-dev/ergon/internal/cause"
	"github.com/ergon-dev/ergon/internal/compile"
	"github.com/ergon-dev/ergon/internal/naming"
	"github.com/ergon-dev/ergon/internal/outputs"
	"github.com/ergon-dev/ergon/internal/outputs/wire"
	"github.com/ergon-dev/ergon/internal/planner"
)

// KubeletLogs reads logs through the API server.
type KubeletLogs struct{ Clientset kubernetes.Interface }

// Read streams the last tail.Lines lines of a container's log, at most tail.Bytes of them: the
// kubelet sends no more, so a step that prints without end costs the manager only its frames.
func (k KubeletLogs) Read(ctx context.Context, namespace, pod, container string, tail wire.Tail) (io.ReadCloser, error) {
	return k.Clientset.CoreV1().Pods(namespace).GetLogs(pod, &corev1.PodLogOptions{
		Container: container, TailLines: &tail.Lines, LimitBytes: &tail.Bytes,
	}).Stream(ctx)
}

// gather reads everything the planner needs about a Run. It lists the Run's pods, child Runs
// and Gates through reader: the manager's cache, or the API server itself when a decision must
// not rest on a cache that may lag behind what the controller just created.
func (r *RunReconciler) gather(ctx context.Context, reader client.Reader, run *ergonv1alpha1.Run,
	scene *compile.Scene) (*planner.Facts, error) {
	f := &planner.Facts{
		Now: r.Clock.Now(), Run: run, Scene: scene,
		Pods: map[string][]planner.PodState{}, Children: map[string]planner.ChildState{},
		Gates: map[string]planner.GateState{}, Outputs: map[string]planner.Output{}, Values: map[string]string{},
		Conflicts: map[string]string{},
		PodBudget: -1, Depth: cause.Of(run).Depth,
		Limits: r.Config.Limits, Refused: r.refused.messages(client.ObjectKeyFromObject(run).String()),
		QuotaWaiting: r.refused.waiting(client.ObjectKeyFromObject(run).String()),
	}
	inRun := client.MatchingLabels{ergonv1alpha1.LabelRun: naming.LabelValue(run.Name)}
	pods := &corev1.PodList{}
	if err := reader.List(ctx, pods, client.InNamespace(run.Namespace), inRun); err != nil {
		return nil, err
	}
	phases := stepPhases(run)
	seen := map[string]bool{}
	for i := range pods.Items {
		pod := &pods.Items[i]
		if !shared.ControlledBy(pod, run.UID) {
			continue
		}
		if isToolPod(pod) {
			r.addToolPod(ctx, f, pod, phases)
			continue
		}
		state := podState(pod)
		step := pod.Labels[ergonv1alpha1.LabelStep]
		if un, ok := unitOf(pod); ok {
			addUnitPod(f, step, un, state)
		} else {
			f.Pods[step] = append(f.Pods[step], state)
			if failedAgentAttempt(run, scene, step, state) {
				// Why the agent failed is in its transcript: kept when the step fails for good.
				if out := r.readOutput(ctx, pod); out.Transcript != "" {
					f.Outputs[pod.Name] = planner.Output{Transcript: out.Transcript}
				}
			}
		}
		seen[pod.Name] = true
		if state.Phase == planner.PodSucceeded && !phases[step].Finished() {
			f.Outputs[pod.Name] = r.collect(ctx, run, pod)
		}
	}
	// A pod the status says is running but the cache does not have is either not in the
	// cache yet or gone; ask the API server which.
	for _, s := range run.Status.Steps {
		if !s.PodActive() || s.PodName == "" || seen[s.PodName] || s.Loop != nil {
			continue
		}
		pod := &corev1.Pod{}
		err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: run.Namespace, Name: s.PodName}, pod)
		switch {
		case apierrors.IsNotFound(err):
			if state, ok := r.refusedPod(run, s.PodName, s.Attempts); ok {
				f.Pods[s.Name] = append(f.Pods[s.Name], state)
				continue
			}
			f.Pods[s.Name] = append(f.Pods[s.Name], planner.PodState{Name: s.PodName, Attempt: s.Attempts, Phase: planner.PodGone,
				Reason: ergonv1alpha1.ReasonPodDeleted, Message: "the step's pod was deleted before it finished"})
		case err != nil:
			return nil, err
		case !shared.ControlledBy(pod, run.UID):
			// Someone else's pod under the attempt's name: the attempt never ran.
			f.Pods[s.Name] = append(f.Pods[s.Name], planner.PodState{Name: s.PodName, Attempt: s.Attempts, Phase: planner.PodGone,
				Reason: ergonv1alpha1.ReasonNameConflict, Message: notOwned("pod", s.PodName, run).Error()})
		default:
			f.Pods[s.Name] = append(f.Pods[s.Name], podState(pod))
		}
	}
	if err := r.gatherUnits(ctx, run, scene, f); err != nil {
		return nil, err
	}
	if err := r.gatherChildren(ctx, reader, run, f); err != nil {
		return nil, err
	}
	if err := r.gatherCalls(ctx, run, scene, f); err != nil {
		return nil, err
	}
	if err := r.gatherGates(ctx, reader, run, f); err != nil {
		return nil, err
	}
	f.NotedCheckpoints = r.notedCheckpoints(run)
	if err := r.gatherToolCalls(ctx, reader, run, scene, f); err != nil {
		return nil, err
	}
	if err := r.gatherNames(ctx, run, f); err != nil {
		return nil, err
	}
	if err := r.gatherConflicts(ctx, run, f); err != nil {
		return nil, err
	}
	if err := r.gatherValues(ctx, run, scene, phases, f); err != nil {
		return nil, err
	}
	if err := r.gatherWorkspace(ctx, run, scene, f); err != nil {
		return nil, err
	}
	return f, nil
}

// failedAgentAttempt says whether a step pod is an agent attempt that failed and that the
// stored status does not record as ended yet: its transcript is read once, in the pass that
// records the failure. An attempt that handed tool calls over has not failed.
func failedAgentAttempt(run *ergonv1alpha1.Run, scene *compile.Scene, step string, pod planner.PodState) bool {
	if s := scene.Steps[step]; s == nil || s.Spec.Agent == nil || pod.Phase != planner.PodFailed ||
		pod.Reason == agentspec.ReasonToolCallsPending {
		return false
	}
	for _, s := range run.Status.Steps {
		if s.Name != step {
			continue
		}
		return !s.Phase.Finished() && !slices.ContainsFunc(s.History, func(h ergonv1alpha1.AttemptStatus) bool {
			return h.Attempt == pod.Attempt
		})
	}
	return true
}

// stepPhases maps each step the stored status records to its phase; a step it does not
// record is Pending.
func stepPhases(run *ergonv1alpha1.Run) map[string]ergonv1alpha1.StepPhase {
	phases := make(map[string]ergonv1alpha1.StepPhase, len(run.Status.Steps))
	for _, s := range run.Status.Steps {
		phases[s.Name] = s.Phase
	}
	return phases
}

// podState is what the planner needs to know of a step pod; planner.ObservePod reads it.
func podState(pod *corev1.Pod) planner.PodState {
	return planner.ObservePod(pod, shared.StepContainer)
}

// collect reads the output a succeeded pod handed back and, for an agent step, its
// transcript. The log is read once, when either is framed in it. A transcript that cannot be
// found does not fail the step: the output is what later steps need. An output that needs the
// step's output ConfigMap fails the attempt when someone else's ConfigMap has its name.
func (r *RunReconciler) collect(ctx context.Context, run *ergonv1alpha1.Run, pod *corev1.Pod) planner.Output {
	out := r.readOutput(ctx, pod)
	if out.Err != "" {
		return out
	}
	arts, reason, err := r.collectArtifacts(ctx, run, pod)
	if err != nil {
		return planner.Output{Err: fmt.Sprintf("collecting the artifacts: %v", err), Reason: reason}
	}
	out.Artifacts = arts
	if !out.Stored && out.Transcript == "" {
		return out
	}
	name := naming.OutputConfigMapName(run.Name, pod.Labels[ergonv1alpha1.LabelStep])
	cm := &corev1.ConfigMap{}
	err = r.APIReader.Get(ctx, client.ObjectKey{Namespace: run.Namespace, Name: name}, cm)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return planner.Output{Err: fmt.Sprintf("collecting the output: %v", err)}
	case !shared.ControlledBy(cm, run.UID):
		// Someone else's: the output is stored under an alternate name (squatters.go),
		// unless every alternate is held too.
		if nf, err := r.resolveHeld(ctx, run, heldName{"ConfigMap", name}); err != nil {
			return planner.Output{Err: fmt.Sprintf("collecting the output: %v", err)}
		} else if nf.Use == "" {
			return planner.Output{Err: notOwned("ConfigMap", name, run).Error() + "; so are its alternate names",
				Reason: ergonv1alpha1.ReasonNameConflict}
		}
	default:
		if _, err := shared.VerifyInternal(cm, shared.RunWants(run, "the output", outputs.KeyOutput)); err != nil {
			return planner.Output{Err: err.Error(), Reason: ergonv1alpha1.ReasonNameConflict}
		}
	}
	return out
}

// logSlackLines and logSlackBytes are how much more than its frames a log read takes in.
const (
	logSlackLines = 256
	logSlackBytes = 64 << 10
)

// readOutput reads the output a succeeded pod handed back, from its termination message or
// its log.
func (r *RunReconciler) readOutput(ctx context.Context, pod *corev1.Pod) planner.Output {
	var message string
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name == shared.StepContainer && cs.State.Terminated != nil {
			message = cs.State.Terminated.Message
		}
	}
	rep, err := wire.ParseReport(message)
	if err != nil {
		return planner.Output{Err: err.Error()}
	}
	value, inline, err := rep.Inline()
	if err != nil {
		return planner.Output{Err: fmt.Sprintf("collecting the output: %v", err)}
	}
	var want []wire.Part
	if !inline {
		want = append(want, wire.Part{Size: rep.Size, SHA256: rep.SHA256})
	}
	if rep.Transcript != nil {
		want = append(want, *rep.Transcript)
	}
	if len(want) == 0 {
		return planner.Output{Value: string(value), Stored: len(value) > outputs.PreviewSize}
	}
	// The container log interleaves stderr with the frames on stdout, in whatever order the
	// runtime read its two pipes: lines a step wrote to stderr around them count for the
	// kubelet's tail too, so read with room for some, still bounded.
	tail := wire.TailOf(want...)
	tail.Lines += logSlackLines
	tail.Bytes += logSlackBytes
	logs, err := r.Logs.Read(ctx, pod.Namespace, pod.Name, shared.StepContainer, tail)
	if err != nil {
		return planner.Output{Err: fmt.Sprintf("collecting the output: %v", err)}
	}
	found, findErr := wire.FindFrames(logs, want...)
	_ = logs.Close()
	if !inline {
		var ok bool
		if value, ok = found[rep.SHA256]; !ok {
			return planner.Output{Err: fmt.Sprintf("collecting the output: %v", findErr)}
		}
	}
	out := planner.Output{Value: string(value), Stored: len(value) > outputs.PreviewSize}
	if t := rep.Transcript; t != nil {
		if transcript, ok := found[t.SHA256]; ok {
			out.Transcript, out.Usage = string(transcript), transcriptUsage(transcript)
		} else {
			log.FromContext(ctx).Error(findErr, "The agent's transcript is not in its log", "pod", pod.Name)
		}
	}
	return out
}

// transcriptUsage reads the usage summary of an agent transcript; nil if it has none.
func transcriptUsage(transcript []byte) *ergonv1alpha1.AgentUsage {
	var t struct {
		Usage *struct {
			Turns            int32  `json:"turns"`
			PromptTokens     int64  `json:"promptTokens"`
			CompletionTokens int64  `json:"completionTokens"`
			TotalTokens      int64  `json:"totalTokens"`
			Cost             string `json:"cost"`
		} `json:"usage"`
	}
	if json.Unmarshal(transcript, &t) != nil || t.Usage == nil {
		return nil
	}
	u := t.Usage
	return &ergonv1alpha1.AgentUsage{Turns: u.Turns, PromptTokens: u.PromptTokens,
		CompletionTokens: u.CompletionTokens, TotalTokens: u.TotalTokens, Cost: u.Cost}
}

// gatherChildren reads the Run's child Runs and their outputs.
func (r *RunReconciler) gatherChildren(ctx context.Context, reader client.Reader, run *ergonv1alpha1.Run, f *planner.Facts) error {
	children := &ergonv1alpha1.RunList{}
	if err := reader.List(ctx, children, client.InNamespace(run.Namespace),
		client.MatchingLabels{ergonv1alpha1.LabelParentRun: naming.LabelValue(run.Name)}); err != nil {
		return err
	}
	for i := range children.Items {
		child := &children.Items[i]
		if !shared.ControlledBy(child, run.UID) {
			continue
		}
		state := planner.ChildState{Phase: child.Status.Phase, UID: string(child.UID), Usage: child.Status.Usage}
		if c := meta.FindStatusCondition(child.Status.Conditions, ergonv1alpha1.ConditionSucceeded); c != nil {
			state.Message = c.Message
		}
		if names := slices.Sorted(maps.Keys(child.Status.Outputs)); len(names) > 0 {
			out := child.Status.Outputs[names[len(names)-1]]
			state.Output = &out
			value, err := r.values().OutputValue(ctx, child, &out)
			var conflict *shared.ConflictError
			switch {
			case errors.As(err, &conflict):
				f.Conflicts[out.Ref.ConfigMap] = conflict.Error()
			case err != nil:
				return err
			}
			state.Value = value
		}
		state.Name = child.Name
		f.Children[child.Name] = state
		if stands := shared.StandsFor(child); stands != child.Name {
			// An alternate (squatters.go): found by the name the planner gives it too.
			f.Children[stands] = state
		}
	}
	// A child the status records but the cache does not hold was refused (refusals.go),
	// is not in the cache yet, or was deleted: the API server tells the last two apart, so a
	// deleted child fails its step rather than leaving the Run waiting for it.
	key := client.ObjectKeyFromObject(run).String()
	for _, s := range run.Status.Steps {
		if _, seen := f.Children[s.ChildRun]; s.ChildRun == "" || s.Phase.Finished() || seen {
			continue
		}
		if ref, ok := r.refused.get(key, s.ChildRun); ok {
			f.Children[s.ChildRun] = planner.ChildState{Refused: ref.message, NotAuthorized: ref.notAuthorized}
			continue
		}
		err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: run.Namespace, Name: s.ChildRun}, &ergonv1alpha1.Run{})
		switch {
		case apierrors.IsNotFound(err):
			f.Children[s.ChildRun] = planner.ChildState{Phase: ergonv1alpha1.RunFailed, Message: "it was deleted before it finished"}
		case err != nil:
			return err
		}
	}
	return nil
}

// gatherGates reads the Run's Gates.
func (r *RunReconciler) gatherGates(ctx context.Context, reader client.Reader, run *ergonv1alpha1.Run, f *planner.Facts) error {
	gates := &ergonv1alpha1.GateList{}
	if err := reader.List(ctx, gates, client.InNamespace(run.Namespace),
		client.MatchingLabels{ergonv1alpha1.LabelRun: naming.LabelValue(run.Name)}); err != nil {
		return err
	}
	for i := range gates.Items {
		g := &gates.Items[i]
		if !shared.ControlledBy(g, run.UID) {
			continue
		}
		if !gateMatches(g, run) {
			f.Conflicts[g.Name] = gateMismatch(g, run).Error()
			continue
		}
		// What a decision means (one person's, a quorum's, a timeout's) is the Gate
		// controller's to say, in the Gate's status; the Run only reads it.
		state := planner.GateState{}
		if g.Status.Phase != "" && g.Status.Phase != ergonv1alpha1.GatePending {
			state = planner.GateState{Decided: true, Option: g.Status.Option, DecidedBy: g.Status.DecidedBy,
				TimedOut: g.Status.Phase == ergonv1alpha1.GateTimedOut}
			if d := g.Spec.Decision; d != nil {
				state.Comment = d.Comment
			}
			if v := g.Status.Values; v != nil {
				state.Values = string(v.Raw)
			}
		}
		f.Gates[g.Name] = state
		if stands := shared.StandsFor(g); stands != g.Name {
			// An alternate (squatters.go): found by the name the planner gives it too.
			f.Gates[stands] = state
		}
	}
	return nil
}

// gatherValues reads the whole outputs of finished steps, for the templates of the steps
// after them.
func (r *RunReconciler) gatherValues(ctx context.Context, run *ergonv1alpha1.Run, scene *compile.Scene,
	phases map[string]ergonv1alpha1.StepPhase, f *planner.Facts) error {
	for _, s := range run.Status.Steps {
		if s.Phase != ergonv1alpha1.StepSucceeded || s.Output == nil || s.Output.Ref == nil {
			continue
		}
		if !neededLater(scene, s.Name, phases) {
			continue
		}
		value, err := r.values().OutputValue(ctx, run, s.Output)
		var conflict *shared.ConflictError
		switch {
		case errors.As(err, &conflict):
			f.Conflicts[s.Output.Ref.ConfigMap] = conflict.Error()
			continue
		case err != nil:
			return err
		}
		f.Values[s.Name] = value
	}
	return nil
}

// neededLater reports whether a step that has not started yet depends on this one, or may
// read it as a finally step.
func neededLater(scene *compile.Scene, step string, phases map[string]ergonv1alpha1.StepPhase) bool {
	if finallyPending(scene, phases) {
		return true
	}
	for _, d := range scene.Dependents(step) {
		if p := phases[d]; p == "" || p == ergonv1alpha1.StepPending {
			return true
		}
		// A fan-out or loop renders its units while it runs.
		if ds := scene.Steps[d]; ds != nil && (ds.Spec.ForEach != nil || ds.Spec.Loop != nil) && !phases[d].Finished() {
			return true
		}
	}
	return false
}
