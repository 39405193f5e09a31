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
	"crypto/ed25519"
	"fmt"
	"slices"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/controllers/internal/shared"
	"github.com/ergon-dev/ergon/internal/authz"
	"github.com/ergon-dev/ergon/internal/cause"
	"github.com/ergon-dev/ergon/internal/compile"
	"github.com/ergon-dev/ergon/internal/naming"
	"github.com/ergon-dev/ergon/internal/planner"
	"github.com/ergon-dev/ergon/internal/stepcontract"
)

// act carries a plan out, before its status is written: outputs are stored first, so a
// status that points at a ConfigMap never points at nothing; children are created by
// deterministic names, so doing it twice creates nothing twice.
func (a *runActor) act(ctx context.Context, run *ergonv1alpha1.Run, scene *compile.Scene, f *planner.Facts, plan *planner.Plan,
	parts podParts) error {
	logger := log.FromContext(ctx)
	key := client.ObjectKeyFromObject(run).String()
	held := &heldNames{}
	if err := a.storeOutputs(ctx, run, plan, held); err != nil {
		return err
	}
	if err := a.keepCheckpoints(ctx, run, plan); err != nil {
		return err
	}
	if err := a.handAnswers(ctx, run, plan); err != nil {
		return err
	}
	if err := a.writeMemory(ctx, run, scene, plan); err != nil {
		return err
	}
	if err := a.storeToolResults(ctx, run, plan); err != nil {
		return err
	}
	if err := a.actOnLease(ctx, run, f, plan); err != nil {
		return err
	}
	kept := map[string]*ergonv1alpha1.StepStatus{}
	for i := range plan.Status.Steps {
		kept[plan.Status.Steps[i].Name] = &plan.Status.Steps[i]
	}
	// A fan-out starts many pods at once; create them side by side.
	pods, _ := errgroup.WithContext(ctx)
	pods.SetLimit(podCreators)
	for _, req := range plan.Pods {
		pods.Go(func() error {
			return a.createStepPod(ctx, run, scene, req, parts, kept[req.Step.Name], plan.MemoryPin, held)
		})
	}
	if err := pods.Wait(); err != nil {
		return err
	}
	if err := a.createToolPods(ctx, run, f, plan, parts, held); err != nil {
		return err
	}
	for _, req := range plan.Children {
		logger.V(1).Info("Creating child Run", "step", req.Step, "childRun", req.Name)
		child := childRun(run, req, f.Depth)
		shared.MarkStandsFor(child, req.StandsFor)
		err := a.authorizeChild(ctx, run, child)
		if err == nil {
			err = a.createHeld(ctx, shared.KindRun, child, held)
		}
		if refused(err) || isNotAuthorized(err) {
			reason := ergonv1alpha1.ReasonRunRefused
			if isNotAuthorized(err) {
				reason = ergonv1alpha1.ReasonNotAuthorized
			}
			a.Recorder.Eventf(run, nil, corev1.EventTypeWarning, reason, "CreateRun",
				"Step %s cannot create its child Run %s: %v", req.Step, req.Name, err)
			a.refused.add(key, req.Name, err, a.Clock.Now(), nil)
			continue
		}
		if err != nil {
			return err
		}
		if child.UID != "" { // created now; a name found held is created on a later pass
			a.recordChild(run, child)
		}
	}
	for _, req := range plan.Gates {
		logger.V(1).Info("Creating Gate", "step", req.Step.Name, "gate", req.Name)
		if err := a.createGate(ctx, run, scene, req, held); err != nil {
			return err
		}
	}
	// Only what the Run owns is stopped: a pod or Run under a name the Run uses may be
	// someone else's (see ownership.go). The UID precondition makes sure of it.
	owned := podUIDs(f)
	// A Run whose fan-in ends deletes many pods at once; one round trip each, side by side.
	deletes, _ := errgroup.WithContext(ctx)
	deletes.SetLimit(podCreators)
	for _, name := range slices.Concat(plan.DeletePods, plan.CleanupPods) {
		a.refused.drop(key, name) // a pod waiting for quota waits no more
		deletes.Go(func() error { return a.deletePod(ctx, run.Namespace, name, owned[name]) })
	}
	if err := deletes.Wait(); err != nil {
		return err
	}
	// After the deletions, which forget a waiting pod whose attempt this plan ends.
	if err := a.retryQuota(ctx, run, f, plan); err != nil {
		return err
	}
	for _, name := range plan.CancelChildren {
		child, ok := f.Children[name]
		if !ok || child.UID == "" {
			continue // never created, or not the Run's
		}
		if child.Name != "" {
			name = child.Name // an alternate the planner knows by its predictable name
		}
		// metadata.uid is immutable: a Run that replaced the child under its name refuses
		// the patch as Invalid instead of being cancelled.
		patch := fmt.Sprintf(`{"metadata":{"uid":%q},"spec":{"cancel":true}}`, child.UID)
		obj := &ergonv1alpha1.Run{}
		obj.Name, obj.Namespace = name, run.Namespace
		if err := a.Patch(ctx, obj, client.RawPatch(types.MergePatchType, []byte(patch))); client.IgnoreNotFound(err) != nil &&
			!apierrors.IsInvalid(err) {
			return err
		}
	}
	return held.err()
}

