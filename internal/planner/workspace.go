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
	"slices"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/types"

	ergonv1alpha1 "github.com/ergon-dev/ergon/api/v1alpha1"
	"github.com/ergon-dev/ergon/internal/compile"
	"github.com/ergon-dev/ergon/internal/naming"
	"github.com/ergon-dev/ergon/internal/wslease"
)

// WorkspaceFacts is what is known of the Workspace a Run's Scene is bound to.
type WorkspaceFacts struct {
	// Name is the Workspace's, from the Scene's spec.workspace.
	Name string
	// Object is the Workspace; nil when it does not exist.
	Object *ergonv1alpha1.Workspace
	// Holder names the attempt (its pod) that holds the Workspace's write lease; "" when
	// nobody does. HolderRun is the Run of that attempt.
	Holder, HolderRun string
	// HolderIsThisRun is true when the holder is an attempt of this Run.
	HolderIsThisRun bool
	// LeaseConflict says why the Lease under the Workspace's name cannot be used (someone
	// else made it); "" when it can.
	LeaseConflict string
	// Lease is the Workspace's write lease as gathered: whether it exists, its state, and
	// whether the Run of each claim older than wslease.Grace still holds or waits for it (by
	// the claim's pod; a Run that could not be read counts as live).
	Lease LeaseFacts
}

// LeaseFacts are a Workspace's write lease as gathered. Object is the Lease itself, which
// the controller writes the next state over (guarded by its resourceVersion); nil when none
// exists.
type LeaseFacts struct {
	Exists bool
	State  wslease.State
	Live   map[string]bool
	Object *coordinationv1.Lease
}

// LeaseWrite is the state the Workspace's write lease takes now, for the controller to write
// over the lease it gathered (or into a new one, when none exists): a write that loses a race
// with another Run's is dropped, and the step that waits asks again when the lease changes.
type LeaseWrite struct {
	State wslease.State
}

// LeaseRequest asks the controller to take a Workspace's write lease for an attempt, or to
// put it in line for it.
type LeaseRequest struct {
	// Pod names the attempt: the pod it will run as.
	Pod  string
	Step string
}

// workspaceRecheck is how often a step that waits for its Workspace looks again, besides
// being woken when the Workspace's lease changes: a holder that died wakes nobody.
const workspaceRecheck = 10 * time.Second

// WritesWorkspace reports whether a step of a Scene bound to a Workspace may change its files,
// and so needs the Workspace's write lease: a container step, which runs any program, or an
// agent step that may use write_file or shell. The others mount the volume read-only.
func WritesWorkspace(step *compile.Step) bool {
	switch {
	case step.Spec.Container != nil:
		return true
	case step.Spec.Agent != nil:
		return step.Spec.Agent.HasBuiltin(ergonv1alpha1.ToolWriteFile) || step.Spec.Agent.HasBuiltin(ergonv1alpha1.ToolShell)
	}
	return false
}

