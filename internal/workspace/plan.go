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

package workspace

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/health"
)

// Facts is what the Workspace controller reads before it decides.
type Facts struct {
	Workspace *ergonv1alpha1.Workspace
	Now       time.Time
	// EntrypointImage is Ergon's image, whose entrypoint the workspace pod runs.
	EntrypointImage string

	// Pod, Claim and Policy are the objects of the Workspace's name, nil when absent.
	Pod    *corev1.Pod
	Claim  *corev1.PersistentVolumeClaim
	Policy *networkingv1.NetworkPolicy

	// ActiveSteps counts the pods labelled for the Workspace, other than its own, that have
	// not terminated: steps working on its volume.
	ActiveSteps int
	// LastStepFinish is when the last of the terminated pods labelled for it finished.
	LastStepFinish time.Time
}

// Event is an Event to announce once the status is written.
type Event struct {
	Warning         bool
	Reason, Message string
}

// Plan is what to do for a Workspace, and its status afterwards.
type Plan struct {
	AddFinalizer, RemoveFinalizer bool
	// CreateClaim creates the claim Claim builds.
	CreateClaim bool
	// DeleteClaim deletes the Workspace's claim (reclaimPolicy Delete).
	DeleteClaim bool
	// CreatePod creates the pod Pod builds; DeletePod deletes the existing one.
	CreatePod, DeletePod bool
	// Policy is the NetworkPolicy to create (when none exists) or to update; DeletePolicy
	// deletes the existing one.
	Policy       *networkingv1.NetworkPolicy
	DeletePolicy bool

	Status       ergonv1alpha1.WorkspaceStatus
	Events       []Event
	RequeueAfter time.Duration
}

// failingWaits are the reasons a container waits for that need a change to start: the
// workspace is Failed while one holds, and comes back when the kubelet gets past it.
var failingWaits = []string{"ErrImagePull", "ImagePullBackOff", "InvalidImageName",
	"CreateContainerConfigError", "CreateContainerError", "CrashLoopBackOff", "RunContainerError"}

// Decide plans one reconcile of a Workspace. It is pure: the controller gathers the facts,
// carries out the plan and writes Status once.
func Decide(f Facts) Plan {
	ws := f.Workspace
	now := metav1.NewTime(f.Now)
	p := Plan{Status: *ws.Status.DeepCopy()}
	p.Status.ObservedGeneration = ws.Generation
	p.Status.ClaimName = Claim(ws).Name
	if !ws.DeletionTimestamp.IsZero() {
		decideDelete(f, &p)
		return p
	}
	if !slices.Contains(ws.Finalizers, ergonv1alpha1.FinalizerWorkspaceVolume) {
		p.AddFinalizer = true
	}
	if reason, message, going := conflict(f); reason != "" {
		p.Status.PodName = ""
		if going {
			// Most likely the objects of a Workspace of the same user deleted just now.
			p.setPhase(ws, now, ergonv1alpha1.WorkspacePending, metav1.ConditionFalse, ergonv1alpha1.ReasonPodPending,
				"waiting for the objects of another Workspace of the same user to go: "+message)
			p.RequeueAfter = conflictRecheck / 10
			return p
		}
		p.setPhase(ws, now, ergonv1alpha1.WorkspaceFailed, metav1.ConditionFalse, reason, message)
		p.RequeueAfter = conflictRecheck
		return p
	}
	if f.Claim == nil {
		p.CreateClaim = true
	}
	if want := NetworkPolicy(ws); f.Policy == nil || !equality.Semantic.DeepEqual(f.Policy.Spec, want.Spec) {
		p.Policy = want
	}

	activity := lastActivity(f)
	p.Status.LastActivityTime = &metav1.Time{Time: activity}
	wanted := ws.Spec.IdleTimeout == nil || f.ActiveSteps > 0 || f.Now.Sub(activity) < ws.Spec.IdleTimeout.Duration
	p.decidePod(f, wanted)
	if wanted && ws.Spec.IdleTimeout != nil {
		idle := ws.Spec.IdleTimeout.Duration
		if f.ActiveSteps > 0 {
			// Steps leave no trace once their pods are gone: note their activity now and then.
			p.RequeueAfter = min(idle/4, 5*time.Minute)
		} else {
			p.RequeueAfter = activity.Add(idle).Sub(f.Now)
		}
	}
	return p
}

