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
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/health"
)

// PoolPrefix begins the name of every warm pod and its claim, which share one name the API
// server generates: nobody can take it first.
const PoolPrefix = "ergon-wp-"

// OrphanGrace is how long a warm pod or claim the pool controls but has not recorded yet is
// taken for one being made (its record on its way); older, it is deleted.
const OrphanGrace = time.Minute

// MaxStarting bounds the warm pods of one pool starting at once: refilling a pool that
// Workspaces are emptying does not take the node from the Workspaces it serves.
const MaxStarting = 2

// takeGrace is how long the pool leaves a Workspace to take the pod of a claim it took.
const takeGrace = 5 * time.Second

// PoolShape is the Workspace a pool's template describes, so that the pool's pods and claims
// are built by the same code as a Workspace's and hash the same.
func PoolShape(pool *ergonv1alpha1.WorkspacePool) *ergonv1alpha1.Workspace {
	t := pool.Spec.Template.DeepCopy()
	return &ergonv1alpha1.Workspace{
		ObjectMeta: metav1.ObjectMeta{Namespace: pool.Namespace, UID: pool.UID},
		Spec: ergonv1alpha1.WorkspaceSpec{Image: t.Image, Resources: t.Resources, Storage: t.Storage,
			RuntimeClassName: t.RuntimeClassName, Env: t.Env},
	}
}

// PoolLabels are the labels of a pool's warm pods and claims.
func PoolLabels(pool *ergonv1alpha1.WorkspacePool) map[string]string {
	return map[string]string{
		ergonv1alpha1.LabelManagedBy:        ergonv1alpha1.ManagedByErgon,
		ergonv1alpha1.LabelWorkspacePoolUID: string(pool.UID),
	}
}

// PoolControls says whether the pool (by UID) is the controlling owner of obj.
func PoolControls(pool *ergonv1alpha1.WorkspacePool, obj metav1.Object) bool {
	ref := metav1.GetControllerOf(obj)
	return ref != nil && ref.UID == pool.UID
}

func poolOwned(pool *ergonv1alpha1.WorkspacePool, obj metav1.Object) {
	obj.SetLabels(PoolLabels(pool))
	obj.SetOwnerReferences([]metav1.OwnerReference{
		*metav1.NewControllerRef(pool, ergonv1alpha1.GroupVersion.WithKind("WorkspacePool"))})
}

// PoolClaim builds a warm volume's claim, named by the API server from PoolPrefix.
func PoolClaim(pool *ergonv1alpha1.WorkspacePool) *corev1.PersistentVolumeClaim {
	claim := Claim(PoolShape(pool))
	claim.Name, claim.GenerateName = "", PoolPrefix
	poolOwned(pool, claim)
	return claim
}

// PoolPod builds the warm pod on the claim of the given name, under that name: the pod a
// Workspace of the pool's shape would have on that claim, but the pool's.
func PoolPod(pool *ergonv1alpha1.WorkspacePool, entrypointImage, name string) *corev1.Pod {
	pod := Pod(PoolShape(pool), entrypointImage, name)
	pod.Name = name
	poolOwned(pool, pod)
	return pod
}

// PodName is the name of the Workspace's pod: a warm pod it took, whose name is its claim's,
// while its status records it; else ObjectName.
func PodName(ws *ergonv1alpha1.Workspace) string {
	s := ws.Status
	if strings.HasPrefix(s.PodName, PoolPrefix) && s.PodName == s.ClaimName && s.ClaimUID != "" {
		return s.PodName
	}
	return ObjectName(ws)
}

// Fresh says whether a Workspace has never had a pod or volume: only such a Workspace takes a
// warm pod. The facts must hold nothing under its names either, but its own NetworkPolicy: a
// Workspace whose names someone else took fails NameConflict and takes nothing.
func Fresh(f Facts) bool {
	ws := f.Workspace
	return ws.DeletionTimestamp.IsZero() && ws.Status.ClaimName == "" && ws.Status.ClaimUID == "" &&
		f.Pod == nil && f.Claim == nil && f.LegacyPod == nil && (f.Policy == nil || Controls(ws, f.Policy))
}

