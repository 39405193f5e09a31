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
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/planner"
)

// refusals remembers, per Run, the children the API server refused to create (a pod that is
// invalid or forbidden by a LimitRange, Pod Security or an admission policy; a child Run its
// webhook refuses) and why. act writes the status of the pass anyway, so the rest of the Run
// goes on; the next pass finds the child missing and, instead of taking it as deleted, fails
// its attempt with the API server's message (gather). Without this a refused child stopped the
// Run's every status write and left it stuck.
//
// A pod refused because a ResourceQuota is full is different: room may come. Its pod is kept
// and created again on later passes (retryQuota), the step Pending meanwhile with reason
// ExceededQuota, until it fits or the step's pendingTimeout is over, as Kubernetes' Job
// controller, Tekton and Argo Workflows wait for quota.
//
// The memory is the manager's: after a restart in between, the missing child counts as deleted,
// and its step's retry policy applies all the same.
type refusals struct {
	mu    sync.Mutex
	byRun map[string]map[string]refusal // namespace/name of the Run -> child's name
}

// refusal is why the API server refused a child, and since when; pod is the pod to create
// again when a quota refused it, else nil.
type refusal struct {
	message string
	since   time.Time
	pod     *corev1.Pod
}

// quotaRetry is how often a pod that a full ResourceQuota refused is tried again.
const quotaRetry = 10 * time.Second

// refused reports whether err is the API server refusing an object for good: invalid, or
// forbidden by a policy. Anything else (a timeout, a conflict) is retried.
func refused(err error) bool {
	return apierrors.IsInvalid(err) || apierrors.IsForbidden(err)
}

// exceededQuota reports whether a ResourceQuota refused the object, as the quota admission
// plugin says it ("exceeded quota: NAME, requested: ...").
func exceededQuota(err error) bool {
	return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "exceeded quota")
}

// add remembers that the Run's child name was refused with err at now; pod, when a quota refused
// it, is created again later. It reports whether the refusal is new, not one of a pod that waits
// for quota already.
func (r *refusals) add(run, name string, err error, now time.Time, pod *corev1.Pod) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byRun == nil {
		r.byRun = map[string]map[string]refusal{}
	}
	if r.byRun[run] == nil {
		r.byRun[run] = map[string]refusal{}
	}
	was, known := r.byRun[run][name]
	next := refusal{message: err.Error(), since: now}
	if exceededQuota(err) {
		next.pod = pod
		if known && was.pod != nil {
			next.since = was.since
		}
	}
	r.byRun[run][name] = next
	return !known || was.pod == nil
}

// get returns why the Run's child name was refused, if it was.
func (r *refusals) get(run, name string) (refusal, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f, ok := r.byRun[run][name]
	return f, ok
}

// drop forgets one child, created after all.
func (r *refusals) drop(run, name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.byRun[run], name)
}

// waiting reports whether any pod of the Run waits for room in a quota.
func (r *refusals) waiting(run string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, f := range r.byRun[run] {
		if f.pod != nil {
			return true
		}
	}
	return false
}

// forget drops what is remembered of a Run that finished or is gone.
func (r *refusals) forget(run string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.byRun, run)
}

// refusedPod is what became of a pod that the status expects and the API server does not hold,
// if it was refused: a pod waiting for quota is created again, and is Pending (created, or still
// refused: ExceededQuota since its first refusal); a pod refused for good is gone, its attempt
// failed with the API server's message.
func (r *RunReconciler) refusedPod(ctx context.Context, run *ergonv1alpha1.Run, name string,
	attempt int32) (planner.PodState, bool, error) {
	key := client.ObjectKeyFromObject(run).String()
	f, ok := r.refused.get(key, name)
	if !ok {
		return planner.PodState{}, false, nil
	}
	if f.pod != nil {
		err := r.Create(ctx, f.pod.DeepCopy())
		switch {
		case err == nil || apierrors.IsAlreadyExists(err):
			r.refused.drop(key, name)
			return planner.PodState{Name: name, Attempt: attempt, Phase: planner.PodPending, CreatedAt: r.Clock.Now()}, true, nil
		case exceededQuota(err):
			r.refused.add(key, name, err, r.Clock.Now(), f.pod)
			return planner.PodState{Name: name, Attempt: attempt, Phase: planner.PodPending, Reason: ergonv1alpha1.ReasonExceededQuota,
				Message: "waits for room in a ResourceQuota: " + err.Error(), CreatedAt: f.since}, true, nil
		case refused(err):
			r.refused.add(key, name, err, r.Clock.Now(), nil)
			f, _ = r.refused.get(key, name)
		default:
			return planner.PodState{}, false, err
		}
	}
	return planner.PodState{Name: name, Attempt: attempt, Phase: planner.PodGone, Reason: ergonv1alpha1.ReasonPodRefused,
		Message: "the API server refused the pod: " + f.message, FinishedAt: r.Clock.Now()}, true, nil
}