// conflictRecheck is how often a Workspace that cannot use the objects of its name looks
// again: their owner may go without anything the controller watches changing.
const conflictRecheck = time.Minute

// conflict says why the Workspace cannot use the objects of its name, if it cannot: another
// Workspace of the same user in the namespace has them, or someone else made them. going
// says the objects in the way are being deleted.
func conflict(f Facts) (reason, message string, going bool) {
	ws := f.Workspace
	switch {
	case f.Pod != nil && !controlledBy(f.Pod, ws):
		return ergonv1alpha1.ReasonNameConflict, fmt.Sprintf("pod %s exists and is not this Workspace's; "+
			"is there another Workspace of the same user in namespace %s?", f.Pod.Name, ws.Namespace), !f.Pod.DeletionTimestamp.IsZero()
	case f.Policy != nil && !controlledBy(f.Policy, ws):
		return ergonv1alpha1.ReasonNameConflict, fmt.Sprintf("NetworkPolicy %s exists and is not this Workspace's; "+
			"is there another Workspace of the same user in namespace %s?", f.Policy.Name, ws.Namespace), !f.Policy.DeletionTimestamp.IsZero()
	case f.Claim != nil && f.Claim.Labels[ergonv1alpha1.LabelManagedBy] != ergonv1alpha1.ManagedByErgon:
		return ergonv1alpha1.ReasonClaimConflict, fmt.Sprintf("PersistentVolumeClaim %s exists and Ergon did not create it; "+
			"delete or rename it to let the Workspace create its own", f.Claim.Name), false
	case f.Claim != nil && !f.Claim.DeletionTimestamp.IsZero():
		return ergonv1alpha1.ReasonVolumeLost, fmt.Sprintf("PersistentVolumeClaim %s is being deleted; "+
			"a new one is made once it is gone", f.Claim.Name), true
	case f.Claim != nil && f.Claim.Status.Phase == corev1.ClaimLost:
		return ergonv1alpha1.ReasonVolumeLost, fmt.Sprintf("PersistentVolumeClaim %s lost its volume %s",
			f.Claim.Name, f.Claim.Spec.VolumeName), false
	}
	return "", "", false
}

func controlledBy(obj metav1.Object, ws *ergonv1alpha1.Workspace) bool {
	ref := metav1.GetControllerOf(obj)
	return ref != nil && ref.UID == ws.UID
}

// lastActivity is the last time the Workspace was used: now while steps work on it, else the
// latest of its recorded activity, its last step's end, an explicit touch (never later than
// now, so a clock ahead cannot keep it up) and its creation.
func lastActivity(f Facts) time.Time {
	ws := f.Workspace
	last := ws.CreationTimestamp.Time
	if t := ws.Status.LastActivityTime; t != nil && t.After(last) {
		last = t.Time
	}
	if f.ActiveSteps > 0 {
		// To the minute, so steps that come and go do not rewrite the status each time.
		if now := f.Now.Truncate(time.Minute); now.After(last) {
			return now
		}
		return last
	}
	if f.LastStepFinish.After(last) {
		last = f.LastStepFinish
	}
	if touch, err := time.Parse(time.RFC3339, ws.Annotations[ergonv1alpha1.AnnotationWorkspaceTouch]); err == nil && touch.After(last) {
		last = touch
		if last.After(f.Now) {
			last = f.Now
		}
	}
	return last.Truncate(time.Second)
}

