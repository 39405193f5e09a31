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

// Package wslease decides who may write to a Workspace: one step at a time, the others in
// line in the order they asked. The state is a coordination.k8s.io Lease named for the
// Workspace (naming.WorkspaceName), which the Run controller takes on a step's behalf before
// it creates the step's pod and gives back when the step's attempt ends. It is pure: the
// controller reads the Lease and the Runs it names, and writes back what Take and Release
// return.
//
// A claim is one attempt of one step, named by the attempt's pod. A claim is live while its
// Run exists, has not finished, and the step still holds it (its pod has not ended) or still
// waits for it (Holds). A claim that is not live is dropped by the next step that asks, so a
// lease held by a deleted pod, a cancelled or deleted Run, or a manager that crashed between
// taking the lease and creating the pod, does not block the Workspace.
package wslease

import (
	"slices"
	"time"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/naming"
)

// Claim is one attempt of a step that holds or wants a Workspace.
type Claim struct {
	// Pod names the attempt: the pod it runs as once it holds the lease.
	Pod string `json:"pod"`
	// Run and RunUID name the Run of the step.
	Run    string `json:"run"`
	RunUID string `json:"uid"`
	// Since is when the claim took the lease, or when it joined the line.
	Since time.Time `json:"since"`
}

// State is a Workspace's write lease: who holds it, and who waits, first in line first.
type State struct {
	Holder *Claim
	Queue  []Claim
}

// Grace is how long a claim is kept without checking that it is live: the Runs the manager
// reads come from its cache, which may not have the status write that records the claim yet.
const Grace = 15 * time.Second

// Take asks for the lease for me. It drops the claims that are no longer live, then gives
// the lease to me when nobody holds it and nobody live is before me in line; otherwise it puts
// me at the end of the line, once. It returns the next state, whether I hold the lease, and
// how many claims are ahead of me (the holder included).
func Take(s State, me Claim, now time.Time, live func(Claim) bool) (State, bool, int) {
	kept := func(c Claim) bool { return now.Sub(c.Since) < Grace || live(c) }
	next := State{Holder: s.Holder}
	if h := next.Holder; h != nil && h.Pod != me.Pod && !kept(*h) {
		next.Holder = nil
	}
	for _, c := range s.Queue {
		if c.Pod != next.holderPod() && !slices.ContainsFunc(next.Queue, func(q Claim) bool { return q.Pod == c.Pod }) && kept(c) {
			next.Queue = append(next.Queue, c)
		}
	}
	if next.holderPod() == me.Pod {
		return next, true, 0
	}
	at := slices.IndexFunc(next.Queue, func(c Claim) bool { return c.Pod == me.Pod })
	if next.Holder == nil && (len(next.Queue) == 0 || at == 0) {
		if at == 0 {
			next.Queue = next.Queue[1:]
		}
		me.Since = now
		next.Holder = &me
		return next, true, 0
	}
	if at < 0 {
		me.Since = now
		next.Queue = append(next.Queue, me)
		at = len(next.Queue) - 1
	}
	ahead := at
	if next.Holder != nil {
		ahead++
	}
	return next, false, ahead
}

// Release gives the lease back when pod holds it, and takes pod out of the line; it reports
// whether anything changed.
func Release(s State, pod string) (State, bool) {
	next := State{Holder: s.Holder}
	changed := false
	if next.holderPod() == pod {
		next.Holder, changed = nil, true
	}
	for _, c := range s.Queue {
		if c.Pod == pod {
			changed = true
			continue
		}
		next.Queue = append(next.Queue, c)
	}
	return next, changed
}

func (s State) holderPod() string {
	if s.Holder == nil {
		return ""
	}
	return s.Holder.Pod
}

// Holds reports whether a Run still holds or waits for the claim of pod: the Run has not
// finished, and a step of it has pod as its current attempt's pod, not ended, or waits for the
// Workspace before starting pod as its next attempt.
func Holds(run *ergonv1alpha1.Run, pod string) bool {
	if run == nil || run.Status.Phase.Finished() || !run.DeletionTimestamp.IsZero() {
		return false
	}
	for _, s := range run.Status.Steps {
		if s.PodName == pod && s.PodActive() {
			return true
		}
		if s.Phase == ergonv1alpha1.StepWaiting && naming.StepPodName(run.Name, s.Name, s.Attempts+1) == pod {
			return true
		}
	}
	return false
}
