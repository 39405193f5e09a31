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

package planner

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/budget"
	"github.com/ergon-dev/ergon/internal/compile"
)

// SceneNotFoundRetry is how often a Run looks again for a Scene that does not exist yet
// (GitOps may apply the Run before its Scene), besides being woken when the Scene appears.
const SceneNotFoundRetry = time.Minute

// StartAction is what a Run without a snapshot does next.
type StartAction int

const (
	// StartEnd ends the Run before anything ran: Status is its final status.
	StartEnd StartAction = iota
	// StartWait keeps the Run Pending (its Scene does not exist yet): Status says why.
	StartWait
	// StartScene takes the snapshot of the Scene and runs it.
	StartScene
	// StartRetry runs the snapshot of the Run spec.retryOf names.
	StartRetry
)

// StartFacts are what decides how a Run starts.
type StartFacts struct {
	Run *ergonv1alpha1.Run
	// Scene is the Scene the Run names; nil when it does not exist. Not read for a Run that
	// is cancelled or retries another.
	Scene *ergonv1alpha1.Scene
	Now   time.Time
	// Started is true when the Run already created a pod, child Run or Gate although its
	// status does not say it started: a first pass acted and its status write was lost. Only
	// gathered for a cancelled Run.
	Started bool
	// PendingTimeout bounds how long a Run waits for its Scene; zero waits forever.
	PendingTimeout time.Duration
	// Spent is what the Scene's other Runs used within budget.Window (budget.SceneSpent);
	// read only when the Scene has a budget.
	Spent budget.Spending
}

// StartPlan is the decision on a Run without a snapshot.
type StartPlan struct {
	Action StartAction
	// Status is the Run's next status when it ends or waits.
	Status *ergonv1alpha1.RunStatus
	// RequeueAfter is when a waiting Run looks for its Scene again.
	RequeueAfter time.Duration
	Events       []Event
}

// DecideStart decides how a Run starts: cancelled before it started, failed because its
// Scene is missing (past the pending timeout), its params are invalid, its Scene does not
// compile or has spent its budget, waiting for its Scene, or started.
func DecideStart(f StartFacts) StartPlan {
	run := f.Run
	switch {
	case run.Spec.Cancel && (!f.Started || (run.Spec.RetryOf == nil && f.Scene == nil)):
		// Nothing has run yet: a Run waiting for its Scene, or cancelled as it was created,
		// ends here instead of waiting on. A Run whose first pass acted but whose status write
		// was lost starts, and the planner stops what it started, recording it.
		return Unstarted(run, f.Now, ergonv1alpha1.RunCancelled, ergonv1alpha1.ReasonCancelled,
			"the Run was cancelled before it started")
	case run.Spec.RetryOf != nil:
		return StartPlan{Action: StartRetry}
	case f.Scene == nil:
		return waitForScene(f)
	}
	if errs := compile.CheckParams(&f.Scene.Spec, run.Spec.Params); len(errs) > 0 {
		return Unstarted(run, f.Now, ergonv1alpha1.RunFailed, ergonv1alpha1.ReasonInvalidParams, errs.ToAggregate().Error())
	}
	if _, errs := compile.Compile(&f.Scene.Spec); len(errs) > 0 {
		return Unstarted(run, f.Now, ergonv1alpha1.RunFailed, ergonv1alpha1.ReasonInvalidScene,
			fmt.Sprintf("Scene %s does not compile: %v", f.Scene.Name, errs.ToAggregate()))
	}
	if why, over := f.Spent.Exceeded(f.Scene.Spec.Budget); over && !f.Started {
		return Unstarted(run, f.Now, ergonv1alpha1.RunFailed, ergonv1alpha1.ReasonBudgetExceeded,
			fmt.Sprintf("the Runs of Scene %s %s", f.Scene.Name, why))
	}
	return StartPlan{Action: StartScene}
}

// waitForScene keeps a Run Pending while its Scene does not exist, telling it once in an
// Event, and fails it when the Scene has not appeared within the pending timeout of the
// Run's creation.
func waitForScene(f StartFacts) StartPlan {
	run := f.Run
	missing := fmt.Sprintf("Scene %q does not exist in namespace %s", run.Spec.SceneRef.Name, run.Namespace)
	retry := SceneNotFoundRetry
	message := missing + "; the Run starts when it does"
	if bound := f.PendingTimeout; bound > 0 {
		deadline := run.CreationTimestamp.Add(bound)
		left := deadline.Sub(f.Now)
		if left <= 0 {
			return Unstarted(run, f.Now, ergonv1alpha1.RunFailed, ergonv1alpha1.ReasonSceneNotFound,
				fmt.Sprintf("%s; the Run waited %s for it (the manager's --pending-timeout)", missing, bound))
		}
		retry = min(retry, left)
		message = fmt.Sprintf("%s; the Run starts when it does, or fails if it does not by %s",
			missing, deadline.UTC().Format(time.RFC3339))
	}
	told := meta.FindStatusCondition(run.Status.Conditions, ergonv1alpha1.ConditionSucceeded)
	status := run.Status.DeepCopy()
	status.Phase = ergonv1alpha1.RunPending
	status.ObservedGeneration = run.Generation
	setSucceeded(status, run, f.Now, metav1.ConditionUnknown, ergonv1alpha1.ReasonSceneNotFound, message)
	p := StartPlan{Action: StartWait, Status: status, RequeueAfter: retry}
	if told == nil || told.Reason != ergonv1alpha1.ReasonSceneNotFound {
		p.Events = []Event{{Warning: true, Reason: ergonv1alpha1.ReasonSceneNotFound,
			Message: fmt.Sprintf("Run %s waits: %s", run.Name, message)}}
	}
	return p
}

// Unstarted ends a Run before it started: cancelled, or unable to execute. The start path
// also uses it for what it can only find while acting (a name taken by someone else, a
// retried Run that changed).
func Unstarted(run *ergonv1alpha1.Run, now time.Time, phase ergonv1alpha1.RunPhase, reason, message string) StartPlan {
	status := run.Status.DeepCopy()
	at := metav1.NewTime(now)
	status.Phase = phase
	status.ObservedGeneration = run.Generation
	status.FinishedAt = &at
	setSucceeded(status, run, now, metav1.ConditionFalse, reason, message)
	event := Event{Reason: reason, Message: fmt.Sprintf("Run %s: %s", run.Name, message)}
	if phase != ergonv1alpha1.RunCancelled {
		event = Event{Warning: true, Reason: reason, Message: fmt.Sprintf("Run %s cannot start: %s", run.Name, message)}
	}
	return StartPlan{Action: StartEnd, Status: status, Events: []Event{event}}
}

func setSucceeded(status *ergonv1alpha1.RunStatus, run *ergonv1alpha1.Run, now time.Time,
	s metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(&status.Conditions, metav1.Condition{
		Type: ergonv1alpha1.ConditionSucceeded, Status: s, Reason: reason, Message: message,
		ObservedGeneration: run.Generation, LastTransitionTime: metav1.NewTime(now),
	})
}