// decidePod decides the workspace pod's fate and the phase that follows from it.
func (p *Plan) decidePod(f Facts, wanted bool) {
	ws, pod := f.Workspace, f.Pod
	now := metav1.NewTime(f.Now)
	// An Idle Workspace is Ready: it is as its spec asks, and starts again on use. (kstatus
	// counts a Ready=False object as in progress, which would hold up a GitOps sync forever.)
	idle := func(message string) {
		p.Status.PodName = ""
		p.setPhase(ws, now, ergonv1alpha1.WorkspaceIdle, metav1.ConditionTrue, ergonv1alpha1.ReasonIdle, message)
	}
	if pod == nil {
		if !wanted {
			idle(fmt.Sprintf("stopped after %s without use; the volume stays, and the next step or touch starts it again", ws.Spec.IdleTimeout.Duration))
			return
		}
		p.CreatePod = true
		p.Status.PodName = Pod(ws, f.EntrypointImage).Name
		if ws.Status.Phase == ergonv1alpha1.WorkspaceIdle {
			p.Events = append(p.Events, Event{Reason: "Waking", Message: fmt.Sprintf("Workspace %s is in use again: starting pod %s", ws.Name, p.Status.PodName)})
		}
		p.setPhase(ws, now, ergonv1alpha1.WorkspacePending, metav1.ConditionFalse, ergonv1alpha1.ReasonPodPending,
			fmt.Sprintf("creating pod %s", p.Status.PodName))
		return
	}
	p.Status.PodName = pod.Name
	switch {
	case !pod.DeletionTimestamp.IsZero() && !wanted:
		idle(fmt.Sprintf("stopping pod %s after %s without use; the volume stays", pod.Name, ws.Spec.IdleTimeout.Duration))
	case !pod.DeletionTimestamp.IsZero():
		p.setPhase(ws, now, ergonv1alpha1.WorkspacePending, metav1.ConditionFalse, ergonv1alpha1.ReasonPodReplacing,
			fmt.Sprintf("waiting for pod %s to stop before starting it again on the same volume", pod.Name))
	case !wanted:
		p.DeletePod = true
		p.Events = append(p.Events, Event{Reason: "Stopping", Message: fmt.Sprintf(
			"Workspace %s was not used for %s: deleting pod %s; the volume stays", ws.Name, ws.Spec.IdleTimeout.Duration, pod.Name)})
		idle(fmt.Sprintf("stopping pod %s after %s without use; the volume stays", pod.Name, ws.Spec.IdleTimeout.Duration))
	case pod.Annotations[AnnotationPodSpecHash] != Pod(ws, f.EntrypointImage).Annotations[AnnotationPodSpecHash]:
		p.DeletePod = true
		p.Events = append(p.Events, Event{Reason: "Replacing", Message: fmt.Sprintf(
			"Workspace %s changed (image %s): replacing pod %s; the volume stays", ws.Name, ws.Spec.Image, pod.Name)})
		p.setPhase(ws, now, ergonv1alpha1.WorkspacePending, metav1.ConditionFalse, ergonv1alpha1.ReasonPodReplacing,
			fmt.Sprintf("replacing pod %s with one of the current spec; the volume stays", pod.Name))
	case pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded:
		p.DeletePod = true
		p.Events = append(p.Events, Event{Warning: true, Reason: "PodStopped", Message: fmt.Sprintf(
			"pod %s of Workspace %s stopped (%s %s): starting it again", pod.Name, ws.Name, pod.Status.Reason, pod.Status.Message)})
		p.setPhase(ws, now, ergonv1alpha1.WorkspacePending, metav1.ConditionFalse, ergonv1alpha1.ReasonPodPending,
			fmt.Sprintf("pod %s stopped (%s); starting it again", pod.Name, pod.Status.Phase))
	default:
		p.observePod(ws, pod, now)
	}
}

// observePod sets the phase of a Workspace from its live pod.
func (p *Plan) observePod(ws *ergonv1alpha1.Workspace, pod *corev1.Pod, now metav1.Time) {
	if reason, message := podFailure(pod); reason != "" {
		p.setPhase(ws, now, ergonv1alpha1.WorkspaceFailed, metav1.ConditionFalse, ergonv1alpha1.ReasonPodFailed,
			fmt.Sprintf("pod %s cannot run: %s: %s", pod.Name, reason, message))
		return
	}
	ready := meta.FindStatusCondition(podConditions(pod), string(corev1.PodReady))
	if pod.Status.Phase == corev1.PodRunning && ready != nil && ready.Status == metav1.ConditionTrue {
		p.setPhase(ws, now, ergonv1alpha1.WorkspaceRunning, metav1.ConditionTrue, ergonv1alpha1.ReasonPodRunning,
			fmt.Sprintf("pod %s is running with %s mounted at %s", pod.Name, p.Status.ClaimName, MountPath))
		return
	}
	message := fmt.Sprintf("pod %s is starting", pod.Name)
	if sched := meta.FindStatusCondition(podConditions(pod), string(corev1.PodScheduled)); sched != nil &&
		sched.Status == metav1.ConditionFalse && sched.Message != "" {
		message = fmt.Sprintf("pod %s is not scheduled yet: %s", pod.Name, sched.Message)
	}
	p.setPhase(ws, now, ergonv1alpha1.WorkspacePending, metav1.ConditionFalse, ergonv1alpha1.ReasonPodPending, message)
}