// createStepPod creates the pod of one attempt (or unit) of a step, once it is authorized; an
// agent pod pins the digests of the internal state it mounts (pinAgentState).
func (a *runActor) createStepPod(ctx context.Context, run *ergonv1alpha1.Run, scene *compile.Scene,
	req planner.PodRequest, parts podParts, kept *ergonv1alpha1.StepStatus, memoryPin string, held *heldNames) error {
	log.FromContext(ctx).V(1).Info("Creating pod", "step", req.Step.Name, "attempt", req.Attempt, "pod", req.Name)
	pod := stepPod(run, scene, req, parts)
	shared.MarkStandsFor(pod, req.StandsFor)
	labelUnit(pod, req.Unit)
	pinAgentState(pod, kept, memoryPin)
	if planner.AsksPeople(req.Step) {
		a.pinAnswerKey(pod)
	}
	ws := parts.workspace
	err := a.authorizePod(ctx, run, pod, ws)
	if err == nil && ws != nil {
		// The Workspace's write lease names the attempt's pod by its predictable name.
		err = a.create(ctx, pod)
	} else if err == nil {
		err = a.createHeld(ctx, "pod", pod, held)
	}
	if refused(err) || isNotAuthorized(err) {
		// Not authorized, or the pod is invalid, or a LimitRange or Pod Security forbids it:
		// its attempt fails on the next pass; a full quota makes it wait (refusals.go).
		// The rest of the Run goes on. The planner tells a wait for quota (ExceededQuota).
		a.podRefused(run, client.ObjectKeyFromObject(run).String(), pod, err,
			fmt.Sprintf("Step %s cannot create its pod %s", req.Step.Name, req.Name))
		return nil
	}
	return err
}

// createGate creates a gate step's Gate. A tool call's Gate keeps its name: it is shared with
// the call's pod or child Run (naming.ToolCallName).
func (a *runActor) createGate(ctx context.Context, run *ergonv1alpha1.Run, scene *compile.Scene, req planner.GateRequest,
	held *heldNames) error {
	gate := gateOf(run, req)
	shared.MarkStandsFor(gate, req.StandsFor)
	// A Gate made now has the UID the API server gave it; one found made already has none.
	defer func() {
		if gate.UID != "" && scene.Spec.Notify != nil {
			a.notifyGate(run, gate, scene.Spec.Notify.Channel)
		}
	}()
	if req.ToolCall != "" {
		return a.create(ctx, gate)
	}
	return a.createHeld(ctx, "Gate", gate, held)
}

// put writes a ConfigMap act built whole: it creates one that has no resourceVersion, and
// replaces the one gather read otherwise, at that resourceVersion (and UID, when set), so that
// one changed or replaced since is never written over.
func (a *runActor) put(ctx context.Context, cm *corev1.ConfigMap) error {
	if cm.ResourceVersion == "" {
		return a.Create(ctx, cm)
	}
	return a.Update(ctx, cm)
}

// podCreators bounds the pod creations of one reconcile that run at once.
const podCreators = 64