// Takable says whether the pool's recorded entry, its pod and its claim (as read; nil when
// absent) are a warm pod a Workspace may take: made by the pool (the UIDs its status
// recorded, and still controlled by it), ready (the pod running, the claim bound, neither
// going), and of exactly the pod and volume the Workspace would make on that claim. It says
// why not, for the log.
func Takable(ws *ergonv1alpha1.Workspace, pool *ergonv1alpha1.WorkspacePool, e ergonv1alpha1.WorkspacePoolEntry,
	pod *corev1.Pod, claim *corev1.PersistentVolumeClaim, entrypointImage string) (bool, string) {
	switch {
	case !pool.DeletionTimestamp.IsZero():
		return false, "the pool is being deleted"
	case !SameStorage(ws.Spec.Storage, pool.Spec.Template.Storage):
		return false, "its storage differs"
	case claim == nil || claim.UID != e.ClaimUID || !PoolControls(pool, claim) || !claim.DeletionTimestamp.IsZero():
		return false, "its claim is not the one the pool made"
	case pod == nil || pod.UID != e.PodUID || !PoolControls(pool, pod) || !pod.DeletionTimestamp.IsZero():
		return false, "its pod is not the one the pool made"
	case claim.Status.Phase != corev1.ClaimBound:
		return false, "its claim is not bound yet"
	case !podReady(pod):
		return false, "its pod is not ready yet"
	case pod.Annotations[AnnotationPodSpecHash] != Pod(ws, entrypointImage, e.Name).Annotations[AnnotationPodSpecHash]:
		return false, "its pod is not the one the Workspace would make"
	}
	return true, ""
}

// SameStorage says whether two storage requests ask for the same volume.
func SameStorage(a, b ergonv1alpha1.WorkspaceStorage) bool {
	return a.Size.Cmp(b.Size) == 0 && equality.Semantic.DeepEqual(a.StorageClassName, b.StorageClassName)
}

func podReady(pod *corev1.Pod) bool {
	ready := meta.FindStatusCondition(podConditions(pod), string(corev1.PodReady))
	return pod.Status.Phase == corev1.PodRunning && ready != nil && ready.Status == metav1.ConditionTrue
}

// Take makes a warm pod or claim the Workspace's: its labels and controlling owner, nothing of
// the pool's left. The caller patches it with an optimistic lock, so that of two Workspaces
// taking one entry only one wins, and a pool deleting it meanwhile wins over both.
func Take(ws *ergonv1alpha1.Workspace, obj metav1.Object) {
	obj.SetLabels(Labels(ws))
	obj.SetOwnerReferences([]metav1.OwnerReference{OwnerRef(ws)})
}

// PoolFacts is what the pool controller reads before it decides.
type PoolFacts struct {
	Pool            *ergonv1alpha1.WorkspacePool
	Now             time.Time
	EntrypointImage string
	// Pods and Claims are the objects of the entries' names, whoever controls them now, and
	// the pods and claims labelled with the pool's UID; by name.
	Pods   map[string]*corev1.Pod
	Claims map[string]*corev1.PersistentVolumeClaim
}

// PoolPlan is what to do for a pool, and its status afterwards.
type PoolPlan struct {
	// DeletePods and DeleteClaims are the pool's own objects to delete, by name: each is
	// deleted with its UID and resourceVersion as read, so one a Workspace took meanwhile is
	// not.
	DeletePods, DeleteClaims []string
	// Create is how many warm pods (each with its claim) to make.
	Create int
	Status ergonv1alpha1.WorkspacePoolStatus
	// RequeueAfter is when to look again without a change: an orphan's grace ending.
	RequeueAfter time.Duration
}

// DecidePool plans one pass of a pool: drop from the record the entries a Workspace took (and
// count them) or that broke, delete what the pool controls and can no longer hand out (a
// broken entry, one of an older template, more than replicas, an orphan past its grace), and
// make as many entries as replicas asks for beyond those it has.
func DecidePool(f PoolFacts) PoolPlan {
	pool := f.Pool
	p := PoolPlan{Status: *pool.Status.DeepCopy()}
	p.Status.ObservedGeneration = pool.Generation
	p.Status.Entries = nil
	// handled are the names this pass has decided on; the others the pool controls are orphans.
	handled := map[string]bool{}
	var ready, waiting []ergonv1alpha1.WorkspacePoolEntry
	for _, e := range pool.Status.Entries {
		handled[e.Name] = true
		pod, claim := f.Pods[e.Name], f.Claims[e.Name]
		ownPod := pod != nil && pod.UID == e.PodUID && PoolControls(pool, pod)
		ownClaim := claim != nil && claim.UID == e.ClaimUID && PoolControls(pool, claim)
		if claim != nil && claim.UID == e.ClaimUID && !ownClaim {
			// A Workspace took the claim, and takes the pod a moment later: the pod is left
			// to it for now, and deleted as an orphan if it is still the pool's later.
			p.Status.Taken++
			if ownPod {
				p.RequeueAfter = takeGrace
			}
			continue
		}
		keep := ownPod && ownClaim && pod.DeletionTimestamp.IsZero() && claim.DeletionTimestamp.IsZero() &&
			pod.Status.Phase != corev1.PodFailed && pod.Status.Phase != corev1.PodSucceeded &&
			claim.Status.Phase != corev1.ClaimLost &&
			pod.Annotations[AnnotationPodSpecHash] == PoolPod(pool, f.EntrypointImage, e.Name).Annotations[AnnotationPodSpecHash] &&
			claimFits(claim, pool)
		switch {
		case !keep:
			p.deleteOwn(pool, pod, claim)
		case podReady(pod) && claim.Status.Phase == corev1.ClaimBound:
			ready = append(ready, e)
		default:
			waiting = append(waiting, e)
		}
	}
	// Beyond replicas, the entries still starting go first.
	kept := append(ready, waiting...)
	replicas := int(pool.Spec.Replicas)
	for _, e := range kept[min(replicas, len(kept)):] {
		p.deleteOwn(pool, f.Pods[e.Name], f.Claims[e.Name])
	}
	kept = kept[:min(replicas, len(kept))]
	p.Status.Entries = kept
	p.Status.Ready = int32(min(len(ready), replicas))
	inFlight := p.orphans(f, handled)
	starting := len(kept) - int(p.Status.Ready) + inFlight
	p.Create = max(min(replicas-len(kept)-inFlight, MaxStarting-starting), 0)
	p.setReady(pool, metav1.NewTime(f.Now))
	return p
}