// podFailure is the reason, if any, a container of the pod waits for that needs a change.
func podFailure(pod *corev1.Pod) (string, string) {
	for _, cs := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for _, c := range cs {
			if w := c.State.Waiting; w != nil && slices.Contains(failingWaits, w.Reason) {
				return w.Reason, strings.TrimSpace(fmt.Sprintf("container %s: %s", c.Name, w.Message))
			}
		}
	}
	return "", ""
}

// podConditions are a pod's conditions in metav1 form, to use the meta helpers.
func podConditions(pod *corev1.Pod) []metav1.Condition {
	out := make([]metav1.Condition, 0, len(pod.Status.Conditions))
	for _, c := range pod.Status.Conditions {
		out = append(out, metav1.Condition{Type: string(c.Type), Status: metav1.ConditionStatus(c.Status), Reason: c.Reason, Message: c.Message})
	}
	return out
}

// decideDelete applies the reclaimPolicy of a Workspace being deleted: the pod and policy go; Delete
// deletes the claim (which goes once no pod uses it), Retain keeps it for the next Workspace
// of the same user. Then the finalizer goes.
func decideDelete(f Facts, p *Plan) {
	ws := f.Workspace
	if !slices.Contains(ws.Finalizers, ergonv1alpha1.FinalizerWorkspaceVolume) {
		return
	}
	p.RemoveFinalizer = true
	// The pod goes now rather than when the garbage collector comes to it, so a new Workspace
	// of the same user can start on the volume soon.
	if f.Pod != nil && controlledBy(f.Pod, ws) && f.Pod.DeletionTimestamp.IsZero() {
		p.DeletePod = true
	}
	p.DeletePolicy = f.Policy != nil && controlledBy(f.Policy, ws)
	if ws.Spec.ReclaimPolicy != ergonv1alpha1.ReclaimDelete {
		if f.Claim != nil {
			p.Events = append(p.Events, Event{Reason: "VolumeRetained", Message: fmt.Sprintf(
				"Workspace %s deleted: keeping PersistentVolumeClaim %s (reclaimPolicy Retain) for the next Workspace of the same user", ws.Name, f.Claim.Name)})
		}
		return
	}
	if f.Claim != nil && f.Claim.Labels[ergonv1alpha1.LabelManagedBy] == ergonv1alpha1.ManagedByErgon && f.Claim.DeletionTimestamp.IsZero() {
		p.DeleteClaim = true
		p.Events = append(p.Events, Event{Reason: "VolumeDeleted", Message: fmt.Sprintf(
			"Workspace %s deleted: deleting PersistentVolumeClaim %s (reclaimPolicy Delete)", ws.Name, f.Claim.Name)})
	}
}

// setPhase sets the phase and the Ready condition, the kstatus conditions that follow from
// them, and announces a change of phase or reason.
func (p *Plan) setPhase(ws *ergonv1alpha1.Workspace, now metav1.Time, phase ergonv1alpha1.WorkspacePhase,
	ready metav1.ConditionStatus, reason, message string) {
	before := meta.FindStatusCondition(ws.Status.Conditions, ergonv1alpha1.ConditionReady)
	p.Status.Phase = phase
	meta.SetStatusCondition(&p.Status.Conditions, metav1.Condition{Type: ergonv1alpha1.ConditionReady, Status: ready,
		Reason: reason, Message: message, ObservedGeneration: ws.Generation, LastTransitionTime: now})
	health.Set(&p.Status.Conditions, ws.Generation, now, health.Workspace(&p.Status))
	if ws.Status.Phase == phase && before != nil && before.Reason == reason {
		return
	}
	switch phase {
	case ergonv1alpha1.WorkspaceRunning:
		p.Events = append(p.Events, Event{Reason: "Running", Message: fmt.Sprintf("Workspace %s: %s", ws.Name, message)})
	case ergonv1alpha1.WorkspaceFailed:
		p.Events = append(p.Events, Event{Warning: true, Reason: reason, Message: fmt.Sprintf("Workspace %s: %s", ws.Name, message)})
	}
}
