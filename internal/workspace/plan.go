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
	"github.com/ergon-dev/ergon/internal/naming"
)

// Facts is what the Workspace controller reads before it decides.
type Facts struct {
	Workspace *ergonv1alpha1.Workspace
	Now       time.Time
	// EntrypointImage is Ergon's image, whose entrypoint the workspace pod runs.
	EntrypointImage string

	// Pod and Policy are the objects under the Workspace's names (ObjectName), Claim the one
	// under ClaimName; nil when absent. Whoever made them: Decide tells whether they are the
	// Workspace's.
	Pod    *corev1.Pod
	Claim  *corev1.PersistentVolumeClaim
	Policy *networkingv1.NetworkPolicy

	// LegacyPod and LegacyPolicy are the pod and NetworkPolicy an earlier version made for the
	// Workspace under naming.LegacyWorkspaceName; nil when absent or when the Workspace does
	// not control them.
	LegacyPod    *corev1.Pod
	LegacyPolicy *networkingv1.NetworkPolicy
	// LegacySteps counts the step pods an earlier version bound to the Workspace (labelled
	// with its name, not its UID) that have not terminated: LegacyPolicy stays while they run.
	LegacySteps int

	// ActiveSteps counts the step pods bound to the Workspace (Run-controlled pods labelled
	// with its UID, or LegacySteps) that have not terminated: steps working on its volume.
	ActiveSteps int
	// LastStepFinish is when the last of the terminated step pods bound to it finished.
	LastStepFinish time.Time
	// Artifacts is Ergon's artifact endpoint, which the step pods bound to the Workspace may
	// reach whatever its egress; nil when the manager keeps no artifacts.
	Artifacts *ArtifactEndpoint
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
	// OwnClaim makes the Workspace the claim's controlling owner (reclaimPolicy Delete), so
	// the garbage collector agrees with the finalizer; ReleaseClaim takes that owner
	// reference off (Retain), once the status records the claim's UID.
	OwnClaim, ReleaseClaim bool
	// DeleteClaim deletes the Workspace's claim (reclaimPolicy Delete).
	DeleteClaim bool
	// CreatePod creates the pod Pod builds; DeletePod deletes the existing one;
	// DeleteLegacyPod deletes LegacyPod.
	CreatePod, DeletePod, DeleteLegacyPod bool
	// Policy is the NetworkPolicy to create (when none exists) or to update; DeletePolicy
	// deletes the existing one.
	Policy       *networkingv1.NetworkPolicy
	DeletePolicy bool
	// LegacyPolicySpec, when set, is the spec to give LegacyPolicy; DeleteLegacyPolicy
	// deletes it.
	LegacyPolicySpec   *networkingv1.NetworkPolicySpec
	DeleteLegacyPolicy bool

	Status       ergonv1alpha1.WorkspaceStatus
	Events       []Event
	RequeueAfter time.Duration
}

// failingWaits are the reasons a container waits for that need a change to start: the
// workspace is Failed while one holds, and comes back when the kubelet gets past it.
var failingWaits = []string{"ErrImagePull", "ImagePullBackOff", "InvalidImageName",
	"CreateContainerConfigError", "CreateContainerError", "CrashLoopBackOff", "RunContainerError"}