// claimFits says whether a warm claim asks for the template's storage (its size; the API
// server may have filled in the class).
func claimFits(claim *corev1.PersistentVolumeClaim, pool *ergonv1alpha1.WorkspacePool) bool {
	size := claim.Spec.Resources.Requests[corev1.ResourceStorage]
	class := pool.Spec.Template.Storage.StorageClassName
	return size.Cmp(pool.Spec.Template.Storage.Size) == 0 &&
		(class == nil || (claim.Spec.StorageClassName != nil && *claim.Spec.StorageClassName == *class))
}

// orphans deletes the pool's pods and claims it has not recorded once their grace is over,
// and counts those still within it, as entries on their way.
func (p *PoolPlan) orphans(f PoolFacts, handled map[string]bool) int {
	pool := f.Pool
	inFlight := map[string]bool{}
	consider := func(name string, obj metav1.Object, del *[]string) {
		if handled[name] || !PoolControls(pool, obj) || !obj.GetDeletionTimestamp().IsZero() {
			return
		}
		age := f.Now.Sub(obj.GetCreationTimestamp().Time)
		if age >= OrphanGrace {
			*del = append(*del, name)
			return
		}
		inFlight[name] = true
		if wait := OrphanGrace - age; p.RequeueAfter == 0 || wait < p.RequeueAfter {
			p.RequeueAfter = wait
		}
	}
	for _, name := range sortedKeys(f.Pods) {
		consider(name, f.Pods[name], &p.DeletePods)
	}
	for _, name := range sortedKeys(f.Claims) {
		consider(name, f.Claims[name], &p.DeleteClaims)
	}
	return len(inFlight)
}

func sortedKeys[T any](m map[string]T) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// deleteOwn deletes the entry's pod and claim, each only while the pool controls it.
func (p *PoolPlan) deleteOwn(pool *ergonv1alpha1.WorkspacePool, pod *corev1.Pod, claim *corev1.PersistentVolumeClaim) {
	if pod != nil && PoolControls(pool, pod) && pod.DeletionTimestamp.IsZero() {
		p.DeletePods = append(p.DeletePods, pod.Name)
	}
	if claim != nil && PoolControls(pool, claim) && claim.DeletionTimestamp.IsZero() {
		p.DeleteClaims = append(p.DeleteClaims, claim.Name)
	}
}

// setReady sets Ready, and the kstatus conditions: a pool with fewer ready than it asks for
// is Reconciling.
func (p *PoolPlan) setReady(pool *ergonv1alpha1.WorkspacePool, now metav1.Time) {
	c := metav1.Condition{Type: ergonv1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: ergonv1alpha1.ReasonPoolReady,
		ObservedGeneration: pool.Generation, LastTransitionTime: now,
		Message: fmt.Sprintf("%d of %d warm pods ready", p.Status.Ready, pool.Spec.Replicas)}
	h := health.Health{State: health.Current}
	if p.Status.Ready < pool.Spec.Replicas {
		c.Status, c.Reason = metav1.ConditionFalse, ergonv1alpha1.ReasonPoolWarming
		h = health.Health{State: health.Reconciling, Reason: c.Reason, Message: c.Message}
	}
	meta.SetStatusCondition(&p.Status.Conditions, c)
	health.Set(&p.Status.Conditions, pool.Generation, now, h)
}

// Refuse records that the pool may not make warm pods: its identity may not, or it has none.
// The entries it has stay; it makes no new ones until the next change or recheck.
func (p *PoolPlan) Refuse(pool *ergonv1alpha1.WorkspacePool, now metav1.Time, reason, message string) {
	p.Create = 0
	meta.SetStatusCondition(&p.Status.Conditions, metav1.Condition{Type: ergonv1alpha1.ConditionReady,
		Status: metav1.ConditionFalse, Reason: reason, Message: message, ObservedGeneration: pool.Generation, LastTransitionTime: now})
	health.Set(&p.Status.Conditions, pool.Generation, now, health.Health{State: health.Stalled, Reason: reason, Message: message})
}
