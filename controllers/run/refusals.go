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
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/controllers/internal/shared"
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
// and created again by later passes' act (retryQuota), the step Pending meanwhile with reason
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
	// notAuthorized: Ergon refused the effect itself (authority.go).
	notAuthorized bool
	since         time.Time
	pod           *corev1.Pod
}

// podRefused remembers a pod the API server refused, for the Run whose key is run: its
// attempt or call fails on the next pass, or waits for room in a quota. A refusal for good is
// told once, in a Warning Event that begins with what.
func (a *runActor) podRefused(run *ergonv1alpha1.Run, key string, pod *corev1.Pod, err error, what string) {
	if a.refused.add(key, pod.Name, err, a.Clock.Now(), pod) && !exceededQuota(err) {
		reason := ergonv1alpha1.ReasonPodRefused
		if isNotAuthorized(err) {
			reason = ergonv1alpha1.ReasonNotAuthorized
		}
		a.Recorder.Eventf(run, nil, corev1.EventTypeWarning, reason, "CreatePod", "%s: %v", what, err)
	}
}

// refused reports whether err is the API server refusing an object for good: invalid, or
// forbidden by a policy. Anything else (a timeout, a conflict) is retried; a namespace being
// deleted ends the pass quietly (QuietWhileNamespaceEnds).
func refused(err error) bool {
	return (apierrors.IsInvalid(err) || apierrors.IsForbidden(err)) && !shared.NamespaceEnding(err)
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
	next := refusal{message: err.Error(), since: now, notAuthorized: isNotAuthorized(err)}
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

// messages maps each child of the Run refused for good (not waiting for quota) to why; nil
// when there is none, so that most passes allocate nothing.
func (r *refusals) messages(run string) map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var m map[string]string
	for name, f := range r.byRun[run] {
		if f.pod != nil {
			continue
		}
		if m == nil {
			m = map[string]string{}
		}
		m[name] = f.message
	}
	return m
}

// drop forgets one child, created after all.
func (r *refusals) drop(run, name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.byRun[run], name)
}

// waiting names the Run's pods that wait for room in a quota (planner.Facts.QuotaWaiting); nil
// when none does, so that most passes allocate nothing.
func (r *refusals) waiting(run string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var names []string
	for name, f := range r.byRun[run] {
		if f.pod != nil {
			names = append(names, name)
		}
	}
	return names
}

// forget drops what is remembered of a Run that finished or is gone.
func (r *refusals) forget(run string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.byRun, run)
}

// refusedPod is what became of a pod that the status expects and the API server does not hold,
// if it was refused: one waiting for room in a quota is Pending (ExceededQuota, since its first
// refusal) and act creates it again (retryQuota); one refused for good is gone, its attempt
// failed with the API server's message.
func (r *RunReconciler) refusedPod(run *ergonv1alpha1.Run, name string, attempt int32) (planner.PodState, bool) {
	f, ok := r.refused.get(client.ObjectKeyFromObject(run).String(), name)
	switch {
	case !ok:
		return planner.PodState{}, false
	case f.pod != nil:
		return planner.PodState{Name: name, Attempt: attempt, Phase: planner.PodPending, Reason: ergonv1alpha1.ReasonExceededQuota,
			Message: "waits for room in a ResourceQuota: " + f.message, CreatedAt: f.since}, true
	}
	if f.notAuthorized {
		return planner.PodState{Name: name, Attempt: attempt, Phase: planner.PodGone, Reason: ergonv1alpha1.ReasonNotAuthorized,
			Message: "Ergon did not create the pod: " + f.message, FinishedAt: r.Clock.Now()}, true
	}
	return planner.PodState{Name: name, Attempt: attempt, Phase: planner.PodGone, Reason: ergonv1alpha1.ReasonPodRefused,
		Message: "the API server refused the pod: " + f.message, FinishedAt: r.Clock.Now()}, true
}

// retryQuota creates again the pods a full quota refused that the plan retries (RetryPods).
// Each is authorized again first, as at its first try: the pod is created now, for the Run's
// person as they are now, who may have lost a right meanwhile. One that fits is observed as
// any pod on the next pass; one still refused waits on; one refused otherwise, or not
// authorized now, fails its attempt on the next pass.
func (a *runActor) retryQuota(ctx context.Context, run *ergonv1alpha1.Run, f *planner.Facts, plan *planner.Plan) error {
	key := client.ObjectKeyFromObject(run).String()
	for _, name := range plan.RetryPods {
		waiting, ok := a.refused.get(key, name)
		pod := waiting.pod
		if !ok || pod == nil {
			continue // created or given up meanwhile
		}
		var ws *ergonv1alpha1.Workspace
		var err error
		if uid := pod.Labels[ergonv1alpha1.LabelWorkspaceUID]; uid != "" {
			if w := f.Workspace; w != nil && w.Object != nil && string(w.Object.UID) == uid {
				ws = w.Object
			} else {
				// Its Workspace's volume is vouched for by the verb use on that Workspace,
				// which cannot be asked of one that is gone or was replaced.
				err = &notAuthorized{err: fmt.Errorf("the Workspace the pod was bound to is gone or was replaced")}
			}
		}
		if err == nil {
			err = a.authorizePod(ctx, run, pod, ws)
		}
		if err == nil {
			err = a.Create(ctx, pod.DeepCopy())
		}
		switch {
		case isNotAuthorized(err):
			a.podRefused(run, key, pod, err, fmt.Sprintf("Pod %s, which waited for room in a ResourceQuota", name))
		case err == nil || apierrors.IsAlreadyExists(err):
			a.refused.drop(key, name)
		case refused(err):
			a.refused.add(key, name, err, a.Clock.Now(), pod)
		default:
			return err
		}
	}
	return nil
}