// Decide plans one reconcile of a Workspace. It is pure: the controller gathers the facts,
// carries out the plan and writes Status once. It uses, changes and deletes only what is the
// Workspace's: what it controls by UID, and the claim whose UID its status records.
func Decide(f Facts) Plan {
	ws := f.Workspace
	now := metav1.NewTime(f.Now)
	p := Plan{Status: *ws.Status.DeepCopy()}
	p.Status.ObservedGeneration = ws.Generation
	if !ws.DeletionTimestamp.IsZero() {
		decideDelete(f, &p)
		return p
	}
	if !slices.Contains(ws.Finalizers, ergonv1alpha1.FinalizerWorkspaceVolume) {
		p.AddFinalizer = true
	}
	if reason, message, going := conflict(f); reason != "" {
		p.Status.PodName = ""
		if f.Claim != nil && ownsClaim(ws, f.Claim) {
			// Recorded even now: a claim an earlier version made is taken over once, whatever
			// else is in the way.
			p.Status.ClaimName, p.Status.ClaimUID = f.Claim.Name, f.Claim.UID
		}
		if going {
			p.setPhase(ws, now, ergonv1alpha1.WorkspacePending, metav1.ConditionFalse, ergonv1alpha1.ReasonPodPending,
				"waiting: "+message)
			p.RequeueAfter = conflictRecheck / 10
			return p
		}
		p.setPhase(ws, now, ergonv1alpha1.WorkspaceFailed, metav1.ConditionFalse, reason, message)
		p.RequeueAfter = conflictRecheck
		return p
	}
	p.decideClaim(f)
	if want := NetworkPolicy(ws, f.Artifacts); f.Policy == nil || !equality.Semantic.DeepEqual(f.Policy.Spec, want.Spec) {
		p.Policy = want
	}
	p.decideLegacyPolicy(f)

	activity := lastActivity(f)
	p.Status.LastActivityTime = &metav1.Time{Time: activity}
	wanted := ws.Spec.IdleTimeout == nil || f.ActiveSteps > 0 || f.Now.Sub(activity) < ws.Spec.IdleTimeout.Duration
	if f.LegacyPod != nil {
		p.replaceLegacyPod(f, wanted)
	} else {
		p.decidePod(f, wanted)
	}
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

// conflictRecheck is how often a Workspace that cannot use the objects of its names looks
// again: their owner may go without anything the controller watches changing.
const conflictRecheck = time.Minute

// conflict says why the Workspace cannot use an object under one of its names, if it cannot:
// someone else made it. going says the object in the way is being deleted. Such an object is
// never used, changed or deleted; the names derive from the Workspace's UID, so a Workspace
// created again gets names nobody took.
func conflict(f Facts) (reason, message string, going bool) {
	ws := f.Workspace
	const way = "Ergon leaves it alone: delete it, or delete the Workspace and create it again, " +
		"which gives its objects new names"
	switch {
	case f.Pod != nil && !Controls(ws, f.Pod):
		return ergonv1alpha1.ReasonNameConflict, fmt.Sprintf("pod %s exists and is not this Workspace's "+
			"(it does not control it); %s", f.Pod.Name, way), !f.Pod.DeletionTimestamp.IsZero()
	case f.Policy != nil && !Controls(ws, f.Policy):
		return ergonv1alpha1.ReasonNameConflict, fmt.Sprintf("NetworkPolicy %s exists and is not this Workspace's "+
			"(it does not control it); %s", f.Policy.Name, way), !f.Policy.DeletionTimestamp.IsZero()
	case f.Claim != nil && !ownsClaim(ws, f.Claim):
		return ergonv1alpha1.ReasonClaimConflict, fmt.Sprintf("PersistentVolumeClaim %s exists and is not this Workspace's "+
			"(it neither controls it nor recorded its UID); %s", f.Claim.Name, way), false
	case f.Claim != nil && !f.Claim.DeletionTimestamp.IsZero():
		return ergonv1alpha1.ReasonVolumeLost, fmt.Sprintf("PersistentVolumeClaim %s is being deleted; "+
			"a new, empty one is made once it is gone", f.Claim.Name), true
	case f.Claim != nil && f.Claim.Status.Phase == corev1.ClaimLost:
		return ergonv1alpha1.ReasonVolumeLost, fmt.Sprintf("PersistentVolumeClaim %s lost its volume %s",
			f.Claim.Name, f.Claim.Spec.VolumeName), false
	}
	return "", "", false
}

// ClaimName is the name of the Workspace's claim: the one its status records, else ObjectName.
// A Workspace an earlier version made records the claim that version named after its user,
// until its UID is recorded too (see legacyClaim).
func ClaimName(ws *ergonv1alpha1.Workspace) string {
	if ws.Status.ClaimName != "" && (ws.Status.ClaimUID != "" || legacyClaim(ws)) {
		return ws.Status.ClaimName
	}
	return ObjectName(ws)
}

// ownsClaim says whether a claim is the Workspace's: the Workspace controls it, or (a claim
// kept with Retain has no owner) it is the claim whose UID the status records. A claim another
// object controls is never the Workspace's.
func ownsClaim(ws *ergonv1alpha1.Workspace, claim *corev1.PersistentVolumeClaim) bool {
	if metav1.GetControllerOf(claim) == nil && ws.Status.ClaimUID == "" {
		return legacyClaim(ws) && claim.Name == ws.Status.ClaimName &&
			claim.Labels[ergonv1alpha1.LabelManagedBy] == ergonv1alpha1.ManagedByErgon
	}
	return ownsClaimByUID(ws, claim)
}

// ownsClaimByUID says whether the Workspace controls the claim, or the claim, controlled by
// nothing, has the UID the status records.
func ownsClaimByUID(ws *ergonv1alpha1.Workspace, claim *corev1.PersistentVolumeClaim) bool {
	if ref := metav1.GetControllerOf(claim); ref != nil {
		return ref.UID == ws.UID
	}
	return ws.Status.ClaimUID != "" && claim.UID == ws.Status.ClaimUID
}

// legacyClaim says whether the Workspace was made by an earlier version, which named its claim
// after the user and recorded no UID, and had the claim as its own (no conflict reported):
// the status, which only the manager writes, names that claim, and the Workspace takes it
// over once, recording its UID. The claim of a user's second Workspace, which that version
// failed, is not taken over.
func legacyClaim(ws *ergonv1alpha1.Workspace) bool {
	if ws.Status.ClaimUID != "" || ws.Status.ClaimName != naming.LegacyWorkspaceName(ws.Spec.User) {
		return false
	}
	ready := meta.FindStatusCondition(ws.Status.Conditions, ergonv1alpha1.ConditionReady)
	return ready == nil || (ready.Reason != ergonv1alpha1.ReasonNameConflict && ready.Reason != ergonv1alpha1.ReasonClaimConflict)
}

// decideClaim makes the claim when there is none, records the claim's name and UID, and
// keeps its owner reference as the reclaimPolicy asks: with Delete the Workspace controls
// it, with Retain nothing does once the status holds its UID, so that a garbage collection
// (a foreground deletion of the Workspace, as Argo CD prunes) cannot take it.
func (p *Plan) decideClaim(f Facts) {
	ws, claim := f.Workspace, f.Claim
	if claim == nil {
		p.CreateClaim = true
		// The controller records the UID once it made the claim.
		p.Status.ClaimName, p.Status.ClaimUID = ObjectName(ws), ""
		return
	}
	p.Status.ClaimName, p.Status.ClaimUID = claim.Name, claim.UID
	controlled := Controls(ws, claim)
	if ws.Spec.ReclaimPolicy == ergonv1alpha1.ReclaimDelete {
		p.OwnClaim = !controlled
		return
	}
	// Released only once the stored status has the UID: until then the owner reference is
	// the only proof that the claim is the Workspace's.
	p.ReleaseClaim = controlled && ws.Status.ClaimUID == claim.UID
}

// decideLegacyPolicy keeps the NetworkPolicy an earlier version made, with its rules brought
// to the spec, while that version's step pods run, and deletes it afterwards.
func (p *Plan) decideLegacyPolicy(f Facts) {
	if f.LegacyPolicy == nil {
		return
	}
	if f.LegacySteps == 0 && f.LegacyPod == nil {
		p.DeleteLegacyPolicy = true
		return
	}
	if want := LegacyNetworkPolicySpec(f.Workspace); !equality.Semantic.DeepEqual(f.LegacyPolicy.Spec, want) {
		p.LegacyPolicySpec = &want
	}
}

// replaceLegacyPod deletes the pod an earlier version made for the Workspace, and waits for it
// to go before a pod of the Workspace's own name starts on the same volume.
func (p *Plan) replaceLegacyPod(f Facts, wanted bool) {
	ws, pod := f.Workspace, f.LegacyPod
	now := metav1.NewTime(f.Now)
	p.Status.PodName = ""
	p.DeleteLegacyPod = pod.DeletionTimestamp.IsZero()
	if !wanted {
		p.setPhase(ws, now, ergonv1alpha1.WorkspaceIdle, metav1.ConditionTrue, ergonv1alpha1.ReasonIdle,
			fmt.Sprintf("stopping pod %s after %s without use; the volume stays", pod.Name, ws.Spec.IdleTimeout.Duration))
		return
	}
	p.setPhase(ws, now, ergonv1alpha1.WorkspacePending, metav1.ConditionFalse, ergonv1alpha1.ReasonPodReplacing,
		fmt.Sprintf("replacing pod %s, named after the user by an earlier version, with pod %s on the same volume",
			pod.Name, ObjectName(ws)))
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
		p.Status.PodName = ObjectName(ws)
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
	case pod.Annotations[AnnotationPodSpecHash] != Pod(ws, f.EntrypointImage, p.Status.ClaimName).Annotations[AnnotationPodSpecHash]:
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
	if podReady(pod) {
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

// decideDelete applies the reclaimPolicy of a Workspace being deleted: the pods and policies
// it controls go; Delete deletes the claim (which goes once no pod uses it), Retain keeps it,
// released: no owner, and no Workspace mounts it again (a new Workspace cannot prove the
// files are its own). Then the finalizer goes. A claim that is not the Workspace's by UID
// (it controls it, or its status recorded its UID) is never deleted, whatever its name or
// labels.
func decideDelete(f Facts, p *Plan) {
	ws := f.Workspace
	if !slices.Contains(ws.Finalizers, ergonv1alpha1.FinalizerWorkspaceVolume) {
		return
	}
	p.RemoveFinalizer = true
	// The pod goes now rather than when the garbage collector comes to it, and with it the
	// last user of the claim.
	p.DeletePod = f.Pod != nil && Controls(ws, f.Pod) && f.Pod.DeletionTimestamp.IsZero()
	p.DeleteLegacyPod = f.LegacyPod != nil && f.LegacyPod.DeletionTimestamp.IsZero()
	p.DeletePolicy = f.Policy != nil && Controls(ws, f.Policy)
	p.DeleteLegacyPolicy = f.LegacyPolicy != nil
	claim := f.Claim
	if claim == nil {
		return
	}
	if !ownsClaimByUID(ws, claim) {
		p.Events = append(p.Events, Event{Reason: "VolumeRetained", Message: fmt.Sprintf(
			"Workspace %s deleted: PersistentVolumeClaim %s is not its own, and is left alone", ws.Name, claim.Name)})
		return
	}
	if ws.Spec.ReclaimPolicy != ergonv1alpha1.ReclaimDelete {
		p.ReleaseClaim = Controls(ws, claim)
		p.Events = append(p.Events, Event{Reason: "VolumeRetained", Message: fmt.Sprintf(
			"Workspace %s deleted: keeping PersistentVolumeClaim %s (reclaimPolicy Retain), released: "+
				"no Workspace mounts it again", ws.Name, claim.Name)})
		return
	}
	if claim.DeletionTimestamp.IsZero() {
		p.DeleteClaim = true
		p.Events = append(p.Events, Event{Reason: "VolumeDeleted", Message: fmt.Sprintf(
			"Workspace %s deleted: deleting PersistentVolumeClaim %s (reclaimPolicy Delete)", ws.Name, claim.Name)})
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