// create creates a child; one that exists already is what was wanted.
func (a *runActor) create(ctx context.Context, obj client.Object) error {
	if err := a.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// cleanupFinished deletes the pods of a finished Run, but those of failed attempts when the
// manager keeps them (planner.EndedPods decides).
func (r *RunReconciler) cleanupFinished(ctx context.Context, run *ergonv1alpha1.Run) error {
	list := &corev1.PodList{}
	if err := r.List(ctx, list, client.InNamespace(run.Namespace),
		client.MatchingLabels{ergonv1alpha1.LabelRun: naming.LabelValue(run.Name)}); err != nil {
		return err
	}
	uids := map[string]string{}
	var pods []planner.PodState
	for _, p := range list.Items {
		if shared.ControlledBy(&p, run.UID) && p.DeletionTimestamp.IsZero() {
			pods = append(pods, planner.PodState{Name: p.Name, UID: string(p.UID), Phase: planner.PodRunning})
			uids[p.Name] = string(p.UID)
		}
	}
	for _, name := range planner.EndedPods(&run.Status, map[string][]planner.PodState{"": pods}, nil, r.Config.KeepFailedPods) {
		if err := r.actor().deletePod(ctx, run.Namespace, name, uids[name]); err != nil {
			return err
		}
	}
	return nil
}

// podUIDs maps the names of the Run's pods that exist to their UIDs.
func podUIDs(f *planner.Facts) map[string]string {
	uids := map[string]string{}
	for _, states := range f.Pods {
		for _, p := range states {
			if p.UID != "" {
				uids[p.Name] = p.UID
			}
		}
	}
	for _, s := range f.ToolPods {
		if s.Pod.UID != "" {
			uids[s.Pod.Name] = s.Pod.UID
		}
	}
	for _, byUnit := range f.UnitPods {
		for _, states := range byUnit {
			for _, p := range states {
				if p.UID != "" {
					uids[p.Name] = p.UID
				}
			}
		}
	}
	return uids
}

// deletePod deletes the pod name if it is still the one with uid; with no uid, the pod is not
// known to be the Run's, and is left alone.
func (a *runActor) deletePod(ctx context.Context, namespace, name, uid string) error {
	if uid == "" {
		return nil
	}
	pod := &corev1.Pod{}
	pod.Name, pod.Namespace = name, namespace
	u := types.UID(uid)
	err := a.Delete(ctx, pod, client.Preconditions{UID: &u})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil // gone, or replaced by another pod that is not ours to delete
	}
	return err
}

// actClient is all that act may ask of the API server: writes. It has no Get or List, so
// act carries out what the plan decided and cannot decide anything on a read of its own.
type actClient interface {
	Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error
	Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error
	Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error
	Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error
}

// writeOnly hides a client behind actClient, so that act cannot turn it back into a reader
// by a type assertion either.
type writeOnly struct{ c client.Client }

func (w writeOnly) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	return w.c.Create(ctx, obj, opts...)
}

func (w writeOnly) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	return w.c.Update(ctx, obj, opts...)
}

func (w writeOnly) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	return w.c.Patch(ctx, obj, patch, opts...)
}

func (w writeOnly) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	return w.c.Delete(ctx, obj, opts...)
}

// runActor carries a Run's plan out (act): the writes it lists, each effect authorized first.
// It holds what act needs of the reconciler and nothing that reads: act carries out what the
// plan decided, and cannot decide anything on a read of its own.
type runActor struct {
	actClient
	Recorder  recorder.EventRecorder
	Clock     clock.PassiveClock
	Notifier  Notifier
	refused   *refusals
	authz     *authz.Authorizer
	calls     *cause.Ledger
	answerKey ed25519.PrivateKey
}

// actor is the reconciler's runActor.
func (r *RunReconciler) actor() *runActor {
	return &runActor{actClient: writeOnly{r.Client},
		Recorder: r.Recorder, Clock: r.Clock, Notifier: r.Notifier, refused: &r.refused, authz: r.authorizer(),
		calls: r.ledger(), answerKey: r.signingKey()}
}

// pinAgentState pins, in an agent pod's environment, the digests of the internal state the
// kubelet mounts into it by name: the step's checkpoint and tool results as its status
// records them, and the memory as the plan pins it (planner.DecideMemory). The pod spec
// cannot change once created, so neither can the pins.
func pinAgentState(pod *corev1.Pod, s *ergonv1alpha1.StepStatus, memory string) {
	c := &pod.Spec.Containers[0]
	var checkpoint, results string
	if s != nil {
		checkpoint, results = s.CheckpointSHA256, s.ToolResultsSHA256
	}
	pins := map[string]struct{ name, value string }{
		stepcontract.EnvCheckpoint:  {stepcontract.EnvCheckpointSHA256, checkpoint},
		stepcontract.EnvToolResults: {stepcontract.EnvToolResultsSHA256, results},
	}
	var add []corev1.EnvVar
	for _, e := range c.Env {
		if pin, ok := pins[e.Name]; ok {
			add = append(add, corev1.EnvVar{Name: pin.name, Value: pin.value})
		}
	}
	if slices.ContainsFunc(pod.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == memoryVolumeName }) {
		add = append(add, corev1.EnvVar{Name: stepcontract.EnvMemorySHA256, Value: memory})
	}
	c.Env = append(c.Env, add...)
}

// stepState is a ConfigMap of a step's internal state under one key (its checkpoint, its tool
// results): owned by the Run, labelled as the step's. uid and version are those of the one
// gather read, empty for a new one (runActor.put).
func stepState(run *ergonv1alpha1.Run, step, name, key string, content []byte, uid, version string) *corev1.ConfigMap {
	return shared.MarkInternal(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: run.Namespace,
		UID: types.UID(uid), ResourceVersion: version,
		Labels: childLabels(run, step), OwnerReferences: []metav1.OwnerReference{ownerRef(run)}},
		Data: map[string]string{key: string(content)}})
}