// unusable says why no step can use the Workspace now; "" when one can. A Workspace that is
// Pending or Idle is usable: a step pod bound to it is what wakes it. pinned is the UID the Run
// started with; a Workspace of another UID is never usable (ReasonWorkspaceReplaced), and the
// step fails rather than waits: the one it started with cannot come back.
func (w *WorkspaceFacts) unusable(pinned types.UID) (reason, message string) {
	o := w.Object
	switch {
	case pinned != "" && o == nil:
		return ergonv1alpha1.ReasonWorkspaceReplaced, fmt.Sprintf("Workspace %s (UID %s), which the Run started with, "+
			"was deleted; the Run binds no step to another Workspace", w.Name, pinned)
	case pinned != "" && o.UID != pinned:
		return ergonv1alpha1.ReasonWorkspaceReplaced, fmt.Sprintf("Workspace %s was deleted and created again since "+
			"the Run started: the Run started with UID %s, the Workspace now has UID %s; the Run binds no step to "+
			"another Workspace than the one it started with (a new Run uses the new one)", w.Name, pinned, o.UID)
	case o == nil:
		return ergonv1alpha1.ReasonWorkspaceNotFound, fmt.Sprintf("Workspace %s does not exist; the step starts when it does", w.Name)
	case !o.DeletionTimestamp.IsZero():
		return ergonv1alpha1.ReasonWorkspaceNotReady, fmt.Sprintf("Workspace %s is being deleted", w.Name)
	case o.Status.Phase == ergonv1alpha1.WorkspaceFailed:
		return ergonv1alpha1.ReasonWorkspaceNotReady, fmt.Sprintf("Workspace %s has failed; the step starts when it is repaired", w.Name)
	case o.Status.ClaimName == "" || o.Status.ClaimUID == "":
		return ergonv1alpha1.ReasonWorkspaceNotReady, fmt.Sprintf("Workspace %s has no volume of its own yet; "+
			"the step starts when it has", w.Name)
	case w.LeaseConflict != "":
		return ergonv1alpha1.ReasonWorkspaceNotReady, w.LeaseConflict
	}
	return "", ""
}

// pinWorkspace records the Workspace the Run binds its steps to: the one it started with
// (controllers pin it when the Run starts), or, when none of the name existed then, or it
// was being deleted, the first usable one the Run sees. It returns the pinned UID.
func (p *planner) pinWorkspace(status *ergonv1alpha1.RunStatus) types.UID {
	w := p.f.Workspace
	if w == nil {
		return ""
	}
	if status.Workspace == nil || status.Workspace.Name != w.Name {
		status.Workspace = &ergonv1alpha1.PinnedWorkspace{Name: w.Name}
	}
	if status.Workspace.UID == "" && w.Object != nil && w.Object.DeletionTimestamp.IsZero() {
		status.Workspace.UID = w.Object.UID
	}
	return status.Workspace.UID
}

// workspaceReplaced says, when the Workspace the Run pinned is gone or replaced, how; "" while
// it is the same one.
func (p *planner) workspaceReplaced() string {
	if p.f.Workspace == nil {
		return ""
	}
	if reason, message := p.f.Workspace.unusable(p.pinned); reason == ergonv1alpha1.ReasonWorkspaceReplaced {
		return message
	}
	return ""
}

// workspaceAllows decides whether the attempt pod of a step may start, as far as its
// Workspace goes: the Workspace must be usable, and a step that writes must hold its lease.
// Otherwise the step waits, and the controller is asked to put it in line for the lease.
func (p *planner) workspaceAllows(step *compile.Step, s *ergonv1alpha1.StepStatus, pod string) bool {
	w := p.f.Workspace
	if w == nil {
		return true
	}
	if reason, message := w.unusable(p.pinned); reason == ergonv1alpha1.ReasonWorkspaceReplaced {
		p.fail(s, step, reason, message)
		return false
	} else if reason != "" {
		p.waitForWorkspace(step, s, reason, message)
		return false
	}
	if !WritesWorkspace(step) || w.Holder == pod {
		return true
	}
	holder := "another step"
	if w.HolderRun != "" {
		holder = "a step of Run " + w.HolderRun
	}
	if w.Holder == "" {
		holder = "nobody yet"
	}
	p.wait(step, s, ergonv1alpha1.ReasonWorkspaceBusy, fmt.Sprintf(
		"Workspace %s takes one writing step at a time and %s holds it; this step starts in turn, after the steps that asked before it",
		w.Name, holder))
	p.plan.TakeLeases = append(p.plan.TakeLeases, LeaseRequest{Pod: pod, Step: step.Name})
	return false
}

// waitForWorkspace keeps a step waiting for a Workspace it cannot use, until the step's
// pendingTimeout, counted from when the step was ready to start, fails it.
func (p *planner) waitForWorkspace(step *compile.Step, s *ergonv1alpha1.StepStatus, reason, message string) {
	if timeout := p.pendingTimeout(step); timeout > 0 {
		deadline := p.readySince(step, s).Add(timeout)
		if !p.f.Now.Before(deadline) {
			p.fail(s, step, reason, fmt.Sprintf("%s, and the step waited past its pendingTimeout of %s", message, timeout))
			return
		}
		p.wakeAt(deadline)
		message = fmt.Sprintf("%s, or fails at %s", message, deadline.UTC().Format(time.RFC3339))
	}
	p.wait(step, s, reason, message)
}

// wait records that a step waits for its Workspace, telling it once per reason.
func (p *planner) wait(step *compile.Step, s *ergonv1alpha1.StepStatus, reason, message string) {
	if s.Phase != ergonv1alpha1.StepWaiting || s.Reason != reason {
		p.event(reason != ergonv1alpha1.ReasonWorkspaceBusy, reason, "Step %s waits: %s", step.Name, message)
	}
	s.Phase, s.Reason, s.Message, s.NextAttemptAt = ergonv1alpha1.StepWaiting, reason, message, nil
	p.wakeAt(p.f.Now.Add(workspaceRecheck))
}

// readySince is when a step became ready for the attempt it waits to start: when its last
// attempt or its last dependency finished, or when the Run started.
func (p *planner) readySince(step *compile.Step, s *ergonv1alpha1.StepStatus) time.Time {
	since := p.f.Now
	if st := p.f.Run.Status.StartedAt; st != nil {
		since = st.Time
	}
	later := func(t time.Time) {
		if t.After(since) {
			since = t
		}
	}
	for _, d := range p.f.Scene.Graph.Dependencies(step.Name) {
		if ds := p.state(d); ds != nil && ds.FinishedAt != nil {
			later(ds.FinishedAt.Time)
		}
	}
	for _, h := range s.History {
		if h.FinishedAt != nil {
			later(h.FinishedAt.Time)
		}
	}
	return since
}

// releaseWorkspace gives the Workspace's lease back when an attempt of this Run holds it
// and no step of the Run still needs it: the attempt ended, or the Run stopped.
func (p *planner) releaseWorkspace() {
	w := p.f.Workspace
	if w == nil || w.Holder == "" || !w.HolderIsThisRun {
		return
	}
	for _, s := range p.steps {
		if (s.PodName == w.Holder && s.PodActive()) ||
			(s.Phase == ergonv1alpha1.StepWaiting && naming.StepPodName(p.f.Run.Name, s.Name, s.Attempts+1) == w.Holder) {
			return
		}
	}
	if slices.ContainsFunc(p.plan.Pods, func(r PodRequest) bool { return r.Name == w.Holder }) {
		return
	}
	p.plan.ReleaseLease = w.Holder
}

// decideLease works out the lease's next state from what the plan takes and gives back:
// the attempt this Run no longer needs leaves it; each attempt that asks takes it when it is
// free and nobody live is before it in line, else joins the line once. Nothing is written
// when nothing changes.
func (p *planner) decideLease() {
	w := p.f.Workspace
	if w == nil || w.Object == nil || w.LeaseConflict != "" || (len(p.plan.TakeLeases) == 0 && p.plan.ReleaseLease == "") ||
		(!w.Lease.Exists && len(p.plan.TakeLeases) == 0) {
		return
	}
	state := w.Lease.State
	changed := false
	if p.plan.ReleaseLease != "" {
		var released bool
		state, released = wslease.Release(state, p.plan.ReleaseLease)
		changed = changed || released
	}
	live := func(c wslease.Claim) bool {
		alive, known := w.Lease.Live[c.Pod]
		return alive || !known
	}
	for _, req := range p.plan.TakeLeases {
		before := fmt.Sprint(state)
		state, _, _ = wslease.Take(state, wslease.Claim{Pod: req.Pod, Run: p.f.Run.Name, RunUID: string(p.f.Run.UID)}, p.f.Now, live)
		changed = changed || fmt.Sprint(state) != before
	}
	if changed {
		p.plan.LeaseWrite = &LeaseWrite{State: state}
	}
}
